package middleware

// The denial of a single-limit check — what a flood is answered with — is
// written from parts rendered once per limit (deniedParts): the headers'
// constant values and the problem body around its few variable fields, with
// one backing array for every header value, small numbers from a table, and
// the body appended into one buffer. It writes the same bytes as
// setHeaders + writeDenial (TestDenial_FastPathSameAsGeneral).

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/devkit-go/devkit/ratelimit"
)

// smallInts spells 0..len-1: header values (seconds up to an hour and more,
// counts, body lengths) without an allocation. Read only.
var smallInts = func() (t [4096]string) {
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

// itoa is strconv.FormatInt(n, 10), from smallInts when it can.
func itoa(n int64) string {
	if n >= 0 && n < int64(len(smallInts)) {
		return smallInts[n]
	}
	return strconv.FormatInt(n, 10)
}

// deniedParts are the pieces of a single-limit denial that depend on the
// limit only.
type deniedParts struct {
	capacity string // X-RateLimit-Limit
	// rateLimitHead is the RateLimit field up to its remaining count:
	// `"name";r=`.
	rateLimitHead string
	// detailHead is the problem body up to the detail's variable part:
	// `{"type":…,"detail":"Limit \"name\" (5 per 15m0s)` (JSON-escaped).
	detailHead []byte
	// tail is `,"policy":…,"limit":N,"window_seconds":S`.
	tail []byte
	// fields are the header fields that depend on the limit only, rendered
	// for a RawWriter: X-RateLimit-Limit, RateLimit-Policy, Content-Type.
	fields []byte
}

// RawWriter is implemented by a ResponseWriter that takes header fields
// already rendered (a server of its own): a denial's fields are
// then rendered once per limit, not assembled in a header map per request.
// WriteRaw answers status with the fields set on Header() (if any), then
// fields (lines "Name: value\r\n", valid as they are), a Content-Length
// of len(body), and body.
type RawWriter interface {
	WriteRaw(status int, fields, body []byte) error
}

// rawBuffers hold a raw denial while it is written (the writer copies it).
var rawBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// newDeniedParts renders lim's parts; window and policy are its
// limitFields (Period.String() and its RateLimit-Policy value).
func newDeniedParts(lim ratelimit.Limit, window, policy string) *deniedParts {
	name := lim.DisplayName()
	d := &deniedParts{capacity: strconv.FormatInt(lim.Capacity(), 10)}
	d.rateLimitHead = string(append(appendSFString(nil, name), ";r="...))
	head := append([]byte(`{"type":`), appendJSONString(nil, problemTypeLimit)...)
	head = append(head, `,"title":`...)
	head = appendJSONString(head, "Too Many Requests")
	head = append(head, `,"status":429,"detail":`...)
	detail := append([]byte("Limit "), strconv.Quote(name)...)
	detail = append(detail, " ("...)
	detail = strconv.AppendInt(detail, lim.Rate, 10)
	detail = append(detail, " per "...)
	detail = append(detail, window...)
	head = appendJSONString(head, string(detail))
	d.detailHead = head[:len(head)-1] // the detail goes on
	tail := append([]byte(`,"policy":`), appendJSONString(nil, name)...)
	if c := lim.Capacity(); c != 0 {
		tail = append(tail, `,"limit":`...)
		tail = strconv.AppendInt(tail, c, 10)
	}
	if s := lim.Period.Seconds(); s != 0 {
		tail = append(tail, `,"window_seconds":`...)
		tail = appendJSONFloat(tail, s)
	}
	d.tail = tail
	f := append([]byte(keyLimit+": "), d.capacity...)
	f = append(f, "\r\n"+keyPolicy+": "...)
	f = append(f, policy...)
	f = append(f, "\r\nContent-Type: "+problemJSON+"\r\n"...)
	d.fields = f
	return d
}

// fastDenial reports whether writeFastDenial can answer res: one limit,
// binding, denied, with a wait (not "never").
func fastDenial(res *ratelimit.Result) bool {
	return len(res.Limits) == 1 && !res.Allowed && res.RetryAfter >= 0 && res.Limit == res.Limits[0].Limit && res.Limit.Name != ""
}

// writeFastDenial answers a denial that fastDenial accepts: the headers of
// setHeaders and the body of writeDenial, policyValue being the limit's
// RateLimit-Policy field.
func writeFastDenial(w http.ResponseWriter, r *http.Request, res *ratelimit.Result, rule, policyValue string, d *deniedParts) {
	lr := &res.Limits[0]
	secs := max(1, seconds(res.RetryAfter))
	if rw, ok := w.(RawWriter); ok {
		buf := rawBuffers.Get().(*[]byte)
		b := append((*buf)[:0], d.fields...)
		b = append(b, keyRemaining+": "...)
		b = strconv.AppendInt(b, max(0, res.Remaining), 10)
		b = append(b, "\r\n"+keyReset+": "...)
		b = strconv.AppendInt(b, seconds(res.ResetAfter), 10)
		b = append(b, "\r\n"+keyRateLimit+": "...)
		b = appendRateLimit(b, d, lr)
		b = append(b, "\r\n"+keyRetryAfter+": "...)
		b = strconv.AppendInt(b, secs, 10)
		b = append(b, "\r\n"...)
		n := len(b)
		b = appendDenialBody(b, d, r, res, rule, secs)
		_ = rw.WriteRaw(http.StatusTooManyRequests, b[:n], b[n:]) // a failed write means the client left
		*buf = b
		rawBuffers.Put(buf)
		return
	}
	// The body is built in a pooled buffer (Write copies it: io.Writer
	// never keeps p), the largest allocation a denial had.
	buf := rawBuffers.Get().(*[]byte)
	body := appendDenialBody((*buf)[:0], d, r, res, rule, secs)

	// The RateLimit field is rendered on the stack and copied once into
	// its string; the numbers come from smallInts.
	var tmp [96]byte
	rl := appendRateLimit(tmp[:0], d, lr)
	vals := make([]string, 8)
	vals[0] = d.capacity
	vals[1] = itoa(max(0, res.Remaining))
	vals[2] = itoa(seconds(res.ResetAfter))
	vals[3] = policyValue
	vals[4] = string(rl)
	vals[5] = itoa(secs)
	vals[6] = problemJSON
	vals[7] = itoa(int64(len(body)))
	h := w.Header()
	h[keyLimit], h[keyRemaining], h[keyReset] = vals[0:1:1], vals[1:2:2], vals[2:3:3]
	h[keyPolicy], h[keyRateLimit], h[keyRetryAfter] = vals[3:4:4], vals[4:5:5], vals[5:6:6]
	h["Content-Type"], h["Content-Length"] = vals[6:7:7], vals[7:8:8]
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body) // the status is sent; a failed write means the client left
	*buf = body
	rawBuffers.Put(buf)
}

// appendRateLimit appends the RateLimit field's value: `"name";r=R;t=T`.
func appendRateLimit(b []byte, d *deniedParts, lr *ratelimit.LimitResult) []byte {
	b = append(b, d.rateLimitHead...)
	b = strconv.AppendInt(b, max(0, lr.Remaining), 10)
	b = append(b, ";t="...)
	return strconv.AppendInt(b, seconds(lr.ResetAfter), 10)
}

// appendDenialBody appends the problem+json body of a fast denial.
func appendDenialBody(body []byte, d *deniedParts, r *http.Request, res *ratelimit.Result, rule string, secs int64) []byte {
	body = append(body, d.detailHead...)
	if res.Blocked {
		body = append(body, ") was exceeded; requests are blocked for "...)
		body = strconv.AppendInt(body, secs, 10)
		body = append(body, ` more seconds."`...)
	} else {
		body = append(body, ") is exhausted; retry in "...)
		body = strconv.AppendInt(body, secs, 10)
		body = append(body, ` seconds."`...)
	}
	if p := r.URL.Path; p != "" {
		body = append(body, `,"instance":`...)
		body = appendJSONString(body, p)
	}
	if rule != "" {
		body = append(body, `,"rule":`...)
		body = appendJSONString(body, rule)
	}
	body = append(body, d.tail...)
	body = append(body, `,"retry_after_seconds":`...)
	body = strconv.AppendInt(body, secs, 10)
	if res.Blocked {
		body = append(body, `,"blocked":true`...)
	}
	return append(body, '}', '\n')
}
