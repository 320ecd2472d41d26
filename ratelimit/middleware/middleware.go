// Package middleware puts a ratelimit.Limiter in front of any http.Handler,
// driven by a policy file: every limited response carries the X-RateLimit-*
// fields, the IETF RateLimit-Policy and RateLimit fields, and, when denied,
// Retry-After with a 429 application/problem+json body (RFC 9457) naming the
// violated limit. A fail-closed rule whose store is down answers 503.
//
// NewAdmin is the inspection API of a limiter (health, top, info, reset) and
// its /metrics: a Prometheus registry (client_golang) fed from the limiter's
// counters by Collector, the one place where ratelimit meets Prometheus.
package middleware

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// Options configure a Middleware. The zero value is usable.
type Options struct {
	// Identify, when set, replaces the policy's header-based identity: a
	// library user can take the user, tenant and plan from its own session.
	// The client address should come from the policy's IdentityConfig.
	Identify func(r *http.Request, p *policy.Policy) policy.Identity
	// Logger receives denials at debug level; nil means slog.Default().
	Logger *slog.Logger
}

// Middleware limits HTTP requests by a policy. The policy may be replaced
// at any time (SetPolicy); requests in flight finish under the old one.
type Middleware struct {
	// results are reused across requests: a check writes into one.
	results sync.Pool
	// policyValues caches the RateLimit-Policy field by the limits it
	// describes (fingerprinted by the limits' values): a *limitEntry by
	// its ratelimit.Limit.
	policyValues sync.Map
	// lastLimit is the entry limitFields found last: a flood of one limit
	// finds it by comparing the limit, without hashing it into the map.
	lastLimit atomic.Pointer[limitEntry]
	limiter   *ratelimit.Limiter
	policy    atomic.Pointer[policy.Policy]
	identify  func(*http.Request, *policy.Policy) policy.Identity
	log       *slog.Logger
}

// New returns a middleware limiting by p through l.
func New(l *ratelimit.Limiter, p *policy.Policy, opts Options) *Middleware {
	m := &Middleware{limiter: l, identify: opts.Identify, log: opts.Logger}
	if m.identify == nil {
		m.identify = func(r *http.Request, p *policy.Policy) policy.Identity { return p.Identity.Identify(r) }
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	m.policy.Store(p)
	m.results.New = func() any { return &ratelimit.Result{Limits: make([]ratelimit.LimitResult, 0, 4)} }
	return m
}

// limitFields are res's RateLimit-Policy field and binding window, built
// once per distinct limit (the usual single-limit check); "" fields for
// several limits are built per request.
func (m *Middleware) limitFields(res *ratelimit.Result) limitFields {
	if len(res.Limits) != 1 {
		return limitFields{policy: PolicyValue(res.Limits)}
	}
	lim := res.Limits[0].Limit
	if e := m.lastLimit.Load(); e != nil && e.lim == lim {
		return e.fields
	}
	if v, ok := m.policyValues.Load(lim); ok {
		e := v.(*limitEntry)
		m.lastLimit.Store(e)
		return e.fields
	}
	e := &limitEntry{lim: lim, fields: limitFields{policy: PolicyValue(res.Limits), window: lim.Period.String()}}
	e.fields.denied = newDeniedParts(lim, e.fields.window, e.fields.policy)
	m.policyValues.Store(lim, e)
	m.lastLimit.Store(e)
	return e.fields
}

// limitEntry is one limit's cached limitFields.
type limitEntry struct {
	lim    ratelimit.Limit
	fields limitFields
}

// SetPolicy replaces the policy (a reload without restart).
func (m *Middleware) SetPolicy(p *policy.Policy) { m.policy.Store(p) }

// Policy returns the policy in force.
func (m *Middleware) Policy() *policy.Policy { return m.policy.Load() }

// Limiter returns the middleware's limiter.
func (m *Middleware) Limiter() *ratelimit.Limiter { return m.limiter }

// Handler wraps next: func(http.Handler) http.Handler.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := m.policy.Load()
		d, limited := p.Decide(r, m.identify(r, p))
		if !limited {
			next.ServeHTTP(w, r)
			return
		}
		res := m.results.Get().(*ratelimit.Result)
		defer m.results.Put(res)
		err := m.limiter.CheckInto(r.Context(), &d.Request, res)
		if err != nil {
			// An invalid request means a broken policy; never block traffic for it.
			m.log.Error("ratelimit: check failed", "rule", d.Rule.Name, "err", err)
			next.ServeHTTP(w, r)
			return
		}
		switch res.Source {
		case ratelimit.FromFailOpen:
			if r.Context().Err() != nil {
				// The check was cut short by the request's end, not by the
				// store: nothing decided, so nothing passes. net/http ends
				// the context when the client half-closes, yet the client
				// reads on: pipelined requests and a half-close must not
				// reach next uncounted. No made-up answer either (net/http
				// would send an empty 200): the connection is closed.
				panic(http.ErrAbortHandler)
			}
			next.ServeHTTP(w, r)
			return
		case ratelimit.FromFailClosed:
			writeUnavailable(w, r, res, d.Rule.Name)
			return
		}
		if d.Request.Shadow {
			// Shadow rules are invisible to clients: counted, never shown.
			next.ServeHTTP(w, r)
			return
		}
		if !res.Allowed && m.log.Enabled(r.Context(), slog.LevelDebug) {
			m.log.Debug("ratelimit: denied", "rule", d.Rule.Name, "key", d.Request.Key, "limit", res.Limit.DisplayName())
		}
		fields := m.limitFields(res)
		if fields.denied != nil && fastDenial(res) {
			writeFastDenial(w, r, res, d.Rule.Name, fields.policy, fields.denied)
			return
		}
		setHeaders(w.Header(), res, fields.policy)
		if !res.Allowed {
			window := fields.window
			if window == "" {
				window = res.Limit.Period.String()
			}
			writeDenial(w, r, res, d.Rule.Name, window)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Problem is the RFC 9457 body of a 429 or 503 answer. Its extension
// members follow the JSON rule of the admin API and the CLI: durations are
// seconds in _seconds members (the window as a number, not "15m0s").
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance,omitempty"`
	// Extensions.
	Rule   string `json:"rule,omitempty"`
	Policy string `json:"policy,omitempty"`
	Limit  int64  `json:"limit,omitempty"`
	// WindowSeconds is the period of the limit that denied.
	WindowSeconds float64 `json:"window_seconds,omitempty"`
	// RetryAfterSeconds is the Retry-After header's value.
	RetryAfterSeconds *int64 `json:"retry_after_seconds,omitempty"`
	Blocked           bool   `json:"blocked,omitempty"`
}

// WriteProblem answers 429 Too Many Requests with a problem+json body
// naming the limit that denied res. Headers are expected to be set already.
func WriteProblem(w http.ResponseWriter, r *http.Request, res *ratelimit.Result, rule string) {
	writeDenial(w, r, res, rule, res.Limit.Period.String())
}

func writeDenial(w http.ResponseWriter, r *http.Request, res *ratelimit.Result, rule, window string) {
	p := Problem{
		Type: problemTypeLimit, Title: "Too Many Requests", Status: http.StatusTooManyRequests,
		Instance: r.URL.Path, Rule: rule, Policy: res.Limit.DisplayName(), Limit: res.Limit.Capacity(),
		WindowSeconds: res.Limit.Period.Seconds(), Blocked: res.Blocked,
	}
	// The detail is built by appending (no fmt): a flood is answered here.
	d := make([]byte, 0, 128)
	d = append(d, "Limit "...)
	d = strconv.AppendQuote(d, p.Policy)
	d = append(d, " ("...)
	d = strconv.AppendInt(d, res.Limit.Rate, 10)
	d = append(d, " per "...)
	d = append(d, window...)
	secs := max(1, seconds(res.RetryAfter))
	switch {
	case res.RetryAfter < 0:
		d = append(d[:0], "The request costs more than limit "...)
		d = strconv.AppendQuote(d, p.Policy)
		d = append(d, " can ever allow ("...)
		d = strconv.AppendInt(d, res.Limit.Rate, 10)
		d = append(d, " per "...)
		d = append(d, window...)
		d = append(d, ")."...)
	case res.Blocked:
		p.RetryAfterSeconds = &secs
		d = append(d, ") was exceeded; requests are blocked for "...)
		d = strconv.AppendInt(d, secs, 10)
		d = append(d, " more seconds."...)
	default:
		p.RetryAfterSeconds = &secs
		d = append(d, ") is exhausted; retry in "...)
		d = strconv.AppendInt(d, secs, 10)
		d = append(d, " seconds."...)
	}
	p.Detail = string(d)
	writeProblemBody(w, &p)
}

func writeUnavailable(w http.ResponseWriter, r *http.Request, res *ratelimit.Result, rule string) {
	secs := max(1, seconds(res.RetryAfter))
	w.Header().Set(HeaderRetryAfter, strconv.FormatInt(secs, 10))
	writeJSON(w, Problem{
		Type: problemTypeClosed, Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail:   "The rate limiter cannot reach its store and this route fails closed; retry shortly.",
		Instance: r.URL.Path, Rule: rule, RetryAfterSeconds: &secs,
	})
}

func writeJSON(w http.ResponseWriter, p Problem) { writeProblemBody(w, &p) }

// limitFields are what the headers and problem body of one limit need that
// depend on the limit only.
type limitFields struct {
	policy, window string
	denied         *deniedParts // nil for several limits
}
