package ratelimit

// A decision is made by the store whenever the store answers: a store call
// is decided by the failure policy for that check only when its node has
// answered nothing for a whole latency budget (it stalled), or when the call
// outlives the longest wait (deadline.go); a busy machine that merely makes
// answers late never hands them to the failure policy. Only a node's circuit breaker
// (breaker.go), opened by real failures, decides for other identities, and
// only for those the failed node holds. No path panics or blocks on a dead
// store.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devkit-go/devkit/ratelimit/internal/topk"
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

// Defaults of Options. DefaultBudget is the silence after which a store
// node counts as stalled, the breakers' stall window too: a healthy Redis
// under a 200-client burst on a 2-core machine at load 14–18 can look
// silent for over 500 ms from inside the starved gateway process (which
// then decided some checks by the failure policy), never for a second.
// DefaultMaxWait is above the slowest answer of such a burst with the
// machine busier still (1.9 s at load 17 with CPU burners): a check waits
// that long for a store that answers, and no longer.
const (
	DefaultBudget  = time.Second
	DefaultMaxWait = 3 * time.Second
	DefaultBackoff = 500 * time.Millisecond
)

// Options configure a Limiter. The zero value (with a Store) is usable.
type Options struct {
	// Fail is the failure policy of every request that does not set its
	// own. Zero means FailOpen.
	Fail FailurePolicy
	// Budget is how long a store node may answer nothing before the checks
	// waiting on it are decided by the failure policy. Zero means
	// DefaultBudget.
	Budget time.Duration
	// MaxWait bounds the time a check waits for a node that does answer
	// (a busy machine, a slow store); it is at least the budget. Zero
	// means DefaultMaxWait; a MaxWait equal to the budget makes the budget
	// a plain deadline on every store call.
	MaxWait time.Duration
	// Backoff is how long an open circuit breaker refuses calls to its
	// store node before it lets one probe through. Zero means
	// DefaultBackoff; negative disables the breakers.
	Backoff time.Duration
	// BreakerFailures is the number of consecutive errors from a store node
	// (or of timeouts spanning a second without any answer) that opens its
	// breaker. Zero means DefaultBreakerFailures.
	BreakerFailures int
	// BlockedCacheSize, when positive, keeps up to that many identities
	// known to be denied until a time in process, so that a flood from them
	// does not reach the store.
	BlockedCacheSize int
	// DeniedSketchSize is how many identities the heavy-hitters sketch of
	// denials holds (TopDenied). Zero means DefaultDeniedSketchSize;
	// negative keeps none.
	DeniedSketchSize int
	// Logger receives breaker changes (a node opening and closing).
	// Nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of the blocked cache, the breakers' back-off and
	// the time handed to an in-process store; nil is the process clock
	// (see Clock for the one rule of every Now).
	Now Clock
}

// Limiter checks requests against limits held in a Store. It is safe for
// concurrent use.
type Limiter struct {
	store   Store
	fail    FailurePolicy
	budget  time.Duration
	maxWait time.Duration
	backoff time.Duration
	log     *slog.Logger
	now     Clock
	// customClock is set when Options.Now was given; otherwise the
	// decision's start time serves as now.
	customClock bool
	// local is the store when it never blocks (InProcess), else nil.
	local   InProcess
	blocked *blockedCache
	stats   *Stats
	// breakers are the store nodes' circuit breakers; nil when disabled.
	breakers *breakers
	// nodes is the store when it spreads keys over nodes, else nil.
	nodes Partitioned
	// deadlines bound store calls by the budget and the longest wait
	// (deadline.go).
	deadlines sharedDeadlines
	// answers are when each store node last answered: the single node's
	// (answered), or by node name for a Partitioned store.
	answered    nodeAnswers
	nodeAnswers sync.Map // string → *nodeAnswers
	// failures rate-limits the log line of failure-policy decisions.
	failures failureLog
	// denied ranks the identities denied most (nil when off).
	denied *topk.Sketch
}

// DefaultDeniedSketchSize is the default of Options.DeniedSketchSize: a
// bounded memory (about 100 KB with short keys) that holds every identity
// with more than 1/1024 of the denials.
const DefaultDeniedSketchSize = 1024

// New returns a limiter over store.
func New(store Store, opts Options) *Limiter {
	l := &Limiter{
		store:   store,
		fail:    opts.Fail,
		budget:  opts.Budget,
		maxWait: opts.MaxWait,
		backoff: opts.Backoff,
		log:     opts.Logger,
		now:     opts.Now,
		stats:   newStats(),
	}
	switch {
	case opts.DeniedSketchSize == 0:
		l.denied = topk.New(DefaultDeniedSketchSize)
	case opts.DeniedSketchSize > 0:
		l.denied = topk.New(opts.DeniedSketchSize)
	}
	if l.fail == FailDefault {
		l.fail = FailOpen
	}
	if l.budget <= 0 {
		l.budget = DefaultBudget
	}
	if l.maxWait <= 0 {
		l.maxWait = DefaultMaxWait
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
	if l.backoff > 0 && l.local == nil {
		threshold := opts.BreakerFailures
		if threshold <= 0 {
			threshold = DefaultBreakerFailures
		}
		l.breakers = &breakers{threshold: threshold, openFor: l.backoff, onChange: func(node string, open bool, err error) {
			if open {
				l.log.Warn("ratelimit: store node failing; its identities are decided by the failure policy",
					"node", node, "err", err, "backoff", l.backoff)
			} else {
				l.log.Info("ratelimit: store node answers again", "node", node)
			}
		}}
	}
	if l.local == nil {
		l.nodes, _ = store.(Partitioned)
	}
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
	// Budget overrides the limiter's latency budget (a reloaded policy's
	// defaults.budget applies to the next request). Zero means the limiter's.
	Budget time.Duration
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
	if !res.Allowed && l.denied != nil && (res.Source == FromStore || res.Source == FromBlockedCache) {
		l.denied.Add(req.Key, 1)
	}
	if !res.Allowed && req.Shadow {
		res.Allowed, res.Shadowed = true, true
	}
	if res.Denied() {
		rs.deniedRate.add(start.Unix())
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
	var fingerprint, epoch uint64
	if l.blocked != nil {
		fingerprint = limitsFingerprint(req.Limits)
		epoch = l.blocked.epoch(req.Key)
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
	if cap(limits) < len(req.Limits) {
		limits = make([]LimitResult, len(req.Limits))
	}
	res.Limits = limits[:len(req.Limits)]
	check := CheckRequest{Key: req.Key, Limits: req.Limits, Cost: cost}
	if local := l.local; local != nil {
		// An in-process store never blocks: no deadline to arm, no breaker,
		// and no caller's cancellation to heed (a request whose client
		// half-closed is still decided and answered).
		if err := local.CheckAt(context.Background(), check, now, res.Limits); err != nil {
			l.storeFailed(ctx, req, err, res, rs)
			return
		}
	} else if err := l.checkRemote(ctx, req, check, now, res); err != nil {
		l.storeFailed(ctx, req, err, res, rs)
		return
	}
	res.summarize()
	if !res.Allowed && l.blocked != nil && res.RetryAfter > 0 {
		l.blocked.put(req.Key, fingerprint, res.bindingIndex(), cost, now.Add(res.RetryAfter), now, epoch)
	}
}

// checkRemote asks a store that may block, within the request's budget and
// through the circuit breaker of the node that holds the key.
func (l *Limiter) checkRemote(ctx context.Context, req *Request, check CheckRequest, now time.Time, res *Result) error {
	budget := req.Budget
	if budget <= 0 {
		budget = l.budget
	}
	maxWait := max(l.maxWait, budget)
	// The store's record of answers bounds the look-up of the key's node;
	// the call itself waits on the node's own.
	answers := &l.answered
	tctx := l.deadlines.within(ctx, time.Now(), budget, maxWait, answers)
	var node string
	if l.nodes != nil {
		if node = l.nodes.Node(tctx, req.Key); node != "" {
			l.deadlines.end(tctx)
			answers = l.answersOf(node)
			tctx = l.deadlines.within(ctx, time.Now(), budget, maxWait, answers)
		}
	}
	defer l.deadlines.end(tctx)
	var b *breaker
	probe := false
	if l.breakers != nil {
		b = l.breakers.of(node)
		var pass bool
		if pass, probe = b.admit(now); !pass {
			return ErrCircuitOpen
		}
	}
	err := l.store.Check(tctx, check, res.Limits)
	if err == nil {
		t := time.Now()
		answers.answered(t)
		if answers != &l.answered {
			l.answered.answered(t)
		}
	}
	if b != nil {
		b.record(l.breakers, node, now, probe, classify(ctx, tctx, err), err)
	}
	return err
}

// answersOf is the answer record of a node of a Partitioned store.
func (l *Limiter) answersOf(node string) *nodeAnswers {
	if a, ok := l.nodeAnswers.Load(node); ok {
		return a.(*nodeAnswers)
	}
	a, _ := l.nodeAnswers.LoadOrStore(node, &nodeAnswers{})
	return a.(*nodeAnswers)
}

// storeFailed counts a failed check and decides it by the failure policy.
func (l *Limiter) storeFailed(ctx context.Context, req *Request, err error, res *Result, rs *ruleStats) {
	switch {
	case ctx.Err() != nil:
		// The caller gave up: not the store's failure.
		rs.canceled.Add(1)
	case errors.Is(err, ErrCircuitOpen):
		rs.circuitOpen.Add(1)
	default:
		rs.storeErrors.Add(1)
	}
	l.failureDecision(req, err, res)
}

func (l *Limiter) failureDecision(req *Request, err error, res *Result) {
	policy := req.Fail
	if policy == FailDefault {
		policy = l.fail
	}
	*res = Result{Limit: req.Limits[0], Err: fmt.Errorf("%w: %w", ErrStoreUnavailable, err)}
	l.failures.note(l.log, policy, req.Rule, err)
	if policy == FailClosed {
		res.Source = FromFailClosed
		res.RetryAfter = max(l.backoff, time.Second)
		return
	}
	res.Allowed, res.Source = true, FromFailOpen
	res.Remaining = req.Limits[0].Capacity()
}

// failureLogEvery is the least time between two log lines of failure-policy
// decisions: a store outage under load decides thousands a second, and each
// is counted in Stats (ratelimit_fail_open_total, ratelimit_fail_closed_total)
// anyway.
const failureLogEvery = time.Second

// failureLog logs failure-policy decisions at most once per failureLogEvery,
// each line with the number decided since the previous one.
type failureLog struct {
	open, closed atomic.Int64
	next         atomic.Int64 // unix nanoseconds before which nothing is logged
}

func (f *failureLog) note(log *slog.Logger, policy FailurePolicy, rule string, err error) {
	if policy == FailClosed {
		f.closed.Add(1)
	} else {
		f.open.Add(1)
	}
	now := time.Now().UnixNano()
	next := f.next.Load()
	if now < next || !f.next.CompareAndSwap(next, now+int64(failureLogEvery)) {
		return
	}
	if rule == "" {
		rule = "default"
	}
	log.Warn("ratelimit: store unavailable or over the budget; decided by the failure policy",
		"admitted", f.open.Swap(0), "refused", f.closed.Swap(0), "rule", rule, "err", err)
}

// Reset deletes all state of key, in the store and in the blocked cache,
// and reports whether the store had any.
// The cache entry is dropped after the store's state (a check between the
// two would otherwise cache the old block again); a check in flight across
// the reset caches nothing (blockedCache.put).
func (l *Limiter) Reset(ctx context.Context, key string) (bool, error) {
	existed, err := l.store.Reset(ctx, key)
	if l.blocked != nil {
		l.blocked.delete(key)
	}
	return existed, err
}

// FollowResets drops from the blocked cache every key reset by any process
// sharing the store (devkit ratelimit reset, another proxy's admin reset),
// until ctx ends. It returns at once when there is nothing to follow (no
// blocked cache, or a store of this process only).
func (l *Limiter) FollowResets(ctx context.Context) error {
	feed, ok := l.store.(ResetFeed)
	if !ok || l.blocked == nil {
		return nil
	}
	return feed.FollowResets(ctx, l.blocked.delete)
}

// Top lists up to n identities with the most hits.
func (l *Limiter) Top(ctx context.Context, n int) ([]Consumer, error) { return l.store.Top(ctx, n) }

// Health pings the store and reports the round-trip time.
func (l *Limiter) Health(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	err := l.store.Ping(ctx)
	return time.Since(start), err
}

// Breakers reports the circuit breaker of every store node seen so far.
func (l *Limiter) Breakers() []BreakerState {
	if l.breakers == nil {
		return nil
	}
	return l.breakers.snapshot()
}

// Warm prepares the store for limits when it implements Warmer (the
// Redis store: connections, scripts, registrations), so that the first
// burst is decided within the budget; a gateway warms at start. It is a
// no-op for other stores.
func (l *Limiter) Warm(ctx context.Context, limits []Limit) error {
	if w, ok := l.store.(Warmer); ok {
		return w.Warm(ctx, limits)
	}
	return nil
}

// TopDenied returns up to n identities the limits denied most since the
// limiter started (shadow denials included; failure-policy refusals are
// not a limit's), most first, from a bounded heavy-hitters sketch
// (Space-Saving): every identity with more than 1/DeniedSketchSize of the
// denials is listed, its Denied never below the truth and above it by at
// most its Overcount. Nil when the sketch is off.
func (l *Limiter) TopDenied(n int) []DeniedConsumer {
	if l.denied == nil {
		return nil
	}
	top := l.denied.Top(n)
	out := make([]DeniedConsumer, len(top))
	for i, e := range top {
		out[i] = DeniedConsumer{Key: e.Key, Denied: e.Count, Overcount: e.Error}
	}
	return out
}

// Stats returns the limiter's counters.
func (l *Limiter) Stats() *Stats { return l.stats }

// Store returns the limiter's store.
func (l *Limiter) Store() Store { return l.store }
