package algo

import (
	"time"

	"github.com/devkit-go/devkit/ratelimit"
)

// ParamsOf converts a public Limit into the units of the algorithms.
func ParamsOf(l ratelimit.Limit) Params {
	return Params{
		Algorithm: uint8(l.Algorithm),
		Rate:      float64(l.Rate),
		Period:    float64(l.Period / time.Microsecond),
		Capacity:  float64(l.Capacity()),
		Block:     float64(l.Block / time.Microsecond),
	}
}

// Micros converts whole microseconds (-1 = never) into a Duration.
func Micros(us float64) time.Duration {
	if us < 0 {
		return -1
	}
	return time.Duration(us) * time.Microsecond
}

// Apply copies an outcome into a public LimitResult.
func Apply(o *Outcome, l ratelimit.Limit, out *ratelimit.LimitResult) {
	*out = ratelimit.LimitResult{
		Limit: l, Allowed: o.Allowed, Remaining: o.Remaining, Blocked: o.Blocked,
		ResetAfter: Micros(o.ResetAfter), RetryAfter: Micros(o.RetryAfter),
	}
	if o.Allowed {
		out.RetryAfter = 0
	}
}
