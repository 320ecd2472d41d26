package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/internal/storetest"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// Three limiters (three proxies) with a 50 ms budget share one Redis; 100
// clients each hammer one identity. Redis stalls once for 120 ms (DEBUG
// SLEEP): the checks in flight then run out of their budget and are
// decided by the failure policy (fail-open) — those, and only those. Before
// the per-node breaker, that one slow answer set a global 500 ms back-off on
// every proxy and let tens of thousands of requests through a limit of 1000.
func TestUnderLoad_OneSlowAnswerDecidesOnlyItsOwnChecks(t *testing.T) {
	const (
		proxies = 3
		clients = 100
		limit   = 1000
		runFor  = 1500 * time.Millisecond
	)
	srv := redistest.StartRedis(t)
	lim := ratelimit.Limit{Name: "hot", Rate: limit, Period: time.Hour}
	var limiters []*ratelimit.Limiter
	for i := 0; i < proxies; i++ {
		client, err := redisstore.NewClient(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		limiters = append(limiters, ratelimit.New(redisstore.New(client, redisstore.Options{}), ratelimit.Options{Budget: 50 * time.Millisecond}))
	}
	var admitted, failOpen, circuit, total atomic.Int64
	deadline := time.Now().Add(runFor)
	var wg sync.WaitGroup
	for _, l := range limiters {
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					r, err := l.Allow(context.Background(), "tenant:acme", lim)
					if err != nil {
						t.Error(err)
						return
					}
					total.Add(1)
					if r.Allowed {
						admitted.Add(1)
					}
					if r.Source == ratelimit.FromFailOpen {
						failOpen.Add(1)
						if errors.Is(r.Err, ratelimit.ErrCircuitOpen) {
							circuit.Add(1)
						}
					}
				}
			}()
		}
	}
	time.Sleep(300 * time.Millisecond)
	if err := srv.Client(t).Do(context.Background(), "DEBUG", "SLEEP", "0.12").Err(); err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
	wg.Wait()
	// A client can time out at most ceil(120ms/50ms) = 3 times while Redis
	// stalls; on a loaded machine a few more checks run out of their budget
	// (each decided alone, by design: up to 10% with a concurrent go build -a
	// on 2 cores), but never the flood a gate opened
	// for everyone lets through (99.7% of all checks before the fix).
	maxTimedOut := max(proxies*clients*3, total.Load()/8)
	if circuit.Load() != 0 || failOpen.Load() > maxTimedOut || admitted.Load() > limit+failOpen.Load() {
		t.Fatalf("admitted %d of a limit of %d in %d checks: %d by fail-open (%d by an open breaker); want at most %d timed-out checks and no breaker",
			admitted.Load(), limit, total.Load(), failOpen.Load(), circuit.Load(), maxTimedOut)
	}
	t.Logf("admitted %d of %d in %d checks; %d timed-out checks decided by fail-open", admitted.Load(), limit, total.Load(), failOpen.Load())
}

// One master of three is killed: identities on the two healthy masters are
// served by the store as before; only those on the dead master are decided
// by the failure policy (and its breaker opens, sparing it). Before, one
// failure anywhere backed off the whole store.
func TestCluster_OneMasterDown_IdentitiesOnHealthyMastersServed(t *testing.T) {
	cluster := redistest.StartCluster(t)
	client, err := redisstore.NewClient(cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	store := redisstore.New(client, redisstore.Options{})
	l := ratelimit.New(store, ratelimit.Options{})
	ctx := context.Background()
	lim := ratelimit.Limit{Name: "api", Rate: 1 << 30, Period: time.Hour}
	// Warm up, and find which master holds each identity.
	keys := make([]string, 300)
	byNode := map[string][]string{}
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
		if r, _ := l.Allow(ctx, keys[i], lim); r.Source != ratelimit.FromStore {
			t.Fatalf("healthy cluster: %+v", r)
		}
		node := store.Node(ctx, keys[i])
		byNode[node] = append(byNode[node], keys[i])
	}
	if len(byNode) != 3 {
		t.Fatalf("identities on %d masters, want 3: %v", len(byNode), byNode)
	}
	dead := cluster.Addrs[0]
	cluster.StopNode(0)
	var healthy, healthyServed, onDead, onDeadServed atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; time.Now().Before(deadline); i += 20 {
				key := keys[i%len(keys)]
				r, _ := l.Allow(ctx, key, lim)
				served := r.Source == ratelimit.FromStore
				if store.Node(ctx, key) == dead {
					onDead.Add(1)
					if served {
						onDeadServed.Add(1)
					}
					continue
				}
				healthy.Add(1)
				if served {
					healthyServed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if healthy.Load() == 0 || float64(healthyServed.Load()) < 0.99*float64(healthy.Load()) {
		t.Fatalf("healthy masters: %d of %d checks served by the store, want ≥ 99%%", healthyServed.Load(), healthy.Load())
	}
	if onDeadServed.Load() != 0 {
		t.Fatalf("%d checks on the dead master served by the store?", onDeadServed.Load())
	}
	open := false
	for _, b := range l.Breakers() {
		if b.Node == dead && b.State != "closed" {
			open = true
		}
		if b.Node != dead && b.State != "closed" {
			t.Errorf("breaker of healthy master %s is %s", b.Node, b.State)
		}
	}
	if !open {
		t.Errorf("breaker of the dead master %s did not open: %+v", dead, l.Breakers())
	}
	t.Logf("healthy: %d/%d served; dead master: %d decided by policy", healthyServed.Load(), healthy.Load(), onDead.Load())
}

// flakyStore fails, hangs or answers on demand.
type flakyStore struct {
	ratelimit.Store
	mode  atomic.Int32 // 0 answer, 1 fail, 2 hang until ctx ends, 3 socket timeout
	calls atomic.Int64
}

func (s *flakyStore) Check(ctx context.Context, req ratelimit.CheckRequest, out []ratelimit.LimitResult) error {
	s.calls.Add(1)
	switch s.mode.Load() {
	case 1:
		return errors.New("connection refused")
	case 2:
		<-ctx.Done()
		return ctx.Err()
	case 3:
		return fmt.Errorf("redis: read: %w", os.ErrDeadlineExceeded) // an i/o timeout, not the context's
	}
	for i := range out {
		out[i] = ratelimit.LimitResult{Limit: req.Limits[i], Allowed: true, Remaining: 1}
	}
	return nil
}

func TestBreaker_OpensOnConsecutiveErrors_ProbesHalfOpen_Closes(t *testing.T) {
	clock := storetest.NewClock()
	store := &flakyStore{}
	l := ratelimit.New(store, ratelimit.Options{Now: clock.Now, Backoff: time.Second, BreakerFailures: 3})
	ctx := context.Background()
	allow := func() ratelimit.Result {
		r, err := l.Allow(ctx, "k", ratelimit.PerSecond(10))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	store.mode.Store(1)
	for i := 0; i < 3; i++ {
		if r := allow(); r.Source != ratelimit.FromFailOpen || errors.Is(r.Err, ratelimit.ErrCircuitOpen) {
			t.Fatalf("failure %d: %+v", i, r)
		}
	}
	if r := allow(); !errors.Is(r.Err, ratelimit.ErrCircuitOpen) || store.calls.Load() != 3 {
		t.Fatalf("after 3 errors: %+v, %d calls; want the breaker open", r, store.calls.Load())
	}
	clock.Advance(time.Second)
	// Half-open: one probe; it fails, the breaker opens again.
	if r := allow(); errors.Is(r.Err, ratelimit.ErrCircuitOpen) || store.calls.Load() != 4 {
		t.Fatalf("probe: %+v, %d calls", r, store.calls.Load())
	}
	if r := allow(); !errors.Is(r.Err, ratelimit.ErrCircuitOpen) {
		t.Fatalf("after a failed probe: %+v", r)
	}
	clock.Advance(time.Second)
	store.mode.Store(0)
	if r := allow(); r.Source != ratelimit.FromStore {
		t.Fatalf("successful probe: %+v", r)
	}
	if r := allow(); r.Source != ratelimit.FromStore || l.Breakers()[0].State != "closed" {
		t.Fatalf("after a successful probe: %+v %+v", r, l.Breakers())
	}
}

// Timeouts between successes are a slow store, not a dead one: they never
// open the breaker, however many there are.
func TestBreaker_SlowAnswersBetweenSuccessesNeverOpenIt(t *testing.T) {
	store := &flakyStore{}
	l := ratelimit.New(store, ratelimit.Options{Budget: time.Millisecond, BreakerFailures: 2})
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		store.mode.Store(int32(2 * (i % 2))) // hang, answer, hang...
		r, _ := l.Allow(ctx, "k", ratelimit.PerSecond(10))
		if errors.Is(r.Err, ratelimit.ErrCircuitOpen) {
			t.Fatalf("check %d decided by an open breaker after timeouts between successes", i)
		}
	}
}

// A socket timeout is a timeout too (go-redis reports a read past the
// deadline as "i/o timeout", not as the context's error): a burst of them
// within a moment does not open the breaker. The load test caught the
// breaker opening on those as errors.
func TestBreaker_SocketTimeoutsAreTimeoutsNotErrors(t *testing.T) {
	store := &flakyStore{}
	store.mode.Store(3)
	l := ratelimit.New(store, ratelimit.Options{BreakerFailures: 2})
	for i := 0; i < 20; i++ {
		if r, _ := l.Allow(context.Background(), "k", ratelimit.PerSecond(10)); errors.Is(r.Err, ratelimit.ErrCircuitOpen) {
			t.Fatalf("breaker open after %d socket timeouts within a moment", i)
		}
	}
}

// A hung store (nothing but timeouts for a second) does open it.
func TestBreaker_HungStoreOpensAfterAStallWindow(t *testing.T) {
	clock := storetest.NewClock()
	store := &flakyStore{}
	store.mode.Store(2)
	l := ratelimit.New(store, ratelimit.Options{Now: clock.Now, Budget: time.Millisecond, BreakerFailures: 3})
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if r, _ := l.Allow(ctx, "k", ratelimit.PerSecond(10)); errors.Is(r.Err, ratelimit.ErrCircuitOpen) {
			t.Fatalf("open after %d timeouts within a moment", i)
		}
	}
	clock.Advance(1100 * time.Millisecond)
	l.Allow(ctx, "k", ratelimit.PerSecond(10))
	if r, _ := l.Allow(ctx, "k", ratelimit.PerSecond(10)); !errors.Is(r.Err, ratelimit.ErrCircuitOpen) {
		t.Fatalf("a store hung for over a second: %+v, want the breaker open", r)
	}
}

// A client that goes away is not a store error and does not count against
// the store's breaker.
func TestCanceledCaller_NotCountedAsStoreError(t *testing.T) {
	store := &flakyStore{}
	store.mode.Store(2)
	l := ratelimit.New(store, ratelimit.Options{BreakerFailures: 1})
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(2 * time.Millisecond); cancel() }()
		l.Allow(ctx, "k", ratelimit.PerSecond(10))
		cancel()
	}
	c := l.Stats().Snapshot()[0]
	if c.StoreErrors != 0 || c.Canceled != 5 || c.CircuitOpen != 0 {
		t.Fatalf("counters %+v: want 5 canceled, no store errors, no breaker", c)
	}
}

// A request's own budget (a reloaded policy's) replaces the limiter's.
func TestBudget_PerRequestReplacesTheLimiters(t *testing.T) {
	addr := redistest.HangingServer(t)
	client, err := redisstore.NewClient("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	l := ratelimit.New(redisstore.New(client, redisstore.Options{}), ratelimit.Options{Budget: 3 * time.Second})
	start := time.Now()
	r, _ := l.Check(context.Background(), ratelimit.Request{Key: "k", Limits: []ratelimit.Limit{ratelimit.PerSecond(1)}, Budget: 20 * time.Millisecond})
	if took := time.Since(start); took > time.Second || r.Source != ratelimit.FromFailOpen {
		t.Fatalf("decision took %v (%+v) under a 20ms request budget and a 3s limiter budget", took, r)
	}
}

// A reset from anywhere (the CLI's store, another proxy's admin API) clears
// the identity on every proxy within a second: the Redis state and each
// proxy's blocked cache, which otherwise kept denying for the whole block.
func TestReset_UnblocksEveryProxyWithinASecond(t *testing.T) {
	srv := redistest.StartRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	login := ratelimit.Limit{Name: "login", Rate: 2, Period: time.Hour, Block: time.Hour}
	var proxies []*ratelimit.Limiter
	for i := 0; i < 2; i++ {
		l := ratelimit.New(redisstore.New(srv.Client(t), redisstore.Options{}), ratelimit.Options{BlockedCacheSize: 1000})
		go l.FollowResets(ctx)
		proxies = append(proxies, l)
	}
	c := srv.Client(t)
	for deadline := time.Now().Add(5 * time.Second); ; {
		n, _ := c.PubSubNumSub(ctx, "rl:reset").Result()
		if n["rl:reset"] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the proxies never subscribed to rl:reset")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, l := range proxies {
		for i := 0; i < 4; i++ {
			l.Allow(ctx, "ip=203.0.113.9", login)
		}
		if r, _ := l.Allow(ctx, "ip=203.0.113.9", login); r.Source != ratelimit.FromBlockedCache {
			t.Fatalf("not blocked from the cache: %+v", r)
		}
	}
	cli := redisstore.New(srv.Client(t), redisstore.Options{}) // devkit ratelimit reset
	if had, err := cli.Reset(ctx, "ip=203.0.113.9"); err != nil || !had {
		t.Fatalf("reset: %v %v", had, err)
	}
	time.Sleep(time.Second)
	for i, l := range proxies {
		if r, _ := l.Allow(ctx, "ip=203.0.113.9", login); !r.Allowed {
			t.Fatalf("proxy %d still denies a second after the reset: %+v", i, r)
		}
	}
}

// Every failure-policy decision is counted, and logged at most once a
// second with the number decided since the previous line: a store outage
// under load must neither go unseen nor flood the log.
func TestFailurePolicy_DecisionsAreCountedAndLoggedOnceASecond(t *testing.T) {
	store := &flakyStore{}
	store.mode.Store(1)
	var buf syncBuffer
	l := ratelimit.New(store, ratelimit.Options{Backoff: -1, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	check := func(fail ratelimit.FailurePolicy) {
		if _, err := l.Check(context.Background(), ratelimit.Request{Key: "k", Rule: "login", Fail: fail,
			Limits: []ratelimit.Limit{ratelimit.PerSecond(1)}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		check(ratelimit.FailOpen)
	}
	check(ratelimit.FailClosed)
	if lines := buf.lines(); len(lines) != 1 || !strings.Contains(lines[0], `"admitted":1,"refused":0,"rule":"login"`) {
		t.Fatalf("after 101 failure decisions in well under a second, log lines %q, want one saying admitted 1", lines)
	}
	time.Sleep(1100 * time.Millisecond)
	check(ratelimit.FailOpen)
	if lines := buf.lines(); len(lines) != 2 || !strings.Contains(lines[1], `"admitted":100,"refused":1`) {
		t.Fatalf("a second later, log lines %q, want a second one with admitted 100, refused 1", lines)
	}
	c := l.Stats().Snapshot()
	if len(c) != 1 || c[0].FailOpen != 101 || c[0].FailClosed != 1 || c[0].StoreErrors != 102 {
		t.Fatalf("counters %+v, want 101 fail-open, 1 fail-closed, 102 store errors", c)
	}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}
