package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/internal/storetest"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// slack is what a decision may exceed its budget by on a loaded test machine;
// a hung store would take the client's full timeout (seconds) instead.
const slack = 400 * time.Millisecond

func TestCheck_RejectsInvalidRequests(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	ctx := context.Background()
	if _, err := l.Allow(ctx, "k"); !errors.Is(err, ratelimit.ErrNoLimits) {
		t.Errorf("no limits: err = %v", err)
	}
	if _, err := l.Allow(ctx, "k", ratelimit.Limit{Rate: 0, Period: time.Second}); err == nil {
		t.Error("zero rate accepted")
	}
	if _, err := l.AllowN(ctx, "k", -1, ratelimit.PerSecond(1)); err == nil {
		t.Error("negative cost accepted")
	}
	many := make([]ratelimit.Limit, ratelimit.MaxLimits+1)
	for i := range many {
		many[i] = ratelimit.PerSecond(1)
	}
	if _, err := l.Allow(ctx, "k", many...); !errors.Is(err, ratelimit.ErrTooManyLimits) {
		t.Errorf("too many limits: err = %v", err)
	}
}

func TestCheck_ResultNamesTheBindingLimit(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	ctx := context.Background()
	burst := ratelimit.Limit{Name: "burst", Rate: 2, Period: time.Second}
	hourly := ratelimit.Limit{Name: "hourly", Rate: 100, Period: time.Hour}
	r, _ := l.Allow(ctx, "k", hourly, burst)
	if !r.Allowed || r.Limit.Name != "burst" || r.Remaining != 1 || len(r.Limits) != 2 {
		t.Fatalf("first: %+v", r)
	}
	l.Allow(ctx, "k", hourly, burst)
	r, _ = l.Allow(ctx, "k", hourly, burst)
	if r.Allowed || r.Limit.Name != "burst" || r.RetryAfter <= 0 || !r.Denied() {
		t.Fatalf("third: %+v", r)
	}
}

func TestShadow_CountsDenialButAllows(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	req := ratelimit.Request{Key: "k", Limits: []ratelimit.Limit{ratelimit.PerMinute(1)}, Rule: "dry", Shadow: true}
	for i := 0; i < 3; i++ {
		r, err := l.Check(context.Background(), req)
		if err != nil || !r.Allowed {
			t.Fatalf("shadow check %d: %+v, %v", i, r, err)
		}
		if r.Shadowed != (i > 0) {
			t.Fatalf("check %d: shadowed = %v", i, r.Shadowed)
		}
	}
	c := l.Stats().Snapshot()
	if len(c) != 1 || c[0].Rule != "dry" || c[0].Allowed != 1 || c[0].ShadowDenied != 2 || c[0].Denied != 0 {
		t.Fatalf("counters = %+v", c)
	}
}

// countingStore counts calls that reach the store.
type countingStore struct {
	ratelimit.Store
	mu    sync.Mutex
	calls int
}

func (s *countingStore) Check(ctx context.Context, req ratelimit.CheckRequest, out []ratelimit.LimitResult) error {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return s.Store.Check(ctx, req, out)
}

func TestBlockedCache_KeepsFloodFromStore(t *testing.T) {
	clock := storetest.NewClock()
	store := &countingStore{Store: memory.New(memory.Options{Now: clock.Now})}
	l := ratelimit.New(store, ratelimit.Options{BlockedCacheSize: 1024, Now: clock.Now})
	login := ratelimit.Limit{Name: "login", Rate: 2, Period: 15 * time.Minute, Block: time.Hour}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		l.Allow(ctx, "ip", login)
	}
	for i := 0; i < 100; i++ {
		r, _ := l.Allow(ctx, "ip", login)
		if r.Allowed || r.Source != ratelimit.FromBlockedCache || r.RetryAfter != time.Hour {
			t.Fatalf("flood request %d: %+v", i, r)
		}
	}
	if store.calls != 3 {
		t.Fatalf("store saw %d checks, want 3", store.calls)
	}
	// The same key under other limits (another method's) goes to the store.
	other := ratelimit.Limit{Name: "login-get", Rate: 100, Period: time.Minute}
	if r, _ := l.Allow(ctx, "ip", other); !r.Allowed || r.Source != ratelimit.FromStore {
		t.Fatalf("other limits on a blocked key: %+v", r)
	}
	clock.Advance(time.Hour)
	if r, _ := l.Allow(ctx, "ip", login); !r.Allowed || r.Source != ratelimit.FromStore {
		t.Fatalf("after the block: %+v", r)
	}
	l.Allow(ctx, "ip", login)
	l.Allow(ctx, "ip", login) // blocked again
	if _, err := l.Reset(ctx, "ip"); err != nil {
		t.Fatal(err)
	}
	if r, _ := l.Allow(ctx, "ip", login); !r.Allowed {
		t.Fatalf("after reset: %+v", r)
	}
}

// TestStats_SnapshotCountsPerRuleAndBindingLimit: the counters the servers
// export (middleware.Collector) are the snapshot's, per rule and per the
// limit that bound each decision.
func TestStats_SnapshotCountsPerRuleAndBindingLimit(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	for i := 0; i < 3; i++ {
		l.Check(context.Background(), ratelimit.Request{Key: "k", Rule: "api", Limits: []ratelimit.Limit{ratelimit.PerMinute(2)}})
	}
	daily := ratelimit.Limit{Name: "daily", Rate: 1, Period: 24 * time.Hour}
	for i := 0; i < 2; i++ {
		l.Check(context.Background(), ratelimit.Request{Key: "k2", Rule: "api", Limits: []ratelimit.Limit{ratelimit.PerMinute(100), daily}})
	}
	snap := l.Stats().Snapshot()
	if len(snap) != 1 {
		t.Fatalf("snapshot %+v, want one rule", snap)
	}
	c := snap[0]
	var inBuckets int64
	for _, n := range c.LatencyBuckets {
		inBuckets += n
	}
	if c.Rule != "api" || c.Allowed != 3 || c.Denied != 2 || c.Decisions() != 5 || inBuckets != 5 ||
		len(c.LatencyBuckets) != len(c.LatencyBounds)+1 || c.LatencySum <= 0 {
		t.Fatalf("rule counters %+v", c)
	}
	// Per limit: the one that bound each decision.
	want := []ratelimit.LimitCounters{
		{Limit: "daily", Allowed: 1, Denied: 1},
		{Limit: "fixed-window-2-per-1m0s", Allowed: 2, Denied: 1},
	}
	if !slices.Equal(c.Limits, want) {
		t.Fatalf("per-limit counters %+v, want %+v", c.Limits, want)
	}
}

type hangCase struct {
	name     string
	policy   ratelimit.FailurePolicy
	allowed  bool
	source   ratelimit.Source
	pipeline int
}

func failureCases() []struct {
	name    string
	policy  ratelimit.FailurePolicy
	allowed bool
	source  ratelimit.Source
} {
	return []struct {
		name    string
		policy  ratelimit.FailurePolicy
		allowed bool
		source  ratelimit.Source
	}{
		{"open", ratelimit.FailOpen, true, ratelimit.FromFailOpen},
		{"closed", ratelimit.FailClosed, false, ratelimit.FromFailClosed},
	}
}

func TestFailurePolicy_HangingRedisDecidedWithinBudget(t *testing.T) {
	addr := redistest.HangingServer(t)
	before := runtime.NumGoroutine()
	var cases []hangCase
	for _, c := range failureCases() {
		cases = append(cases, hangCase{c.name, c.policy, c.allowed, c.source, 0}, hangCase{c.name + "-pipelined", c.policy, c.allowed, c.source, 4})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client, err := redisstore.NewClient("redis://" + addr)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			const budget = 50 * time.Millisecond
			store := redisstore.New(client, redisstore.Options{Pipeline: c.pipeline})
			defer store.Close()
			l := ratelimit.New(store, ratelimit.Options{Fail: c.policy, Budget: budget})
			var wg sync.WaitGroup
			for g := 0; g < 20; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					r, err := l.Allow(context.Background(), "k", ratelimit.PerSecond(10))
					took := time.Since(start)
					if err != nil || r.Allowed != c.allowed || r.Source != c.source || !errors.Is(r.Err, ratelimit.ErrStoreUnavailable) {
						t.Errorf("result %+v, err %v", r, err)
					}
					if took > budget+slack {
						t.Errorf("decision took %v with a %v budget", took, budget)
					}
				}()
			}
			wg.Wait()
			if c := l.Stats().Snapshot()[0]; c.StoreErrors == 0 {
				t.Errorf("no store error counted: %+v", c)
			}
		})
	}
	waitGoroutines(t, before)
}

func TestFailurePolicy_RedisStoppedMidTest(t *testing.T) {
	for _, c := range failureCases() {
		t.Run(c.name, func(t *testing.T) {
			srv := redistest.StartRedis(t)
			client, err := redisstore.NewClient(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			store := &countingStore{Store: redisstore.New(client, redisstore.Options{})}
			l := ratelimit.New(store, ratelimit.Options{Fail: c.policy, Backoff: time.Hour})
			lim := ratelimit.PerMinute(100)
			if r, _ := l.Allow(context.Background(), "k", lim); !r.Allowed || r.Source != ratelimit.FromStore {
				t.Fatalf("with redis up: %+v", r)
			}
			srv.Stop()
			for i := 0; i < 50; i++ {
				start := time.Now()
				r, err := l.Allow(context.Background(), "k", lim)
				if err != nil || r.Allowed != c.allowed || r.Source != c.source {
					t.Fatalf("request %d with redis down: %+v, %v", i, r, err)
				}
				if took := time.Since(start); took > ratelimit.DefaultBudget+slack {
					t.Fatalf("decision took %v", took)
				}
			}
			// The breaker spares the dead server: it opens after
			// DefaultBreakerFailures consecutive errors, then no call for an
			// hour. (On a loaded machine a refused dial may run out of the
			// budget: a timeout, which does not count towards opening.)
			want := 1 + ratelimit.DefaultBreakerFailures
			if store.calls < want || store.calls > want+5 {
				t.Fatalf("store called %d times, want %d (one up, then failures until the breaker opens)", store.calls, want)
			}
			counters := l.Stats().Snapshot()[0]
			if counters.StoreErrors != int64(store.calls-1) || counters.CircuitOpen != int64(51-store.calls) || counters.Decisions() != 51 {
				t.Fatalf("counters %+v", counters)
			}
		})
	}
}

func TestFailurePolicy_PerRequestOverride(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer client.Close()
	l := ratelimit.New(redisstore.New(client, redisstore.Options{}), ratelimit.Options{Fail: ratelimit.FailOpen, Backoff: -1})
	r, _ := l.Check(context.Background(), ratelimit.Request{Key: "k", Limits: []ratelimit.Limit{ratelimit.PerSecond(1)}, Fail: ratelimit.FailClosed})
	if r.Allowed || r.Source != ratelimit.FromFailClosed || r.RetryAfter < time.Second {
		t.Fatalf("fail-closed rule on a fail-open limiter: %+v", r)
	}
	r, _ = l.Check(context.Background(), ratelimit.Request{Key: "k", Limits: []ratelimit.Limit{ratelimit.PerSecond(1)}})
	if !r.Allowed || r.Source != ratelimit.FromFailOpen {
		t.Fatalf("default rule: %+v", r)
	}
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, want at most %d\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A denial answered from the blocked cache reports the limit that holds the
// block, per limit, as the store's answer did: the middleware then writes
// the same X-RateLimit and IETF RateLimit fields for both.
func TestBlockedCache_AnswersWithTheBlockingLimitLikeTheStore(t *testing.T) {
	clock := storetest.NewClock()
	l := ratelimit.New(memory.New(memory.Options{Now: clock.Now}), ratelimit.Options{BlockedCacheSize: 1024, Now: clock.Now})
	roomy := ratelimit.Limit{Name: "per-day", Rate: 1000, Period: 24 * time.Hour}
	tight := ratelimit.Limit{Name: "per-minute", Rate: 2, Period: time.Minute, Block: 5 * time.Minute}
	ctx := context.Background()
	var fromStore ratelimit.Result
	for i := 0; i < 3; i++ {
		fromStore, _ = l.Check(ctx, ratelimit.Request{Key: "t", Limits: []ratelimit.Limit{roomy, tight}})
	}
	if fromStore.Allowed || fromStore.Source != ratelimit.FromStore || fromStore.Limit.Name != "per-minute" {
		t.Fatalf("third check: %+v", fromStore)
	}
	cached, _ := l.Check(ctx, ratelimit.Request{Key: "t", Limits: []ratelimit.Limit{roomy, tight}})
	if cached.Source != ratelimit.FromBlockedCache {
		t.Fatalf("fourth check not from the cache: %+v", cached)
	}
	if cached.Limit.Name != "per-minute" || !cached.Blocked || len(cached.Limits) != 1 ||
		cached.Limits[0].Limit.Name != "per-minute" || cached.Limits[0].Remaining != 0 || cached.Limits[0].RetryAfter != fromStore.RetryAfter {
		t.Fatalf("cached denial %+v does not describe the blocking limit like %+v", cached, fromStore)
	}
}

// What the docs say: the sliding window's weighting lets about 2× Rate
// through within one rolling period when the previous window's requests
// came at its end; the sliding log never lets more than Rate through.
func TestSlidingWindowAllowsAbout2xInARollingPeriod_SlidingLogExactly1x(t *testing.T) {
	for _, c := range []struct {
		alg      ratelimit.Algorithm
		min, max int
	}{{ratelimit.SlidingWindow, 18, 20}, {ratelimit.SlidingLog, 10, 10}} {
		clock := storetest.NewClock()
		l := ratelimit.New(memory.New(memory.Options{Now: clock.Now}), ratelimit.Options{})
		lim := ratelimit.Limit{Algorithm: c.alg, Rate: 10, Period: time.Minute}
		clock.Advance(59 * time.Second) // the end of a window
		passed := 0
		// One request a second for a rolling minute, from 59s to 118s.
		for i := 0; i < 60; i++ {
			for j := 0; j < 10; j++ {
				if r, _ := l.Allow(context.Background(), "k", lim); r.Allowed {
					passed++
				}
			}
			clock.Advance(time.Second)
		}
		if passed < c.min || passed > c.max {
			t.Errorf("%s: %d passed in one rolling minute at 10 per minute, want %d to %d", c.alg, passed, c.min, c.max)
		}
	}
}

func TestDenial_WrapsErrLimited(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	lim := ratelimit.Limit{Name: "login", Rate: 1, Period: time.Minute}
	r, _ := l.Allow(context.Background(), "k", lim)
	if err := r.Denial(); err != nil {
		t.Fatalf("allowed, yet Denial() = %v", err)
	}
	r, _ = l.Allow(context.Background(), "k", lim)
	if err := r.Denial(); !errors.Is(err, ratelimit.ErrLimited) || !strings.Contains(err.Error(), "login") {
		t.Fatalf("denied: Denial() = %v, want ErrLimited naming the limit", err)
	}
}

// TopDenied ranks the identities the limits denied, from a bounded sketch
// that keeps the heavy ones through a flood of one-off identities; a
// shadow rule's denials count, a failure policy's refusals do not; and the
// rule's denial rate covers the last seconds.
func TestTopDenied_HeavyIdentitiesThroughAFloodOfOthers(t *testing.T) {
	ctx := context.Background()
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{DeniedSketchSize: 64})
	one := []ratelimit.Limit{{Name: "one", Rate: 1, Period: time.Hour}}
	check := func(key string, shadow bool) {
		if _, err := l.Check(ctx, ratelimit.Request{Key: key, Limits: one, Rule: "r", Shadow: shadow}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5000 {
		check(fmt.Sprintf("flood-%d", i), false) // allowed once each
		check(fmt.Sprintf("flood-%d", i), false) // denied once each
		if i%10 == 0 {
			check("heavy", false)
			check("shadowed", true)
		}
	}
	top := l.TopDenied(2)
	if len(top) != 2 || top[0].Key != "heavy" || top[1].Key != "shadowed" {
		t.Fatalf("top denied %+v, want heavy then shadowed", top)
	}
	if top[0].Denied < 499 || top[0].Denied-top[0].Overcount > 499 {
		t.Fatalf("heavy: %+v, want a count of at least 499 and at most 499 + overcount", top[0])
	}
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // the flood's seconds complete
	snap := l.Stats().Snapshot()
	if want := float64(5000+499+499) / ratelimit.RateWindow.Seconds(); len(snap) != 1 || snap[0].DeniedPerSecond != want {
		t.Fatalf("denied per second %+v, want %v", snap, want)
	}
	if off := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{DeniedSketchSize: -1}); off.TopDenied(5) != nil {
		t.Fatal("a limiter without the sketch lists denials")
	}
}
