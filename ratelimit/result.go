package ratelimit

import (
	"fmt"
	"time"
)

// Source says what decided a Result.
type Source uint8

const (
	// FromStore: the store answered.
	FromStore Source = iota
	// FromBlockedCache: the in-process cache knew the identity was blocked.
	FromBlockedCache
	// FromFailOpen: the store failed and the failure policy let the request in.
	FromFailOpen
	// FromFailClosed: the store failed and the failure policy refused it.
	FromFailClosed
)

var sourceNames = [...]string{"store", "blocked-cache", "fail-open", "fail-closed"}

// String returns the source's name, as in metrics and JSON.
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "unknown"
}

// MarshalText implements encoding.TextMarshaler.
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Result is the overall outcome of a check. Its scalar fields describe the
// binding limit: the one that denied, or, when all allowed, the one with the
// least remaining.
type Result struct {
	// Allowed reports whether the request may proceed. In shadow mode it is
	// true even when a limit denied; see Shadowed.
	Allowed bool `json:"allowed"`
	// Shadowed reports a denial that shadow mode let through.
	Shadowed bool  `json:"shadowed,omitempty"`
	Limit    Limit `json:"-"`
	// Remaining, ResetAfter, RetryAfter and Blocked are those of Limit.
	Remaining  int64         `json:"remaining"`
	ResetAfter time.Duration `json:"reset_after_seconds"`
	RetryAfter time.Duration `json:"retry_after_seconds"`
	Blocked    bool          `json:"blocked"`
	// Limits holds one result per limit, in the order of the request. It is
	// empty when the failure policy decided.
	Limits []LimitResult `json:"limits,omitempty"`
	// Source says who decided; Err is the store error behind a
	// failure-policy decision.
	Source Source `json:"source"`
	Err    error  `json:"-"`

	binding int // index in Limits of the limit the scalar fields describe
}

// Denied reports whether a limit (or the failure policy) refused the
// request, whether or not shadow mode let it through.
func (r *Result) Denied() bool { return !r.Allowed || r.Shadowed }

// Denial is nil when the request may proceed (shadowed denials included),
// else an error wrapping ErrLimited that names the binding limit and when
// to retry: for callers that handle a denial as an error.
func (r *Result) Denial() error {
	if r.Allowed {
		return nil
	}
	if r.Source == FromFailClosed {
		return fmt.Errorf("%w: the store could not answer and the policy fails closed: %w", ErrLimited, r.Err)
	}
	if r.RetryAfter < 0 {
		return fmt.Errorf("%w: limit %s: the cost exceeds its capacity", ErrLimited, r.Limit.DisplayName())
	}
	return fmt.Errorf("%w: limit %s: retry after %v", ErrLimited, r.Limit.DisplayName(), r.RetryAfter)
}

// bindingIndex is the index in Limits of the limit the scalar fields describe.
func (r *Result) bindingIndex() int { return r.binding }

// summarize fills the scalar fields of r from r.Limits.
func (r *Result) summarize() {
	r.Allowed = true
	binding := -1
	for i := range r.Limits {
		lr := &r.Limits[i]
		switch {
		case !lr.Allowed:
			// The denial that lasts longest binds: it is when the request can pass.
			if r.Allowed || lr.RetryAfter < 0 || (r.RetryAfter >= 0 && lr.RetryAfter > r.RetryAfter) {
				binding = i
				r.RetryAfter = lr.RetryAfter
			}
			r.Allowed = false
		case r.Allowed && (binding < 0 || lr.Remaining < r.Limits[binding].Remaining):
			binding = i
		}
	}
	r.binding = max(binding, 0)
	if binding < 0 {
		return
	}
	b := &r.Limits[binding]
	r.Limit, r.Remaining, r.ResetAfter, r.RetryAfter, r.Blocked = b.Limit, b.Remaining, b.ResetAfter, b.RetryAfter, b.Blocked
}
