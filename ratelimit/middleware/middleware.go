// Package middleware puts a ratelimit.Limiter in front of any http.Handler,
// driven by a policy file: every limited response carries the X-RateLimit-*
// fields, the IETF RateLimit-Policy and RateLimit fields, and, when denied,
// Retry-After with a 429 application/problem+json body (RFC 9457) naming the
// violated limit. A fail-closed rule whose store is down answers 503.
package middleware

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
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
	limiter  *ratelimit.Limiter
	policy   atomic.Pointer[policy.Policy]
	identify func(*http.Request, *policy.Policy) policy.Identity
	log      *slog.Logger
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
	return m
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
		res, err := m.limiter.Check(r.Context(), d.Request)
		if err != nil {
			// An invalid request means a broken policy; never block traffic for it.
			m.log.Error("ratelimit: check failed", "rule", d.Rule.Name, "err", err)
			next.ServeHTTP(w, r)
			return
		}
		switch res.Source {
		case ratelimit.FromFailOpen:
			next.ServeHTTP(w, r)
			return
		case ratelimit.FromFailClosed:
			writeUnavailable(w, r, &res, d.Rule.Name)
			return
		}
		if d.Request.Shadow {
			// Shadow rules are invisible to clients: counted, never shown.
			next.ServeHTTP(w, r)
			return
		}
		SetHeaders(w.Header(), &res)
		if !res.Allowed {
			m.log.Debug("ratelimit: denied", "rule", d.Rule.Name, "key", d.Request.Key, "limit", res.Limit.DisplayName())
			WriteProblem(w, r, &res, d.Rule.Name)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Problem is the RFC 9457 body of a 429 or 503 answer.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance,omitempty"`
	// Extensions.
	Rule       string `json:"rule,omitempty"`
	Policy     string `json:"policy,omitempty"`
	Limit      int64  `json:"limit,omitempty"`
	Window     string `json:"window,omitempty"`
	RetryAfter *int64 `json:"retry_after,omitempty"`
	Blocked    bool   `json:"blocked,omitempty"`
}

// WriteProblem answers 429 Too Many Requests with a problem+json body
// naming the limit that denied res. Headers are expected to be set already.
func WriteProblem(w http.ResponseWriter, r *http.Request, res *ratelimit.Result, rule string) {
	p := Problem{
		Type: problemTypeLimit, Title: "Too Many Requests", Status: http.StatusTooManyRequests,
		Instance: r.URL.Path, Rule: rule, Policy: res.Limit.DisplayName(), Limit: res.Limit.Capacity(),
		Window: res.Limit.Period.String(), Blocked: res.Blocked,
	}
	switch {
	case res.RetryAfter < 0:
		p.Detail = fmt.Sprintf("The request costs more than limit %q can ever allow (%d per %v).", p.Policy, res.Limit.Rate, res.Limit.Period)
	case res.Blocked:
		secs := max(1, seconds(res.RetryAfter))
		p.RetryAfter = &secs
		p.Detail = fmt.Sprintf("Limit %q (%d per %v) was exceeded; requests are blocked for %d more seconds.", p.Policy, res.Limit.Rate, res.Limit.Period, secs)
	default:
		secs := max(1, seconds(res.RetryAfter))
		p.RetryAfter = &secs
		p.Detail = fmt.Sprintf("Limit %q (%d per %v) is exhausted; retry in %d seconds.", p.Policy, res.Limit.Rate, res.Limit.Period, secs)
	}
	writeJSON(w, p)
}

func writeUnavailable(w http.ResponseWriter, r *http.Request, res *ratelimit.Result, rule string) {
	secs := max(1, seconds(res.RetryAfter))
	w.Header().Set(HeaderRetryAfter, strconv.FormatInt(secs, 10))
	writeJSON(w, Problem{
		Type: problemTypeClosed, Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail:   "The rate limiter cannot reach its store and this route fails closed; retry shortly.",
		Instance: r.URL.Path, Rule: rule, RetryAfter: &secs,
	})
}

func writeJSON(w http.ResponseWriter, p Problem) {
	body, _ := json.Marshal(p)
	w.Header().Set("Content-Type", problemJSON)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(p.Status)
	w.Write(append(body, '\n'))
}
