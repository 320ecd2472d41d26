package redisstore_test

// The lean layout of fixed windows (lean.go, lua/lean_fw.lua) runs on the
// server's clock only, so the contract suite (a test clock) never reaches
// it: these tests hold it to the same promises in real time, with short
// windows, on a real redis-server and a real 3-master cluster.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// leanBackends are a real redis-server and a real cluster, each with the
// default store (batching) and the unbatched one.
func leanBackends(t *testing.T) map[string]func(t *testing.T) (*redisstore.Store, redis.UniversalClient) {
	srv := redistest.StartRedis(t)
	cl := redistest.StartCluster(t)
	return map[string]func(t *testing.T) (*redisstore.Store, redis.UniversalClient){
		"redis": func(t *testing.T) (*redisstore.Store, redis.UniversalClient) {
			c := srv.Client(t)
			return redisstore.New(c, redisstore.Options{Prefix: uniquePrefix(t)}), c
		},
		"redis-unbatched": func(t *testing.T) (*redisstore.Store, redis.UniversalClient) {
			c := srv.Client(t)
			return redisstore.New(c, redisstore.Options{Prefix: uniquePrefix(t), Pipeline: -1}), c
		},
		"cluster": func(t *testing.T) (*redisstore.Store, redis.UniversalClient) {
			c := cl.Client(t)
			return redisstore.New(c, redisstore.Options{Prefix: uniquePrefix(t)}), c
		},
	}
}

type leanStep struct {
	sleep     time.Duration
	cost      int64
	allowed   bool
	remaining int64
	reset     time.Duration // ± leanSlack; 0 means not checked
	retry     time.Duration // ± leanSlack; -1 exactly
	blocked   bool
}

// leanSlack is how far a real-time reset or retry may be from the one the
// sequence expects: the time the steps take, and milliseconds of TTL.
const leanSlack = 120 * time.Millisecond

// leanLate is how late a step may start against the sequence's plan before
// a mismatch is blamed on the machine, and leanAttempts how many runs of a
// sequence may be late before the test gives up.
const (
	leanLate     = 40 * time.Millisecond
	leanAttempts = 5
)

func near(got, want time.Duration) bool {
	if want < 0 {
		return got == want
	}
	return got <= want+5*time.Millisecond && got >= want-leanSlack
}

func TestLean_FixedWindowKeepsTheContractInRealTime(t *testing.T) {
	sequences := []struct {
		name  string
		limit ratelimit.Limit
		steps []leanStep
	}{
		{"DeniesOverLimitUntilWindowEnds", ratelimit.Limit{Rate: 3, Period: 900 * time.Millisecond}, []leanStep{
			{cost: 1, allowed: true, remaining: 2, reset: 900 * time.Millisecond},
			{sleep: 300 * time.Millisecond, cost: 1, allowed: true, remaining: 1, reset: 600 * time.Millisecond},
			{cost: 1, allowed: true, remaining: 0, reset: 600 * time.Millisecond},
			{cost: 1, remaining: 0, reset: 600 * time.Millisecond, retry: 600 * time.Millisecond},
			{cost: 1, remaining: 0, reset: 600 * time.Millisecond, retry: 600 * time.Millisecond},
			{sleep: 650 * time.Millisecond, cost: 1, allowed: true, remaining: 2, reset: 900 * time.Millisecond},
			{cost: 5, remaining: 2, reset: 900 * time.Millisecond, retry: -1},
			{cost: 2, allowed: true, remaining: 0, reset: 900 * time.Millisecond},
		}},
		{"ADeniedCostFromBelowTheRateConsumesNothing", ratelimit.Limit{Rate: 5, Period: time.Minute}, []leanStep{
			{cost: 3, allowed: true, remaining: 2, reset: time.Minute},
			{cost: 3, remaining: 2, reset: time.Minute, retry: time.Minute},
			{cost: 2, allowed: true, remaining: 0, reset: time.Minute},
			{cost: 1, remaining: 0, reset: time.Minute, retry: time.Minute},
		}},
		{"FreshIdentityDeniedACostOverTheRate", ratelimit.Limit{Rate: 2, Period: time.Minute}, []leanStep{
			{cost: 3, remaining: 2, reset: time.Minute, retry: -1},
			{cost: 2, allowed: true, remaining: 0, reset: time.Minute},
		}},
		{"PenaltyBlockOutlastsWindow", ratelimit.Limit{Rate: 2, Period: 400 * time.Millisecond, Block: 1200 * time.Millisecond}, []leanStep{
			{cost: 1, allowed: true, remaining: 1, reset: 400 * time.Millisecond},
			{cost: 1, allowed: true, remaining: 0, reset: 400 * time.Millisecond},
			{cost: 1, reset: 1200 * time.Millisecond, retry: 1200 * time.Millisecond, blocked: true},
			// The window is over, the block is not: a fresh window key
			// must not let the identity in.
			{sleep: 600 * time.Millisecond, cost: 1, reset: 600 * time.Millisecond, retry: 600 * time.Millisecond, blocked: true},
			{cost: 1, reset: 600 * time.Millisecond, retry: 600 * time.Millisecond, blocked: true},
			{sleep: 650 * time.Millisecond, cost: 1, allowed: true, remaining: 1, reset: 400 * time.Millisecond},
		}},
		{"BlockShorterThanWindowBlocksAgainWhileTheWindowIsFull", ratelimit.Limit{Rate: 2, Period: 1500 * time.Millisecond, Block: 300 * time.Millisecond}, []leanStep{
			{cost: 1, allowed: true, remaining: 1, reset: 1500 * time.Millisecond},
			{cost: 1, allowed: true, remaining: 0, reset: 1500 * time.Millisecond},
			{cost: 1, reset: 1500 * time.Millisecond, retry: 1500 * time.Millisecond, blocked: true},
			{cost: 1, reset: 300 * time.Millisecond, retry: 300 * time.Millisecond, blocked: true},
			// The block is over, the window still full: denied, blocked again.
			{sleep: 400 * time.Millisecond, cost: 1, reset: 1100 * time.Millisecond, retry: 1100 * time.Millisecond, blocked: true},
			{sleep: 1200 * time.Millisecond, cost: 1, allowed: true, remaining: 1, reset: 1500 * time.Millisecond},
		}},
		// GCRA, one request per 300ms with a burst of 3.
		{"GCRA_BurstThenPacing", ratelimit.Limit{Algorithm: ratelimit.GCRA, Rate: 1, Period: 300 * time.Millisecond, Burst: 3}, []leanStep{
			{cost: 1, allowed: true, remaining: 2, reset: 300 * time.Millisecond},
			{cost: 2, allowed: true, remaining: 0, reset: 900 * time.Millisecond},
			{cost: 1, remaining: 0, reset: 900 * time.Millisecond, retry: 300 * time.Millisecond},
			{cost: 4, remaining: 0, reset: 900 * time.Millisecond, retry: -1},
			{sleep: 320 * time.Millisecond, cost: 1, allowed: true, remaining: 0, reset: 900 * time.Millisecond},
			{sleep: 950 * time.Millisecond, cost: 3, allowed: true, remaining: 0, reset: 900 * time.Millisecond},
		}},
		{"GCRA_PenaltyBlock", ratelimit.Limit{Algorithm: ratelimit.GCRA, Rate: 2, Period: 400 * time.Millisecond, Block: 1200 * time.Millisecond}, []leanStep{
			{cost: 2, allowed: true, remaining: 0, reset: 400 * time.Millisecond},
			{cost: 1, reset: 1200 * time.Millisecond, retry: 1200 * time.Millisecond, blocked: true},
			{sleep: 600 * time.Millisecond, cost: 1, reset: 600 * time.Millisecond, retry: 600 * time.Millisecond, blocked: true},
			{sleep: 650 * time.Millisecond, cost: 1, allowed: true, remaining: 1, reset: 200 * time.Millisecond},
		}},
	}
	ctx := context.Background()
	for name, newStore := range leanBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, seq := range sequences {
				t.Run(seq.name, func(t *testing.T) {
					t.Parallel()
					store, _ := newStore(t)
					out := make([]ratelimit.LimitResult, 1)
					// attempt runs the sequence on a fresh identity; a
					// mismatch counts only when every step so far started on
					// time: a loaded machine oversleeps by 100 ms and more,
					// which moves a step across a window's end (late: try
					// again, up to leanAttempts times).
					attempt := func(n int) (mismatch string, late bool) {
						key := fmt.Sprintf("id-%d", n)
						start, planned := time.Now(), time.Duration(0)
						for i, st := range seq.steps {
							time.Sleep(st.sleep)
							planned += st.sleep
							if time.Since(start)-planned > leanLate {
								late = true
							}
							t0 := time.Now()
							if err := store.Check(ctx, ratelimit.CheckRequest{Key: key, Limits: []ratelimit.Limit{seq.limit}, Cost: st.cost}, out); err != nil {
								t.Fatal(err)
							}
							planned += time.Since(t0) // the check's own time is no lateness
							r := out[0]
							if r.Allowed != st.allowed || r.Remaining != st.remaining || r.Blocked != st.blocked ||
								(st.reset != 0 && !near(r.ResetAfter, st.reset)) || !near(r.RetryAfter, st.retry) {
								return fmt.Sprintf("step %d (cost %d): got allowed %v remaining %d reset %v retry %v blocked %v; want %+v",
									i, st.cost, r.Allowed, r.Remaining, r.ResetAfter, r.RetryAfter, r.Blocked, st), late
							}
						}
						return "", false
					}
					for n := range leanAttempts {
						mismatch, late := attempt(n)
						switch {
						case mismatch == "":
							return
						case !late:
							t.Fatal(mismatch)
						case n == leanAttempts-1:
							t.Fatalf("%s (every one of %d attempts started a step late: the machine is too loaded to tell)", mismatch, leanAttempts)
						}
						t.Logf("attempt %d started a step over %v late, then: %s; again", n, leanLate, mismatch)
					}
				})
			}
		})
	}
}

// A fixed window or GCRA limit checked alone (lean_fw.lua, lean_gcra.lua)
// and together with another limit (check.lua) is one state: an identity
// that alternates both kinds of check gets exactly the rate, not twice it.
func TestLean_OneLimitAndMultiLimitChecksShareOneWindow(t *testing.T) {
	for name, newStore := range leanBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store, _ := newStore(t)
			for _, fw := range []ratelimit.Limit{
				{Name: "fw", Rate: 40, Period: time.Minute, Block: time.Minute},
				{Name: "gcra", Algorithm: ratelimit.GCRA, Rate: 40, Period: time.Hour, Burst: 40, Block: time.Minute},
			} {
				shareOneWindow(t, store, fw)
			}
		})
	}
}

func shareOneWindow(t *testing.T, store *redisstore.Store, fw ratelimit.Limit) {
	t.Helper()
	ctx := context.Background()
	wide := ratelimit.Limit{Name: "wide", Algorithm: ratelimit.TokenBucket, Rate: 1 << 20, Period: time.Second}
	out := make([]ratelimit.LimitResult, 2)
	allowed := 0
	for i := 0; i < 100; i++ {
		limits := []ratelimit.Limit{fw}
		if i%2 == 1 {
			limits = append(limits, wide)
		}
		if err := store.Check(ctx, ratelimit.CheckRequest{Key: "alt-" + fw.Name, Limits: limits, Cost: 1}, out[:len(limits)]); err != nil {
			t.Fatal(err)
		}
		if out[0].Allowed {
			allowed++
		}
		if i >= 40 && !out[0].Blocked {
			t.Fatalf("%s: check %d (%d limits) past the rate is not blocked: %+v", fw.Algorithm, i, len(limits), out[0])
		}
	}
	if allowed != 40 {
		t.Fatalf("%s: allowed %d of 100 alternating one- and two-limit checks, want exactly the rate 40", fw.Algorithm, allowed)
	}
	// A peek (cost 0, the general script) sees the same state.
	if err := store.Check(ctx, ratelimit.CheckRequest{Key: "alt-" + fw.Name, Limits: []ratelimit.Limit{fw}}, out[:1]); err != nil {
		t.Fatal(err)
	}
	if out[0].Allowed || !out[0].Blocked {
		t.Fatalf("%s: peek after the block: %+v, want blocked", fw.Algorithm, out[0])
	}
}

// Reset clears a lean window and its penalty block on every store sharing
// the Redis, and Info and Top see lean identities.
func TestLean_ResetInfoTopSeeTheWindowKeys(t *testing.T) {
	for name, newStore := range leanBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, lim := range []ratelimit.Limit{
				{Name: "login", Rate: 3, Period: 15 * time.Minute, Block: time.Hour},
				{Name: "login", Algorithm: ratelimit.GCRA, Rate: 3, Period: 15 * time.Minute, Block: time.Hour},
			} {
				store, client := newStore(t)
				resetInfoTop(t, store, client, lim)
			}
		})
	}
}

func resetInfoTop(t *testing.T, store *redisstore.Store, client redis.UniversalClient, lim ratelimit.Limit) {
	t.Helper()
	ctx := context.Background()
	out := make([]ratelimit.LimitResult, 1)
	for i := 0; i < 5; i++ {
		if err := store.Check(ctx, ratelimit.CheckRequest{Key: "ip:1", Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil {
			t.Fatal(err)
		}
	}
	if !out[0].Blocked {
		t.Fatalf("not blocked after 5 of 3: %+v", out[0])
	}
	info, err := store.Info(ctx, "ip:1")
	if err != nil || !info.Exists || info.Hits < 3 || info.BlockedFor < 59*time.Minute {
		t.Fatalf("info of a blocked lean identity: %+v, %v", info, err)
	}
	top, err := store.Top(ctx, 5)
	if err != nil || len(top) != 1 || top[0].Key != "ip:1" || top[0].Hits < 3 {
		t.Fatalf("top: %+v, %v", top, err)
	}
	// Another process (a store of its own, same prefix) resets it.
	other := redisstore.New(client, redisstore.Options{Prefix: strings.TrimSuffix(store.Key("x"), "{x}")})
	existed, err := other.Reset(ctx, "ip:1")
	if err != nil || !existed {
		t.Fatalf("reset: %v, %v", existed, err)
	}
	if err := store.Check(ctx, ratelimit.CheckRequest{Key: "ip:1", Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil {
		t.Fatal(err)
	}
	if !out[0].Allowed || out[0].Remaining != 2 {
		t.Fatalf("%s after reset: %+v, want allowed with 2 left", lim.Algorithm, out[0])
	}
}

// A window key holding something else (another type, or not a number) is
// replaced by a fresh window, never an error.
func TestLean_ForeignValueInTheWindowKeyIsReplaced(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	store := redisstore.New(c, redisstore.Options{})
	lim := ratelimit.Limit{Name: "x", Rate: 10, Period: time.Minute}
	out := make([]ratelimit.LimitResult, 2)
	if err := store.Check(ctx, ratelimit.CheckRequest{Key: "f", Limits: []ratelimit.Limit{lim}, Cost: 1}, out[:1]); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "rl:{f}:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("window keys: %q, %v", keys, err)
	}
	for _, write := range []func(){
		func() { c.Set(ctx, keys[0], "junk", 0) },
		func() { c.Del(ctx, keys[0]); c.HSet(ctx, keys[0], "a", 1) },
		func() { c.Set(ctx, keys[0], "2", 0) }, // a number without expiry
	} {
		write()
		for _, limits := range [][]ratelimit.Limit{{lim}, {lim, ratelimit.PerMinute(100)}} {
			if err := store.Check(ctx, ratelimit.CheckRequest{Key: "f", Limits: limits, Cost: 1}, out[:len(limits)]); err != nil {
				t.Fatalf("%d-limit check over a foreign value: %v", len(limits), err)
			}
			if !out[0].Allowed {
				t.Fatalf("%d-limit check over a foreign value denied: %+v", len(limits), out[0])
			}
		}
		if ttl := c.PTTL(ctx, keys[0]).Val(); ttl <= 0 {
			t.Fatalf("the window key has no TTL after the checks: %v", ttl)
		}
	}
}

// Three stores (three proxies, each its own client) × 100 goroutines on one
// identity: exactly the rate is allowed, for a fixed window and GCRA,
// through one-limit checks (plain commands or the lean scripts, batched by
// the default store) and two-limit checks.
func TestLean_ExactWithThreeProxiesOnOneIdentity(t *testing.T) {
	const rate = 500
	for name, newStore := range leanBackends(t) {
		for _, lim := range []ratelimit.Limit{
			{Name: "hot", Rate: rate, Period: time.Hour},
			{Name: "hot", Algorithm: ratelimit.GCRA, Rate: rate, Period: time.Hour},
		} {
			t.Run(name+"/"+lim.Algorithm.String(), func(t *testing.T) { exactOnOneIdentity(t, newStore, lim, rate) })
		}
	}
}

func exactOnOneIdentity(t *testing.T, newStore func(t *testing.T) (*redisstore.Store, redis.UniversalClient), lim ratelimit.Limit, rate int64) {
	wide := ratelimit.Limit{Name: "wide", Algorithm: ratelimit.GCRA, Rate: 1 << 30, Period: time.Second, Burst: 1 << 30}
	first, _ := newStore(t)
	prefix := strings.TrimSuffix(first.Key("x"), "{x}")
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for p := 0; p < 3; p++ {
		_, client := newStore(t)
		store := redisstore.New(client, redisstore.Options{Prefix: prefix})
		for g := 0; g < 100; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := make([]ratelimit.LimitResult, 2)
				for n := 0; n < 4; n++ {
					limits := []ratelimit.Limit{lim}
					if (g+n)%3 == 0 {
						limits = append(limits, wide)
					}
					if err := store.Check(context.Background(), ratelimit.CheckRequest{Key: "tenant:acme", Limits: limits, Cost: 1}, out[:len(limits)]); err != nil {
						t.Error(err)
						return
					}
					if out[0].Allowed {
						allowed.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	if got := allowed.Load(); got != rate {
		t.Fatalf("allowed %d of 1200 checks, want exactly %d", got, rate)
	}
}

// The lean script and the general driver's algorithm 5 answer a random
// sequence of one-limit checks alike: one identity is checked alone (lean
// script), its twin together with a limit that never denies (check.lua),
// step by step, with costs around the rate and windows and blocks that end
// during the run.
func TestLean_ScriptAndGeneralDriverAgree(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	store := redisstore.New(srv.Client(t), redisstore.Options{Pipeline: -1})
	wide := ratelimit.Limit{Name: "wide", Algorithm: ratelimit.TokenBucket, Rate: 1 << 30, Period: time.Second}
	limits := []ratelimit.Limit{
		{Name: "a", Rate: 4, Period: 250 * time.Millisecond},
		{Name: "b", Rate: 3, Period: 200 * time.Millisecond, Block: 450 * time.Millisecond},
		{Name: "c", Rate: 5, Period: 500 * time.Millisecond, Block: 150 * time.Millisecond},
		{Name: "g", Algorithm: ratelimit.GCRA, Rate: 4, Period: 400 * time.Millisecond, Burst: 3},
		{Name: "h", Algorithm: ratelimit.GCRA, Rate: 2, Period: 300 * time.Millisecond, Burst: 2, Block: 350 * time.Millisecond},
	}
	for li, lim := range limits {
		rng := rand.New(rand.NewPCG(uint64(li), 11))
		alone, twin := fmt.Sprint("alone-", li), fmt.Sprint("twin-", li)
		a, b := make([]ratelimit.LimitResult, 1), make([]ratelimit.LimitResult, 2)
		// The twins' windows and blocks start a moment apart (the time
		// between their checks, milliseconds on a loaded machine): no pair
		// of checks may straddle the end of one, so every pause that would
		// end near one is stretched past it, and times agree to slack. A
		// pair checked further apart than slack/2 (a stalled machine) may
		// have started a window or block that much apart even when its two
		// answers agree (each is relative to its own check): the twins then
		// start again from nothing.
		const slack = 40 * time.Millisecond
		var ends []time.Time
		resyncs, stalls := 0, 0
		resync := func() {
			if _, err := store.Reset(ctx, alone); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Reset(ctx, twin); err != nil {
				t.Fatal(err)
			}
			ends = ends[:0]
		}
		defer func() {
			if resyncs > 12 {
				t.Errorf("limit %s: %d of 120 steps straddled an end: the comparison says little", lim.Name, resyncs)
			}
			if compared := 120 - resyncs - stalls; compared < 60 {
				t.Errorf("limit %s: %d of 120 steps compared (%d stalled, %d straddled an end): the comparison says little", lim.Name, compared, stalls, resyncs)
			}
		}()
		for step := 0; step < 120; step++ {
			pause := time.Duration(0)
			if rng.IntN(4) == 0 {
				pause = time.Duration(rng.IntN(120)) * time.Millisecond
			}
			for again := true; again; {
				again = false
				at := time.Now().Add(pause)
				for _, e := range ends {
					if at.After(e.Add(-slack)) && at.Before(e.Add(slack)) {
						pause, again = time.Until(e)+slack, true
						break
					}
				}
			}
			time.Sleep(pause)
			cost := int64(1 + rng.IntN(3))
			if rng.IntN(15) == 0 {
				cost = lim.Rate + 1
			}
			stall := rng.IntN(20) == 0
			now := time.Now()
			if err := store.Check(ctx, ratelimit.CheckRequest{Key: alone, Limits: []ratelimit.Limit{lim}, Cost: cost}, a); err != nil {
				t.Fatal(err)
			}
			if stall {
				// A pair a loaded machine holds apart, made on purpose:
				// the twin is checked well after its sibling.
				time.Sleep(2 * slack)
			}
			if err := store.Check(ctx, ratelimit.CheckRequest{Key: twin, Limits: []ratelimit.Limit{lim, wide}, Cost: cost}, b); err != nil {
				t.Fatal(err)
			}
			took := time.Since(now)
			x, y := a[0], b[0]
			d := x.ResetAfter - y.ResetAfter
			// GCRA's remaining grows by one every interval: twins a moment
			// apart may stand on either side of such an instant.
			dr := x.Remaining - y.Remaining
			if lim.Algorithm == ratelimit.FixedWindow && dr != 0 || dr > 1 || dr < -1 {
				dr = 99
			} else {
				dr = 0
			}
			if took > slack/2 {
				// Whatever the answers: the twins may stand apart from here on.
				stalls++
				resync()
				continue
			}
			if x.Allowed != y.Allowed || dr != 0 || x.Blocked != y.Blocked ||
				(x.RetryAfter < 0) != (y.RetryAfter < 0) || d > slack || d < -slack {
				if min(x.ResetAfter, y.ResetAfter) < slack {
					// The pair straddled an end after all (a loaded machine
					// stalled it before the pair): the twins start again
					// from nothing.
					resyncs++
					resync()
					continue
				}
				t.Fatalf("limit %s step %d cost %d: lean script %+v, general driver %+v", lim.Name, step, cost, x, y)
			}
			live := ends[:0]
			for _, e := range ends {
				if e.After(now) {
					live = append(live, e)
				}
			}
			ends = append(live, now.Add(x.ResetAfter))
			if x.RetryAfter > 0 {
				ends = append(ends, now.Add(x.RetryAfter)) // when the next request passes
			}
			if x.Blocked {
				ends = append(ends, now.Add(lim.Block), now.Add(x.RetryAfter))
			}
		}
	}
}

// cancelAfterPipeline is a go-redis hook that ends the caller's context as
// soon as the replies of a check's pipeline (the one with the INCRBY) are
// in: the moment a budget runs out on a loaded proxy, between two round
// trips of one check. Other pipelines (a new connection's handshake) pass.
type cancelAfterPipeline struct{ cancel context.CancelFunc }

func (h cancelAfterPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h cancelAfterPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h cancelAfterPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if cmd.Name() == "incrby" {
				h.cancel()
			}
		}
		return err
	}
}

// A fixed window's counter must never be left without its TTL, whatever
// instant the check's context ends at: a counter without expiry is kept by
// Redis for ever, and an attacker who sends one request from each of many
// addresses while the store is slow would grow Redis without bound.
func TestLean_ACheckCutShortNeverLeavesACounterWithoutExpiry(t *testing.T) {
	srv := redistest.StartRedis(t)
	ctx := context.Background()
	check, cancel := context.WithCancel(ctx)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	c.AddHook(cancelAfterPipeline{cancel: cancel})
	store := redisstore.New(c, redisstore.Options{Prefix: uniquePrefix(t), Pipeline: -1})
	lim := ratelimit.Limit{Name: "api", Algorithm: ratelimit.FixedWindow, Rate: 100, Period: time.Hour}
	out := make([]ratelimit.LimitResult, 1)
	_ = store.Check(check, ratelimit.CheckRequest{Key: "one-shot", Limits: []ratelimit.Limit{lim}, Cost: 1}, out) // may fail: its context ended
	keys, err := c.Keys(ctx, store.Key("one-shot")+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys of the identity: %q, %v", keys, err)
	}
	for _, k := range keys {
		if ttl, err := c.PTTL(ctx, k).Result(); err != nil || ttl <= 0 {
			t.Errorf("%s: PTTL %v, %v; want the window's expiry", k, ttl, err)
		}
	}
}
