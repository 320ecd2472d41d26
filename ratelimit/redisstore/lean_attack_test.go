package redisstore_test

// Attacks on the lean layout (lean.go): inputs and timings a hostile client
// or a careless caller can produce, each against a real redis-server or the
// real 3-master cluster.

import (
	"context"
	"math"
	"slices"
	"strconv"
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

// An identity whose hash tag would be empty ("" or one starting with "}":
// "<prefix>{}..." makes Redis hash the whole key) must still keep all its
// keys in one slot: multi-limit checks, Reset, Info and Top work on a
// cluster as for any other identity.
func TestLeanAttack_IdentityWithAnEmptyHashTagStaysInOneSlot(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t)
	c := cl.Client(t)
	store := redisstore.New(c, redisstore.Options{Prefix: uniquePrefix(t)})
	fw := ratelimit.Limit{Name: "fw", Rate: 2, Period: time.Hour}
	gc := ratelimit.Limit{Name: "gc", Algorithm: ratelimit.GCRA, Rate: 100, Period: time.Hour}
	for _, key := range []string{"}", "}abc", "", "}{", "=}x", "=", "a}b", "x{y}", "*?[\\"} {
		out := make([]ratelimit.LimitResult, 2)
		for i := 0; i < 3; i++ {
			if err := store.Check(ctx, ratelimit.CheckRequest{Key: key, Limits: []ratelimit.Limit{fw, gc}, Cost: 1}, out); err != nil {
				t.Fatalf("identity %q: two-limit check: %v", key, err)
			}
			if want := i < 2; out[0].Allowed != want {
				t.Fatalf("identity %q: check %d allowed=%v, want %v", key, i, out[0].Allowed, want)
			}
		}
		info, err := store.Info(ctx, key)
		if err != nil || !info.Exists || info.Hits < 2 {
			t.Fatalf("identity %q: info %+v, %v", key, info, err)
		}
		if existed, err := store.Reset(ctx, key); err != nil || !existed {
			t.Fatalf("identity %q: reset %v, %v", key, existed, err)
		}
		if err := store.Check(ctx, ratelimit.CheckRequest{Key: key, Limits: []ratelimit.Limit{fw}, Cost: 1}, out[:1]); err != nil || !out[0].Allowed || out[0].Remaining != 1 {
			t.Fatalf("identity %q after reset: %+v, %v", key, out[0], err)
		}
	}
	top, err := store.Top(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, cons := range top {
		seen[cons.Key] = true
	}
	for _, key := range []string{"}", "}abc", "", "=}x", "=", "a}b", "x{y}"} {
		if !seen[key] {
			t.Errorf("top misses identity %q: %+v", key, top)
		}
	}
}

// A cost far above any rate (a library caller's CheckN, or a policy with a
// huge max_cost) is denied with retry -1 and consumes nothing; it must not
// wrap the counter into its penalty MARK, overflow it, or corrupt a GCRA
// value so that a block in force is forgotten.
func TestLeanAttack_HugeCostIsDeniedAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	for name, newStore := range leanBackends(t) {
		for _, lim := range []ratelimit.Limit{
			{Name: "fw", Rate: 10, Period: time.Hour},
			{Name: "fwb", Rate: 10, Period: time.Hour, Block: time.Hour},
			{Name: "gc", Algorithm: ratelimit.GCRA, Rate: 10, Period: time.Hour},
			{Name: "gcb", Algorithm: ratelimit.GCRA, Rate: 10, Period: time.Hour, Block: time.Hour},
		} {
			for _, cost := range []int64{1 << 48, 1 << 50, 1<<53 + 1, math.MaxInt64} {
				for _, multi := range []bool{false, true} {
					t.Run(name, func(t *testing.T) {
						store, _ := newStore(t)
						limits := []ratelimit.Limit{lim}
						if multi {
							limits = append(limits, ratelimit.Limit{Name: "wide", Algorithm: ratelimit.GCRA, Rate: 1 << 30, Period: time.Second, Burst: 1 << 30})
						}
						out := make([]ratelimit.LimitResult, len(limits))
						check := func(cost int64) {
							t.Helper()
							if err := store.Check(ctx, ratelimit.CheckRequest{Key: "k", Limits: limits, Cost: cost}, out); err != nil {
								t.Fatalf("%s cost %d: %v", lim.Name, cost, err)
							}
						}
						check(4)
						check(cost)
						if out[0].Allowed || out[0].RetryAfter != -1 {
							t.Fatalf("%s multi=%v: cost %d against rate 10: %+v, want denied with retry -1", lim.Name, multi, cost, out[0])
						}
						check(1)
						if lim.Block > 0 {
							if out[0].Allowed || !out[0].Blocked {
								t.Fatalf("%s multi=%v: after cost %d started a block: %+v, want blocked", lim.Name, multi, cost, out[0])
							}
							return
						}
						if !out[0].Allowed || out[0].Remaining != 5 {
							t.Fatalf("%s multi=%v: after cost %d was denied: %+v, want allowed with 5 left", lim.Name, multi, cost, out[0])
						}
					})
				}
			}
		}
	}
}

// isRegistration reports whether cmd is the registration of a lean limit
// id (register.lua on the registry key).
func isRegistration(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 4 || !strings.HasPrefix(strings.ToLower(cmd.Name()), "eval") {
		return false
	}
	key, _ := args[3].(string)
	return strings.HasSuffix(key, "lean-ids")
}

// delayRegistration holds the first registration command of a lean limit
// id by a client for a while (once: the script's EVALSHA and the EVAL that
// follows a NOSCRIPT share one ClientTimeout): the background registration
// lags the first checks.
type delayRegistration struct {
	wait    time.Duration // below ClientTimeout: the registration succeeds, late
	release chan struct{}
	done    *atomic.Bool
}

func (h delayRegistration) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h delayRegistration) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isRegistration(cmd) && h.done.CompareAndSwap(false, true) {
			select {
			case <-h.release:
			case <-time.After(h.wait):
			}
		}
		return next(ctx, cmd)
	}
}
func (h delayRegistration) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A Reset by another process (the CLI, another proxy) right after an
// identity's first check must delete its window, even when the check's
// store has not written the limit id to the registry yet (slow Redis,
// registry master busy): otherwise the reset answers "nothing there" and
// the identity stays limited.
func TestLeanAttack_ResetRightAfterTheFirstCheckFindsTheWindow(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	for _, lim := range []ratelimit.Limit{
		{Name: "login", Rate: 2, Period: time.Hour},
		{Name: "login", Algorithm: ratelimit.GCRA, Rate: 2, Period: time.Hour},
	} {
		prefix := uniquePrefix(t) + lim.Algorithm.String() + ":"
		slow := srv.Client(t)
		release := make(chan struct{})
		slow.AddHook(delayRegistration{wait: 500 * time.Millisecond, release: release, done: &atomic.Bool{}})
		proxy := redisstore.New(slow, redisstore.Options{Prefix: prefix})
		cli := redisstore.New(srv.Client(t), redisstore.Options{Prefix: prefix})
		out := make([]ratelimit.LimitResult, 1)
		for i := 0; i < 3; i++ {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := proxy.Check(cctx, ratelimit.CheckRequest{Key: "ip:1", Limits: []ratelimit.Limit{lim}, Cost: 1}, out)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		if out[0].Allowed {
			t.Fatalf("%s: third check of 2 allowed", lim.Algorithm)
		}
		existed, err := cli.Reset(ctx, "ip:1")
		close(release)
		if err != nil || !existed {
			t.Fatalf("%s: reset by another process right after the checks: existed=%v, %v; want the window deleted", lim.Algorithm, existed, err)
		}
		if err := proxy.Check(ctx, ratelimit.CheckRequest{Key: "ip:1", Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil || !out[0].Allowed {
			t.Fatalf("%s: check after the reset: %+v, %v; want allowed", lim.Algorithm, out[0], err)
		}
	}
}

// Every key the layout writes expires by itself, the registry of limit ids
// too (with its last id): after plain, lean-script and multi-limit checks,
// denials, blocks and costs above the rate, no key of the prefix has
// PTTL -1.
func TestLeanAttack_EveryKeyExpires(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	prefix := uniquePrefix(t)
	limits := []ratelimit.Limit{
		{Name: "fw", Rate: 3, Period: time.Hour},
		{Name: "fwb", Rate: 3, Period: time.Hour, Block: time.Hour},
		{Name: "gc", Algorithm: ratelimit.GCRA, Rate: 3, Period: time.Hour},
		{Name: "gcb", Algorithm: ratelimit.GCRA, Rate: 3, Period: time.Hour, Block: time.Hour},
		{Name: "sw", Algorithm: ratelimit.SlidingWindow, Rate: 3, Period: time.Hour},
	}
	for _, opts := range []redisstore.Options{{Prefix: prefix}, {Prefix: prefix, Pipeline: -1}} {
		store := redisstore.New(c, opts)
		out := make([]ratelimit.LimitResult, 2)
		for i, lim := range limits {
			for _, cost := range []int64{1, 1, 2, 5, 1, 1 << 50} {
				for _, multi := range [][]ratelimit.Limit{{lim}, {lim, limits[(i+1)%len(limits)]}} {
					if err := store.Check(ctx, ratelimit.CheckRequest{Key: "id:" + lim.Name, Limits: multi, Cost: cost}, out[:len(multi)]); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	time.Sleep(100 * time.Millisecond) // the background registration
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) < 5 {
		t.Fatalf("keys: %q, %v", keys, err)
	}
	if !slices.Contains(keys, prefix+"lean-ids") {
		t.Fatalf("keys %q: no registry", keys)
	}
	for _, k := range keys {
		if ttl := c.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("key %q has PTTL %v", k, ttl)
		}
	}
}

// holdScriptReplies holds the reply of each script call (EVALSHA) while
// armed, until released: a check in flight while something else happens.
type holdScriptReplies struct {
	armed   *atomic.Bool
	arrived chan struct{}
	release chan struct{}
}

func (h holdScriptReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h holdScriptReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if strings.HasPrefix(cmd.Name(), "eval") && !isRegistration(cmd) && h.armed.CompareAndSwap(true, false) {
			h.arrived <- struct{}{}
			<-h.release
		}
		return err
	}
}
func (h holdScriptReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A check in flight during a Reset must not put its (pre-reset) block into
// the limiter's blocked cache after the reset cleared it: the identity,
// reset in the store, would stay blocked by this proxy for the rest of the
// block (an hour here).
func TestLeanAttack_ABlockAnsweredDuringAResetIsNotCached(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	hold := holdScriptReplies{armed: &atomic.Bool{}, arrived: make(chan struct{}), release: make(chan struct{})}
	c.AddHook(hold)
	store := redisstore.New(c, redisstore.Options{Prefix: uniquePrefix(t)})
	l := ratelimit.New(store, ratelimit.Options{BlockedCacheSize: 64})
	login := ratelimit.Limit{Name: "login", Rate: 1, Period: time.Minute, Block: time.Hour}
	for i := 0; i < 2; i++ {
		if _, err := l.Allow(ctx, "ip:9", login); err != nil {
			t.Fatal(err)
		}
	}
	// The block is in the store; the cache is emptied by a reset and the
	// store blocked again, so the next check goes to the store.
	if _, err := l.Reset(ctx, "ip:9"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := store.Check(ctx, ratelimit.CheckRequest{Key: "ip:9", Limits: []ratelimit.Limit{login}, Cost: 1}, make([]ratelimit.LimitResult, 1)); err != nil {
			t.Fatal(err)
		}
	}
	hold.armed.Store(true)
	done := make(chan ratelimit.Result)
	go func() {
		r, _ := l.Allow(ctx, "ip:9", login)
		done <- r
	}()
	<-hold.arrived // the store answered "blocked"; the limiter has not seen it yet
	if _, err := l.Reset(ctx, "ip:9"); err != nil {
		t.Fatal(err)
	}
	close(hold.release)
	if r := <-done; r.Allowed {
		t.Fatalf("the check in flight: %+v, want the store's pre-reset denial", r)
	}
	if r, err := l.Allow(ctx, "ip:9", login); err != nil || !r.Allowed {
		t.Fatalf("after the reset: %+v (source %v), %v; want allowed by the store", r, r.Source, err)
	}
}

// The first check of a new limit id waits for its registration only within
// its budget: with the registry's node slow or hanging, it still has time
// to run and is answered, never failed by its own deadline.
func TestLeanAttack_ASlowRegistryNeverFailsTheFirstCheck(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	slow := srv.Client(t)
	release := make(chan struct{})
	defer close(release)
	slow.AddHook(delayRegistration{wait: 800 * time.Millisecond, release: release, done: &atomic.Bool{}})
	store := redisstore.New(slow, redisstore.Options{Prefix: uniquePrefix(t)})
	if err := store.Ping(ctx); err != nil { // a connection is up: the check's budget is its own
		t.Fatal(err)
	}
	out := make([]ratelimit.LimitResult, 1)
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err := store.Check(cctx, ratelimit.CheckRequest{Key: "ip:1", Limits: []ratelimit.Limit{{Name: "api", Rate: 5, Period: time.Minute}}, Cost: 1}, out)
	if err != nil || !out[0].Allowed {
		t.Fatalf("first check with the registry slow: %+v, %v; want allowed within its 300 ms", out[0], err)
	}
}

// Three stores × 100 goroutines on one identity with costs 1 to 3 (plain
// commands, the lean script, the batched script and two-limit checks on
// the same window, with and without a penalty block): never more than the
// rate is spent, and a denial from below the rate is taken back, so
// cost-1 checks afterwards fill the window exactly to the rate.
func TestLeanAttack_MixedCostsSpendExactlyTheRate(t *testing.T) {
	const rate = 400
	wide := ratelimit.Limit{Name: "wide", Algorithm: ratelimit.GCRA, Rate: 1 << 30, Period: time.Second, Burst: 1 << 30}
	for name, newStore := range leanBackends(t) {
		for _, lim := range []ratelimit.Limit{
			{Name: "hot", Rate: rate, Period: time.Hour},
			{Name: "hot", Algorithm: ratelimit.GCRA, Rate: rate, Period: time.Hour},
		} {
			t.Run(name+"/"+lim.Algorithm.String(), func(t *testing.T) {
				first, _ := newStore(t)
				prefix := strings.TrimSuffix(first.Key("x"), "{x}")
				var spent atomic.Int64
				var wg sync.WaitGroup
				stores := make([]*redisstore.Store, 3)
				for p := range stores {
					_, client := newStore(t)
					stores[p] = redisstore.New(client, redisstore.Options{Prefix: prefix, Pipeline: []int{0, -1, 2}[p]})
				}
				check := func(store *redisstore.Store, limits []ratelimit.Limit, cost int64) bool {
					out := make([]ratelimit.LimitResult, len(limits))
					if err := store.Check(context.Background(), ratelimit.CheckRequest{Key: "t", Limits: limits, Cost: cost}, out); err != nil {
						t.Error(err)
						return false
					}
					if out[0].Allowed {
						spent.Add(cost)
					}
					return out[0].Allowed
				}
				for p := range stores {
					for g := 0; g < 100; g++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for n := 0; n < 4; n++ {
								limits := []ratelimit.Limit{lim}
								if (g+n)%3 == 0 {
									limits = append(limits, wide)
								}
								check(stores[p], limits, int64(1+(g*7+n)%3))
							}
						}()
					}
				}
				wg.Wait()
				if got := spent.Load(); got > rate {
					t.Fatalf("spent %d of %d", got, rate)
				}
				for i := 0; spent.Load() < rate+5 && i < rate; i++ {
					if !check(stores[i%3], []ratelimit.Limit{lim}, 1) {
						break
					}
				}
				if got := spent.Load(); got != rate {
					t.Fatalf("spent %d after filling with cost 1, want exactly %d", got, rate)
				}
			})
		}
	}
}

// The registry can be lost while the proxies run (a restart without
// persistence, FLUSHALL, a failover to a replica that missed the write);
// the proxies write it again within seconds, so a Reset by another process
// soon after finds the windows written since.
func TestLeanAttack_ALostRegistryIsWrittenAgainSoon(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	prefix := uniquePrefix(t)
	proxy := redisstore.New(c, redisstore.Options{Prefix: prefix})
	cli := redisstore.New(srv.Client(t), redisstore.Options{Prefix: prefix})
	lim := ratelimit.Limit{Name: "login", Rate: 1, Period: time.Hour}
	out := make([]ratelimit.LimitResult, 1)
	checkIP := func(ip string) {
		t.Helper()
		if err := proxy.Check(ctx, ratelimit.CheckRequest{Key: ip, Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil {
			t.Fatal(err)
		}
	}
	checkIP("ip:1")
	if err := c.FlushAll(ctx).Err(); err != nil { // the registry and every window are gone
		t.Fatal(err)
	}
	checkIP("ip:2")
	time.Sleep(1500 * time.Millisecond)
	checkIP("ip:3")
	checkIP("ip:3") // denied: ip:3 is limited
	if out[0].Allowed {
		t.Fatal("second check of 1 allowed")
	}
	deadline := time.Now().Add(time.Second) // the background registration of the proxy
	for {
		existed, err := cli.Reset(ctx, "ip:3")
		if err != nil {
			t.Fatal(err)
		}
		if existed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("reset by another process 1.5 s after the registry was lost: nothing found, ip:3 stays limited")
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkIP("ip:3")
	if !out[0].Allowed {
		t.Fatalf("ip:3 after the reset: %+v", out[0])
	}
}

// A Redis that forgot its scripts (restart, SCRIPT FLUSH) under load:
// every path (lean scripts alone and batched, the general script batched
// with them, on a cluster too) loads them again; no check fails, and the
// counts stay exact.
func TestLeanAttack_ScriptsForgottenUnderLoadAreLoadedAgain(t *testing.T) {
	ctx := context.Background()
	for name, newStore := range leanBackends(t) {
		t.Run(name, func(t *testing.T) {
			store, client := newStore(t)
			limits := []ratelimit.Limit{
				{Name: "fw", Rate: 1000, Period: time.Hour, Block: time.Hour},
				{Name: "gc", Algorithm: ratelimit.GCRA, Rate: 1000, Period: time.Hour},
			}
			var allowed [2]atomic.Int64
			var wg sync.WaitGroup
			flush := func() {
				if cc, ok := client.(*redis.ClusterClient); ok {
					_ = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.ScriptFlush(ctx).Err() })
					return
				}
				_ = client.ScriptFlush(ctx).Err()
			}
			for g := 0; g < 40; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out := make([]ratelimit.LimitResult, 2)
					for n := 0; n < 10; n++ {
						if g == 0 && n%3 == 0 {
							flush()
						}
						lim := limits[(g+n)%2]
						ls := []ratelimit.Limit{lim}
						if n%4 == 0 {
							ls = append(ls, ratelimit.Limit{Name: "sw", Algorithm: ratelimit.SlidingWindow, Rate: 1 << 20, Period: time.Hour})
						}
						if err := store.Check(ctx, ratelimit.CheckRequest{Key: "k", Limits: ls, Cost: 2}, out[:len(ls)]); err != nil {
							t.Errorf("check after SCRIPT FLUSH: %v", err)
							return
						}
						if out[0].Allowed {
							allowed[(g+n)%2].Add(2)
						}
					}
				}()
			}
			wg.Wait()
			info, err := store.Info(ctx, "k")
			if err != nil || info.Hits != max(allowed[0].Load(), allowed[1].Load()) {
				t.Fatalf("info %+v, %v; allowed %d and %d", info, err, allowed[0].Load(), allowed[1].Load())
			}
		})
	}
}

// With the registry's master down (a cluster), Reset and Info of an
// identity on a healthy master say so with an error, never "nothing
// there"; checks of identities on the healthy masters go on.
func TestLeanAttack_RegistryOnADeadMasterIsAnErrorNotAnEmptyAnswer(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t)
	c := cl.Client(t)
	prefix := uniquePrefix(t)
	store := redisstore.New(c, redisstore.Options{Prefix: prefix})
	registryNode := -1
	if m, err := c.MasterForKey(ctx, prefix+"lean-ids"); err == nil {
		for i, a := range cl.Addrs {
			if a == m.Options().Addr {
				registryNode = i
			}
		}
	}
	if registryNode < 0 {
		t.Fatal("no master for the registry key")
	}
	// An identity on another master.
	var key string
	for i := 0; key == ""; i++ {
		k := "ip:" + strings.Repeat("x", i)
		if store.Node(ctx, k) != cl.Addrs[registryNode] {
			key = k
		}
	}
	lim := ratelimit.Limit{Name: "login", Rate: 1, Period: time.Hour}
	out := make([]ratelimit.LimitResult, 1)
	for i := 0; i < 2; i++ {
		if err := store.Check(ctx, ratelimit.CheckRequest{Key: key, Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil {
			t.Fatal(err)
		}
	}
	cl.StopNode(registryNode)
	cli := redisstore.New(cl.Client(t), redisstore.Options{Prefix: prefix})
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if existed, err := cli.Reset(rctx, key); err == nil {
		t.Fatalf("reset with the registry's master down: existed=%v, no error", existed)
	}
	ictx, cancelInfo := context.WithTimeout(ctx, time.Second)
	defer cancelInfo()
	if info, err := cli.Info(ictx, key); err == nil {
		t.Fatalf("info with the registry's master down: %+v, no error", info)
	}
	cctx, cancelCheck := context.WithTimeout(ctx, 2*time.Second)
	defer cancelCheck()
	if err := store.Check(cctx, ratelimit.CheckRequest{Key: key, Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil || out[0].Allowed {
		t.Fatalf("check on a healthy master: %+v, %v; want denied", out[0], err)
	}
}

// Denied costs below 2^48 against a full window (the lean script) must
// not pile up in the counter until it reads as carrying the penalty MARK
// (2^50): the next check would take the MARK off and find the window all
// but empty.
func TestLeanAttack_DeniedBigCostsDoNotPileUpIntoTheMark(t *testing.T) {
	ctx := context.Background()
	for name, newStore := range leanBackends(t) {
		t.Run(name, func(t *testing.T) {
			store, _ := newStore(t)
			lim := ratelimit.Limit{Name: "fw", Rate: 10, Period: time.Hour}
			out := make([]ratelimit.LimitResult, 1)
			check := func(cost int64) {
				t.Helper()
				if err := store.Check(ctx, ratelimit.CheckRequest{Key: "k", Limits: []ratelimit.Limit{lim}, Cost: cost}, out); err != nil {
					t.Fatal(err)
				}
			}
			check(10)
			for i := 0; i < 5; i++ {
				check(1<<48 - 1)
				if out[0].Allowed {
					t.Fatalf("cost 2^48-1 against rate 10 allowed: %+v", out[0])
				}
			}
			check(1)
			if out[0].Allowed {
				t.Fatalf("a full window after denied big costs: %+v, want denied", out[0])
			}
		})
	}
}

// A policy edited many times (every edit of a limit is a new limit id) must
// not grow the registry for ever: every Reset and Info reads it whole and
// touches two keys per id. Ids whose keys are all gone leave it; the ids of
// limits in use, and their windows, stay and are found by a Reset.
func TestLeanAttack_PolicyEditsDoNotGrowTheRegistry(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	prefix := uniquePrefix(t)
	store := redisstore.New(c, redisstore.Options{Prefix: prefix})
	out := make([]ratelimit.LimitResult, 1)
	check := func(lim ratelimit.Limit, key string) {
		t.Helper()
		if err := store.Check(ctx, ratelimit.CheckRequest{Key: key, Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil {
			t.Fatal(err)
		}
	}
	// 30 edits of a short limit, then one long one that stays in use.
	for i := 0; i < 30; i++ {
		check(ratelimit.Limit{Name: "edit" + strconv.Itoa(i), Rate: int64(10 + i), Period: 100 * time.Millisecond}, "ip:1")
	}
	long := ratelimit.Limit{Name: "login", Rate: 1, Period: time.Hour, Block: time.Hour}
	check(long, "ip:2")
	check(long, "ip:2") // denied, blocked for an hour
	registry := prefix + "lean-ids"
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: registry %q", what, c.ZRange(ctx, registry, 0, -1).Val())
			}
		}
	}
	waitFor("31 ids registered", func() bool { return c.ZCard(ctx, registry).Val() == 31 })
	// The short ids' keys are gone after 100 ms; their registry entries
	// after the margin for rounding (5 s). The next registration prunes.
	time.Sleep(5200 * time.Millisecond)
	check(long, "ip:3")
	waitFor("only the id in use left", func() bool { return c.ZCard(ctx, registry).Val() == 1 })
	if ttl := c.PTTL(ctx, registry).Val(); ttl <= 59*time.Minute || ttl > time.Hour+10*time.Second {
		t.Fatalf("registry PTTL %v, want about the hour block", ttl)
	}
	cli := redisstore.New(srv.Client(t), redisstore.Options{Prefix: prefix})
	if existed, err := cli.Reset(ctx, "ip:2"); err != nil || !existed {
		t.Fatalf("reset of the blocked ip:2 by another process: existed=%v, %v", existed, err)
	}
	check(long, "ip:2")
	if !out[0].Allowed {
		t.Fatalf("ip:2 after the reset: %+v", out[0])
	}
}

// During an upgrade, older proxies still list their ids in the plain set
// `<prefix>limits`: a Reset by the new CLI must find their windows too.
func TestLeanAttack_ResetFindsTheWindowsOfOlderProxies(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	prefix := uniquePrefix(t)
	old := redisstore.New(c, redisstore.Options{Prefix: prefix})
	lim := ratelimit.Limit{Name: "login", Rate: 1, Period: time.Hour}
	out := make([]ratelimit.LimitResult, 1)
	for i := 0; i < 2; i++ {
		if err := old.Check(ctx, ratelimit.CheckRequest{Key: "ip:1", Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil {
			t.Fatal(err)
		}
	}
	// What an older version leaves: its id in the plain set, none in the sorted one.
	ids := c.ZRange(ctx, prefix+"lean-ids", 0, -1).Val()
	if len(ids) != 1 {
		t.Fatalf("registry %q", ids)
	}
	c.Del(ctx, prefix+"lean-ids")
	c.SAdd(ctx, prefix+"limits", ids[0])
	cli := redisstore.New(srv.Client(t), redisstore.Options{Prefix: prefix})
	if existed, err := cli.Reset(ctx, "ip:1"); err != nil || !existed {
		t.Fatalf("reset with the id only in the older set: existed=%v, %v; want the window deleted", existed, err)
	}
	if left := c.Keys(ctx, prefix+"{*").Val(); len(left) != 0 {
		t.Fatalf("keys of ip:1 left after the reset: %q", left)
	}
}
