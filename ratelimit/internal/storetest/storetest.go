// Package storetest is the contract every ratelimit.Store must meet. One
// suite runs against the memory store, miniredis, a real redis-server and a
// real Redis Cluster, with the same expectations, so the stores cannot drift.
package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
)

// Clock is the fake clock of the tests, advanced by hand: its Now is the
// ratelimit.Clock a test gives to every component it builds (the Now of
// ratelimit.Options, memory.Options and redisstore.Options).
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts at a whole hour, so aligned windows start there too.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 1, 7, 9, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Factory returns a fresh, empty store that reads time from clock.
type Factory func(t *testing.T, clock *Clock) ratelimit.Store

type step struct {
	advance   time.Duration
	cost      int64
	allowed   bool
	remaining int64
	reset     time.Duration
	retry     time.Duration
	blocked   bool
}

// Run runs the whole contract against stores made by newStore.
func Run(t *testing.T, newStore Factory) {
	sequences := []struct {
		name  string
		limit ratelimit.Limit
		steps []step
	}{
		{"FixedWindow_DeniesOverLimitUntilWindowEnds",
			ratelimit.Limit{Algorithm: ratelimit.FixedWindow, Rate: 3, Period: time.Minute},
			[]step{
				{cost: 1, allowed: true, remaining: 2, reset: time.Minute},
				{advance: 10 * time.Second, cost: 1, allowed: true, remaining: 1, reset: 50 * time.Second},
				{cost: 1, allowed: true, remaining: 0, reset: 50 * time.Second},
				{cost: 1, remaining: 0, reset: 50 * time.Second, retry: 50 * time.Second},
				{advance: 50 * time.Second, cost: 1, allowed: true, remaining: 2, reset: time.Minute},
				{cost: 5, remaining: 2, reset: time.Minute, retry: -1},
			}},
		{"FixedWindow_PenaltyBlockOutlastsWindow",
			ratelimit.Limit{Algorithm: ratelimit.FixedWindow, Rate: 2, Period: 15 * time.Minute, Block: time.Hour},
			[]step{
				{cost: 1, allowed: true, remaining: 1, reset: 15 * time.Minute},
				{cost: 1, allowed: true, remaining: 0, reset: 15 * time.Minute},
				{cost: 1, reset: time.Hour, retry: time.Hour, blocked: true},
				{advance: 20 * time.Minute, cost: 1, reset: 40 * time.Minute, retry: 40 * time.Minute, blocked: true},
				{advance: 40 * time.Minute, cost: 1, allowed: true, remaining: 1, reset: 15 * time.Minute},
			}},
		{"SlidingWindow_WeighsPreviousWindow",
			ratelimit.Limit{Algorithm: ratelimit.SlidingWindow, Rate: 4, Period: time.Minute},
			[]step{
				{cost: 4, allowed: true, remaining: 0, reset: 2 * time.Minute},
				{cost: 1, reset: 2 * time.Minute, retry: 75 * time.Second},
				// 90s: previous window (4) weighs half: 2 used, 2 free.
				{advance: 90 * time.Second, cost: 1, allowed: true, remaining: 1, reset: 90 * time.Second},
				{cost: 1, allowed: true, remaining: 0, reset: 90 * time.Second},
				{cost: 1, reset: 90 * time.Second, retry: 15 * time.Second},
				{advance: 15 * time.Second, cost: 1, allowed: true, remaining: 0, reset: 75 * time.Second},
			}},
		// The sliding log is exact: 3 in any rolling minute, whatever the
		// window edges (the sliding window would let 2×Rate through here).
		{"SlidingLog_ExactInEveryRollingWindow",
			ratelimit.Limit{Algorithm: ratelimit.SlidingLog, Rate: 3, Period: time.Minute},
			[]step{
				{cost: 1, allowed: true, remaining: 2, reset: time.Minute},
				{advance: 50 * time.Second, cost: 2, allowed: true, remaining: 0, reset: time.Minute},
				{advance: 5 * time.Second, cost: 1, reset: 55 * time.Second, retry: 5 * time.Second},
				{cost: 4, reset: 55 * time.Second, retry: -1},
				// 60s: the first request has left the window; one free.
				{advance: 5 * time.Second, cost: 1, allowed: true, remaining: 0, reset: time.Minute},
				{cost: 1, reset: time.Minute, retry: 50 * time.Second},
				{cost: 0, allowed: true, remaining: 0, reset: time.Minute},
				{advance: time.Hour, cost: 2, allowed: true, remaining: 1, reset: time.Minute},
			}},
		{"SlidingLog_Block",
			ratelimit.Limit{Algorithm: ratelimit.SlidingLog, Rate: 2, Period: 15 * time.Minute, Block: time.Hour},
			[]step{
				{cost: 2, allowed: true, remaining: 0, reset: 15 * time.Minute},
				{cost: 1, reset: time.Hour, retry: time.Hour, blocked: true},
				{advance: 30 * time.Minute, cost: 1, reset: 30 * time.Minute, retry: 30 * time.Minute, blocked: true},
				{advance: 30 * time.Minute, cost: 1, allowed: true, remaining: 1, reset: 15 * time.Minute},
			}},
		{"TokenBucket_BurstThenRefill",
			ratelimit.Limit{Algorithm: ratelimit.TokenBucket, Rate: 1, Period: time.Second, Burst: 5},
			[]step{
				{cost: 5, allowed: true, remaining: 0, reset: 5 * time.Second},
				{cost: 1, reset: 5 * time.Second, retry: time.Second},
				{advance: 2 * time.Second, cost: 1, allowed: true, remaining: 1, reset: 4 * time.Second},
				{cost: 1, allowed: true, remaining: 0, reset: 5 * time.Second},
				{cost: 6, reset: 5 * time.Second, retry: -1},
				{advance: time.Hour, cost: 1, allowed: true, remaining: 4, reset: time.Second},
			}},
		{"GCRA_SpacesRequests",
			ratelimit.Limit{Algorithm: ratelimit.GCRA, Rate: 10, Period: time.Second, Burst: 3},
			[]step{
				{cost: 1, allowed: true, remaining: 2, reset: 100 * time.Millisecond},
				{cost: 1, allowed: true, remaining: 1, reset: 200 * time.Millisecond},
				{cost: 1, allowed: true, remaining: 0, reset: 300 * time.Millisecond},
				{cost: 1, reset: 300 * time.Millisecond, retry: 100 * time.Millisecond},
				{advance: 100 * time.Millisecond, cost: 1, allowed: true, remaining: 0, reset: 300 * time.Millisecond},
				{advance: 250 * time.Millisecond, cost: 2, allowed: true, remaining: 0, reset: 250 * time.Millisecond},
			}},
	}
	for _, seq := range sequences {
		t.Run(seq.name, func(t *testing.T) {
			clock := NewClock()
			store := newStore(t, clock)
			key := "contract-" + seq.name
			for i, st := range seq.steps {
				clock.Advance(st.advance)
				got := check(t, store, key, st.cost, seq.limit)[0]
				want := ratelimit.LimitResult{Limit: seq.limit, Allowed: st.allowed, Remaining: st.remaining,
					ResetAfter: st.reset, RetryAfter: st.retry, Blocked: st.blocked}
				if got != want {
					t.Fatalf("step %d (cost %d): got %+v\nwant %+v", i, st.cost, got, want)
				}
			}
		})
	}

	t.Run("MultiLimit_DenialConsumesNothing", func(t *testing.T) {
		for _, alg := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindow, ratelimit.TokenBucket, ratelimit.GCRA, ratelimit.SlidingLog} {
			t.Run(alg.String(), func(t *testing.T) {
				clock := NewClock()
				store := newStore(t, clock)
				wide := ratelimit.Limit{Name: "wide", Algorithm: alg, Rate: 10, Period: time.Hour}
				narrow := ratelimit.Limit{Name: "narrow", Algorithm: alg, Rate: 2, Period: time.Hour}
				for i := 0; i < 2; i++ {
					if r := check(t, store, "k", 1, wide, narrow); !r[0].Allowed || !r[1].Allowed {
						t.Fatalf("request %d denied: %+v", i, r)
					}
				}
				for i := 0; i < 5; i++ {
					r := check(t, store, "k", 1, wide, narrow)
					if !r[0].Allowed || r[1].Allowed {
						t.Fatalf("denied request %d: want wide allowed and narrow denied, got %+v", i, r)
					}
					if r[0].Remaining != 8 {
						t.Fatalf("denied request %d: wide reports %d remaining, want 8 (as if unconsumed)", i, r[0].Remaining)
					}
				}
				if r := check(t, store, "k", 0, wide); r[0].Remaining != 8 {
					t.Fatalf("wide remaining after denials = %d, want 8 (denials must consume nothing)", r[0].Remaining)
				}
			})
		}
	})

	t.Run("Peek_ConsumesNothing", func(t *testing.T) {
		store := newStore(t, NewClock())
		lim := ratelimit.Limit{Rate: 2, Period: time.Minute}
		for i := 0; i < 5; i++ {
			if r := check(t, store, "p", 0, lim); r[0].Remaining != 2 {
				t.Fatalf("peek %d: remaining %d, want 2", i, r[0].Remaining)
			}
		}
		if info, _ := store.Info(context.Background(), "p"); info.Exists {
			t.Fatalf("peek created state: %+v", info)
		}
	})

	t.Run("Keys_AndNamedLimits_AreIndependent", func(t *testing.T) {
		store := newStore(t, NewClock())
		get := ratelimit.Limit{Name: "GET", Rate: 1, Period: time.Minute}
		post := ratelimit.Limit{Name: "POST", Rate: 1, Period: time.Minute}
		for _, c := range []struct {
			key   string
			limit ratelimit.Limit
		}{{"a", get}, {"a", post}, {"b", get}} {
			if r := check(t, store, c.key, 1, c.limit); !r[0].Allowed {
				t.Fatalf("%s/%s: first request denied", c.key, c.limit.Name)
			}
		}
		if r := check(t, store, "a", 1, get); r[0].Allowed {
			t.Fatal("a/GET: second request allowed")
		}
	})

	t.Run("Reset_Info_Top", func(t *testing.T) {
		ctx := context.Background()
		store := newStore(t, NewClock())
		lim := ratelimit.Limit{Rate: 3, Period: time.Minute, Block: 10 * time.Minute}
		for i, key := range []string{"top-a", "top-b", "top-b", "top-c", "top-c", "top-c", "top-c"} {
			check(t, store, key, 1, lim)
			_ = i
		}
		top, err := store.Top(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(top) != 2 || top[0].Key != "top-c" || top[0].Hits != 4 || top[1].Key != "top-b" || top[1].Hits != 2 {
			t.Fatalf("top 2 = %+v, want top-c (4) then top-b (2)", top)
		}
		info, err := store.Info(ctx, "top-c")
		if err != nil {
			t.Fatal(err)
		}
		if !info.Exists || info.Hits != 4 || info.BlockedFor != 10*time.Minute || info.TTL <= 0 {
			t.Fatalf("info top-c = %+v, want 4 hits, blocked 10m", info)
		}
		if had, err := store.Reset(ctx, "top-c"); err != nil || !had {
			t.Fatalf("reset top-c = %v, %v; want true", had, err)
		}
		if had, err := store.Reset(ctx, "top-c"); err != nil || had {
			t.Fatalf("second reset top-c = %v, %v; want false", had, err)
		}
		if r := check(t, store, "top-c", 1, lim); !r[0].Allowed || r[0].Remaining != 2 {
			t.Fatalf("after reset: %+v, want allowed with 2 remaining", r[0])
		}
	})

	t.Run("Ping", func(t *testing.T) {
		if err := newStore(t, NewClock()).Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func check(t *testing.T, store ratelimit.Store, key string, cost int64, limits ...ratelimit.Limit) []ratelimit.LimitResult {
	t.Helper()
	out := make([]ratelimit.LimitResult, len(limits))
	if err := store.Check(context.Background(), ratelimit.CheckRequest{Key: key, Limits: limits, Cost: cost}, out); err != nil {
		t.Fatalf("check %q: %v", key, err)
	}
	return out
}

// RunAccuracy has instances limiters (one store each, sharing a backend)
// run goroutines each against one key, and requires that exactly the limit
// is allowed, for every algorithm, and that a denied multi-limit check
// consumed nothing. The stores use the backend's real clock.
func RunAccuracy(t *testing.T, instances, goroutines int, newStore func(t *testing.T) ratelimit.Store) {
	const limit = 100
	for _, alg := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindow, ratelimit.TokenBucket, ratelimit.GCRA, ratelimit.SlidingLog} {
		t.Run(alg.String(), func(t *testing.T) {
			// An hour-long period: refill during the test is far below one request.
			lim := ratelimit.Limit{Name: "acc", Algorithm: alg, Rate: limit, Period: time.Hour}
			// A wide second limit: every allowed check spends from it too.
			wide := ratelimit.Limit{Name: "wide", Algorithm: alg, Rate: 10 * limit, Period: time.Hour}
			key := fmt.Sprintf("accuracy-%s-%d", alg, time.Now().UnixNano())
			var allowed, errs atomic.Int64
			var wg sync.WaitGroup
			for i := 0; i < instances; i++ {
				l := ratelimit.New(newStore(t), ratelimit.Options{Budget: 5 * time.Second, Backoff: -1})
				for g := 0; g < goroutines; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for n := 0; n < 5; n++ {
							r, err := l.Allow(context.Background(), key, lim, wide)
							if err != nil || r.Err != nil {
								errs.Add(1)
								continue
							}
							if r.Allowed {
								allowed.Add(1)
							}
						}
					}()
				}
			}
			wg.Wait()
			if errs.Load() > 0 {
				t.Fatalf("%d checks failed", errs.Load())
			}
			if got := allowed.Load(); got != limit {
				t.Fatalf("allowed %d of %d attempts, want exactly %d", got, instances*goroutines*5, limit)
			}
			peek := ratelimit.New(newStore(t), ratelimit.Options{Budget: 5 * time.Second})
			r, err := peek.Peek(context.Background(), key, wide)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(9 * limit); r.Remaining < want-1 || r.Remaining > want {
				t.Fatalf("wide remaining %d, want %d: denied checks must consume nothing", r.Remaining, want)
			}
		})
	}
}
