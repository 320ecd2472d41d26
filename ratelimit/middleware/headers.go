package middleware

import (
	"math"
	"net/http"
	"strconv"
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

// The header names as http.Header keys (canonical form), set directly so
// that no request pays for canonicalizing them.
const (
	keyLimit      = "X-Ratelimit-Limit"
	keyRemaining  = "X-Ratelimit-Remaining"
	keyReset      = "X-Ratelimit-Reset"
	keyPolicy     = "Ratelimit-Policy"
	keyRateLimit  = "Ratelimit"
	keyRetryAfter = "Retry-After"
)

// SetHeaders writes the rate-limit fields of res on h: the X-RateLimit-*
// trio for the binding limit, and the IETF RateLimit-Policy and RateLimit
// fields (draft-ietf-httpapi-ratelimit-headers, structured-field lists)
// with one item per limit. Retry-After is added for a denial.
func SetHeaders(h http.Header, res *ratelimit.Result) {
	setHeaders(h, res, "")
}

// setHeaders is SetHeaders with the RateLimit-Policy value already known
// (it depends on the limits only), or "" to build it.
func setHeaders(h http.Header, res *ratelimit.Result, policyValue string) {
	// One backing array for every value: one allocation instead of six.
	vals := make([]string, 6)
	var num [20]byte
	vals[0] = string(strconv.AppendInt(num[:0], res.Limit.Capacity(), 10))
	vals[1] = string(strconv.AppendInt(num[:0], max(0, res.Remaining), 10))
	vals[2] = string(strconv.AppendInt(num[:0], seconds(res.ResetAfter), 10))
	h[keyLimit], h[keyRemaining], h[keyReset] = vals[0:1:1], vals[1:2:2], vals[2:3:3]
	if len(res.Limits) > 0 {
		if policyValue == "" {
			policyValue = PolicyValue(res.Limits)
		}
		vals[3] = policyValue
		h[keyPolicy] = vals[3:4:4]
		b := make([]byte, 0, 48*len(res.Limits))
		for i := range res.Limits {
			lr := &res.Limits[i]
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendSFString(b, lr.Limit.DisplayName())
			b = append(b, ";r="...)
			b = strconv.AppendInt(b, max(0, lr.Remaining), 10)
			b = append(b, ";t="...)
			b = strconv.AppendInt(b, seconds(lr.ResetAfter), 10)
		}
		vals[4] = string(b)
		h[keyRateLimit] = vals[4:5:5]
	}
	if res.Denied() && res.RetryAfter >= 0 {
		vals[5] = string(strconv.AppendInt(num[:0], max(1, seconds(res.RetryAfter)), 10))
		h[keyRetryAfter] = vals[5:6:6]
	}
}

// PolicyValue is the RateLimit-Policy field of a set of limits: it depends
// on the limits only, so callers may keep it.
func PolicyValue(limits []ratelimit.LimitResult) string {
	b := make([]byte, 0, 40*len(limits))
	for i := range limits {
		l := &limits[i].Limit
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendSFString(b, l.DisplayName())
		b = append(b, ";q="...)
		b = strconv.AppendInt(b, l.Capacity(), 10)
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, max(1, seconds(quotaWindow(*l))), 10)
	}
	return string(b)
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

// appendSFString appends s as a structured-field String (RFC 8941
// §3.3.3): quoted, with \ and " escaped, and any non-printable-ASCII byte
// replaced.
func appendSFString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c > 0x7e:
			b = append(b, '?')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
