package ratelimit

// A decision is always made within the latency budget: the store call runs
// under a deadline of Options.Budget, and once the store has failed the
// limiter answers from the failure policy without calling it again until the
// back-off has passed. No path panics or blocks on a dead store.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// FailurePolicy decides requests when the store cannot answer in time.
type FailurePolicy uint8

const (
	// FailDefault defers to the limiter's policy (for a Request) or means
	// FailOpen (for Options).
	FailDefault FailurePolicy = iota
	// FailOpen lets requests through: availability over strictness.
	FailOpen
	// FailClosed refuses requests: strictness over availability (auth flows).
	FailClosed
)

// String returns "open", "closed" or "default".
func (f FailurePolicy) String() string {
	switch f {
	case FailOpen:
		return "open"
	case FailClosed:
		return "closed"
	}
	return "default"
}

// ParseFailurePolicy parses "open" or "closed".
func ParseFailurePolicy(s string) (FailurePolicy, error) {
	switch s {
	case "open":
		return FailOpen, nil
	case "closed":
		return FailClosed, nil
	}
	return 0, fmt.Errorf("unknown failure policy %q (want open or closed)", s)
}

// Defaults of Options.
const (
	DefaultBudget  = 50 * time.Millisecond
	DefaultBackoff = 500 * time.Millisecond
)

// Options configure a Limiter. The zero value (with a Store) is usable.
type Options struct {
	// Fail is the failure policy of every request that does not set its
	// own. Zero means FailOpen.
	Fail FailurePolicy
	// Budget bounds the time a decision may take, store included. Zero
	// means DefaultBudget.
	Budget time.Duration
	// Backoff is how long the limiter stops calling a store that failed.
	// Zero means DefaultBackoff; negative disables it.
	Backoff time.Duration
	// BlockedCacheSize, when positive, keeps up to that many identities
	// known to be denied until a time in process, so that a flood from them
	// does not reach the store.
	BlockedCacheSize int
	// Logger receives store errors (rate limited to one per back-off).
	// Nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of the blocked cache and back-off. Nil means time.Now.
	Now func() time.Time
}

// Limiter checks requests against limits held in a Store. It is safe for
// concurrent use.
type Limiter struct {
	store   Store
	fail    FailurePolicy
	budget  time.Duration
	backoff time.Duration
	log     *slog.Logger
	now     func() time.Time
	// customClock is set when Options.Now was given; otherwise the
	// decision's start time serves as now.
	customClock bool
	// local is the store when it never blocks (InProcess), else nil.
	local   InProcess
	blocked *blockedCache
	stats   *Stats
	// downUntil is the UnixNano until which the store is considered down.
	downUntil atomic.Int64
}

// New returns a limiter over store.
func New(store Store, opts Options) *Limiter {
	l := &Limiter{
		store:   store,
		fail:    opts.Fail,
		budget:  opts.Budget,
		backoff: opts.Backoff,
		log:     opts.Logger,
		now:     opts.Now,
		stats:   newStats(),
	}
	if l.fail == FailDefault {
		l.fail = FailOpen
	}
	if l.budget <= 0 {
		l.budget = DefaultBudget
	}
	if l.backoff == 0 {
		l.backoff = DefaultBackoff
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	l.customClock = l.now != nil
	if l.now == nil {
		l.now = time.Now
	}
	l.local, _ = store.(InProcess)
	if opts.BlockedCacheSize > 0 {
		l.blocked = newBlockedCache(opts.BlockedCacheSize)
	}
	return l
}

// Request is one check of one identity against one or several limits.
type Request struct {
	// Key identifies who is limited (an IP, a user, a tenant and route...).
	Key string
	// Limits are checked together, all-or-nothing.
	Limits []Limit
	// Cost is what the request spends; zero means 1. Use Peek to look
	// without spending.
	Cost int64
	// Rule names the request's rule in statistics; empty means "default".
	Rule string
	// Shadow lets the request through even when denied, counting the denial.
	Shadow bool
	// Fail overrides the limiter's failure policy.
	Fail FailurePolicy
}

// Allow checks one request of cost 1 against limits.
func (l *Limiter) Allow(ctx context.Context, key string, limits ...Limit) (Result, error) {
	return l.Check(ctx, Request{Key: key, Limits: limits, Cost: 1})
}

// AllowN checks one request of cost n against limits.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64, limits ...Limit) (Result, error) {
	return l.Check(ctx, Request{Key: key, Limits: limits, Cost: n})
}

// Peek reports the state of key under limits without spending anything and
// without failure-policy substitution: a store error is returned.
func (l *Limiter) Peek(ctx context.Context, key string, limits ...Limit) (Result, error) {
	if err := validate(limits, 0); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, l.budget)
	defer cancel()
	res := Result{Limits: make([]LimitResult, len(limits))}
	if err := l.store.Check(ctx, CheckRequest{Key: key, Limits: limits}, res.Limits); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	res.summarize()
	return res, nil
}

func validate(limits []Limit, cost int64) error {
	if len(limits) == 0 {
		return ErrNoLimits
	}
	if len(limits) > MaxLimits {
		return fmt.Errorf("%w: %d > %d", ErrTooManyLimits, len(limits), MaxLimits)
	}
	if cost < 0 {
		return fmt.Errorf("ratelimit: negative cost %d", cost)
	}
	for _, lim := range limits {
		if err := lim.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Check decides req. The error is non-nil only for an invalid request;
// store failures are decided by the failure policy and reported in
// Result.Source and Result.Err.
func (l *Limiter) Check(ctx context.Context, req Request) (Result, error) {
	var res Result
	err := l.CheckInto(ctx, &req, &res)
	return res, err
}

// CheckInto is Check writing into res, reusing the capacity of res.Limits:
// a caller that keeps one Result per goroutine checks without allocating.
func (l *Limiter) CheckInto(ctx context.Context, req *Request, res *Result) error {
	cost := req.Cost
	if cost == 0 {
		cost = 1
	}
	if err := validate(req.Limits, cost); err != nil {
		return err
	}
	start := time.Now()
	rs := l.stats.rule(req.Rule)
	l.decide(ctx, req, cost, start, res, rs)
	if !res.Allowed && req.Shadow {
		res.Allowed, res.Shadowed = true, true
	}
	rs.record(res, time.Since(start))
	return nil
}

func (l *Limiter) decide(ctx context.Context, req *Request, cost int64, start time.Time, res *Result, rs *ruleStats) {
	limits := res.Limits[:0]
	*res = Result{}
	now := start
	if l.customClock {
		now = l.now()
	}
	var fingerprint uint64
	if l.blocked != nil {
		fingerprint = limitsFingerprint(req.Limits)
		if until, binding, ok := l.blocked.get(req.Key, fingerprint, cost, now); ok && binding < len(req.Limits) {
			// The limit that holds the block is reported as the store would,
			// so the answer carries the same headers (RateLimit included).
			wait := until.Sub(now)
			lim := req.Limits[binding]
			*res = Result{Limit: lim, RetryAfter: wait, ResetAfter: wait, Blocked: true, Source: FromBlockedCache,
				Limits: append(limits, LimitResult{Limit: lim, ResetAfter: wait, RetryAfter: wait, Blocked: true})}
			return
		}
	}
	if l.backoff > 0 && now.UnixNano() < l.downUntil.Load() {
		l.failureDecision(req, errStoreBackingOff, res)
		return
	}
	if cap(limits) < len(req.Limits) {
		limits = make([]LimitResult, len(req.Limits))
	}
	res.Limits = limits[:len(req.Limits)]
	var err error
	if local := l.local; local != nil {
		// An in-process store never blocks: no deadline to arm.
		err = local.CheckAt(ctx, CheckRequest{Key: req.Key, Limits: req.Limits, Cost: cost}, now, res.Limits)
	} else {
		tctx, cancel := context.WithTimeout(ctx, l.budget)
		err = l.store.Check(tctx, CheckRequest{Key: req.Key, Limits: req.Limits, Cost: cost}, res.Limits)
		cancel()
	}
	if err != nil {
		rs.storeErrors.Add(1)
		if l.backoff > 0 && !errors.Is(err, context.Canceled) {
			// Log once per back-off period, not once per request.
			if prev := l.downUntil.Swap(now.Add(l.backoff).UnixNano()); prev <= now.UnixNano() {
				l.log.Warn("ratelimit: store failed; deciding by failure policy", "err", err, "backoff", l.backoff)
			}
		}
		l.failureDecision(req, err, res)
		return
	}
	res.summarize()
	if !res.Allowed && l.blocked != nil && res.RetryAfter > 0 {
		l.blocked.put(req.Key, fingerprint, res.bindingIndex(), cost, now.Add(res.RetryAfter), now)
	}
}

var errStoreBackingOff = errors.New("store failed recently; backing off")

func (l *Limiter) failureDecision(req *Request, err error, res *Result) {
	policy := req.Fail
	if policy == FailDefault {
		policy = l.fail
	}
	*res = Result{Limit: req.Limits[0], Err: fmt.Errorf("%w: %w", ErrStoreUnavailable, err)}
	if policy == FailClosed {
		res.Source = FromFailClosed
		res.RetryAfter = max(l.backoff, time.Second)
		return
	}
	res.Allowed, res.Source = true, FromFailOpen
	res.Remaining = req.Limits[0].Capacity()
}

// Reset deletes all state of key, in the store and in the blocked cache,
// and reports whether the store had any.
func (l *Limiter) Reset(ctx context.Context, key string) (bool, error) {
	if l.blocked != nil {
		l.blocked.delete(key)
	}
	return l.store.Reset(ctx, key)
}

// Top lists up to n identities with the most hits.
func (l *Limiter) Top(ctx context.Context, n int) ([]Consumer, error) { return l.store.Top(ctx, n) }

// Health pings the store and reports the round-trip time.
func (l *Limiter) Health(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	err := l.store.Ping(ctx)
	return time.Since(start), err
}

// Stats returns the limiter's counters.
func (l *Limiter) Stats() *Stats { return l.stats }

// Store returns the limiter's store.
func (l *Limiter) Store() Store { return l.store }
