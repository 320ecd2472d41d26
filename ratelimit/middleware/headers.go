package middleware

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
)

// Header names set on every limited response.
const (
	HeaderLimit     = "X-RateLimit-Limit"
	HeaderRemaining = "X-RateLimit-Remaining"
	// HeaderReset is the number of seconds (rounded up) until the binding
	// limit is back to full capacity: a delta, like Retry-After and the
	// IETF fields, so client and server clocks never need to agree.
	HeaderReset       = "X-RateLimit-Reset"
	HeaderPolicy      = "RateLimit-Policy"
	HeaderRateLimit   = "RateLimit"
	HeaderRetryAfter  = "Retry-After"
	problemJSON       = "application/problem+json"
	problemTypeLimit  = "https://github.com/devkit-go/devkit/blob/main/docs/ratelimit.md#429-too-many-requests"
	problemTypeClosed = "https://github.com/devkit-go/devkit/blob/main/docs/ratelimit.md#503-rate-limiter-unavailable"
)

// seconds rounds a duration up to whole seconds.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}

// SetHeaders writes the rate-limit fields of res on h: the X-RateLimit-*
// trio for the binding limit, and the IETF RateLimit-Policy and RateLimit
// fields (draft-ietf-httpapi-ratelimit-headers, structured-field lists)
// with one item per limit. Retry-After is added for a denial.
func SetHeaders(h http.Header, res *ratelimit.Result) {
	h.Set(HeaderLimit, strconv.FormatInt(res.Limit.Capacity(), 10))
	h.Set(HeaderRemaining, strconv.FormatInt(max(0, res.Remaining), 10))
	h.Set(HeaderReset, strconv.FormatInt(seconds(res.ResetAfter), 10))
	if len(res.Limits) > 0 {
		var pol, state strings.Builder
		for i := range res.Limits {
			lr := &res.Limits[i]
			if i > 0 {
				pol.WriteString(", ")
				state.WriteString(", ")
			}
			name := sfString(lr.Limit.DisplayName())
			pol.WriteString(name)
			pol.WriteString(";q=")
			pol.WriteString(strconv.FormatInt(lr.Limit.Capacity(), 10))
			pol.WriteString(";w=")
			pol.WriteString(strconv.FormatInt(max(1, seconds(quotaWindow(lr.Limit))), 10))
			state.WriteString(name)
			state.WriteString(";r=")
			state.WriteString(strconv.FormatInt(max(0, lr.Remaining), 10))
			state.WriteString(";t=")
			state.WriteString(strconv.FormatInt(seconds(lr.ResetAfter), 10))
		}
		h.Set(HeaderPolicy, pol.String())
		h.Set(HeaderRateLimit, state.String())
	}
	if res.Denied() && res.RetryAfter >= 0 {
		h.Set(HeaderRetryAfter, strconv.FormatInt(max(1, seconds(res.RetryAfter)), 10))
	}
}

// quotaWindow is the time over which a limit grants its quota (capacity):
// the window for the window algorithms, the time to refill a full burst for
// the bucket algorithms.
func quotaWindow(l ratelimit.Limit) time.Duration {
	switch l.Algorithm {
	case ratelimit.TokenBucket, ratelimit.GCRA:
		return time.Duration(float64(l.Period) * float64(l.Capacity()) / float64(l.Rate))
	}
	return l.Period
}

// sfString renders s as a structured-field String (RFC 8941 §3.3.3):
// quoted, with \ and " escaped, and any non-printable-ASCII byte replaced.
func sfString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
