package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/internal/storetest"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// uniquePrefix keeps tests that share a server apart.
func uniquePrefix(t *testing.T) string {
	return fmt.Sprintf("t%d:", time.Now().UnixNano())
}

func TestContract_Miniredis(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
		mr := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { c.Close() })
		return redisstore.New(c, redisstore.Options{Now: clock.Now})
	})
}

func TestContract_RealRedis(t *testing.T) {
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
		return redisstore.New(c, redisstore.Options{Now: clock.Now, Prefix: uniquePrefix(t), Pipeline: -1})
	})
}

func TestContract_RealCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	c := cl.Client(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
		return redisstore.New(c, redisstore.Options{Now: clock.Now, Prefix: uniquePrefix(t), Pipeline: -1})
	})
}

func TestAccuracy_RealRedis(t *testing.T) {
	srv := redistest.StartRedis(t)
	storetest.RunAccuracy(t, 3, 50, func(t *testing.T) ratelimit.Store {
		return redisstore.New(srv.Client(t), redisstore.Options{Pipeline: -1})
	})
}

func TestAccuracy_RealCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	storetest.RunAccuracy(t, 3, 50, func(t *testing.T) ratelimit.Store {
		return redisstore.New(cl.Client(t), redisstore.Options{Pipeline: -1})
	})
}

// TestCluster_KeysSpreadOverMastersAndTopSeesAll checks that identities land
// on every master (so Top must scan them all) and that multi-limit checks
// never fail with CROSSSLOT.
func TestCluster_KeysSpreadOverMastersAndTopSeesAll(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t)
	c := cl.Client(t)
	store := redisstore.New(c, redisstore.Options{})
	limits := []ratelimit.Limit{
		{Name: "a", Rate: 100, Period: time.Minute},
		{Name: "b", Algorithm: ratelimit.TokenBucket, Rate: 100, Period: time.Minute},
		{Name: "c", Algorithm: ratelimit.GCRA, Rate: 100, Period: time.Minute},
	}
	out := make([]ratelimit.LimitResult, len(limits))
	const keys = 60
	for i := 0; i < keys; i++ {
		for n := 0; n <= i%7; n++ {
			if err := store.Check(ctx, ratelimit.CheckRequest{Key: fmt.Sprint("user", i), Limits: limits, Cost: 1}, out); err != nil {
				t.Fatalf("check user%d: %v", i, err)
			}
		}
	}
	var mu sync.Mutex
	perMaster := map[string]int64{}
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		mu.Lock()
		perMaster[m.Options().Addr] = n
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(perMaster) != 3 {
		t.Fatalf("masters: %v", perMaster)
	}
	for addr, n := range perMaster {
		if n == 0 {
			t.Fatalf("master %s holds no key: %v", addr, perMaster)
		}
	}
	top, err := store.Top(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(top) != keys {
		t.Fatalf("top found %d keys, want %d (every master scanned)", len(top), keys)
	}
	if top[0].Hits != 7 || top[len(top)-1].Hits != 1 {
		t.Fatalf("top ordering: first %+v, last %+v", top[0], top[len(top)-1])
	}
}

func TestRedis_KeysExpireByThemselvesAndUseServerTime(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	store := redisstore.New(c, redisstore.Options{})
	lim := ratelimit.Limit{Algorithm: ratelimit.FixedWindow, Rate: 5, Period: 2 * time.Second}
	out := make([]ratelimit.LimitResult, 1)
	if err := store.Check(ctx, ratelimit.CheckRequest{Key: "exp", Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil {
		t.Fatal(err)
	}
	// A fixed window lives in a key of its own whose TTL is the window.
	keys, err := c.Keys(ctx, "rl:{exp}*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys of the identity: %q, %v", keys, err)
	}
	ttl, err := c.PTTL(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl < 1900*time.Millisecond || ttl > 2*time.Second {
		t.Fatalf("TTL = %v, want the window, 2s", ttl)
	}
	// Any other algorithm lives in the identity's value, its expiry kept in
	// whole seconds, rounded up, plus one.
	tb := ratelimit.Limit{Algorithm: ratelimit.TokenBucket, Rate: 1, Period: 2 * time.Second} // full again 2s after one request
	if err := store.Check(ctx, ratelimit.CheckRequest{Key: "exp", Limits: []ratelimit.Limit{tb}, Cost: 1}, out); err != nil {
		t.Fatal(err)
	}
	if ttl, err = c.PTTL(ctx, store.Key("exp")).Result(); err != nil {
		t.Fatal(err)
	}
	if ttl < 2*time.Second || ttl > 4*time.Second {
		t.Fatalf("TTL = %v, want [2s, 4s]", ttl)
	}
	if out[0].ResetAfter <= 0 || out[0].ResetAfter > 2*time.Second {
		t.Fatalf("reset after = %v, want (0, 2s]", out[0].ResetAfter)
	}
}

func TestRedis_ScriptReloadedAfterFlush(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	store := redisstore.New(c, redisstore.Options{})
	out := make([]ratelimit.LimitResult, 1)
	req := ratelimit.CheckRequest{Key: "s", Limits: []ratelimit.Limit{ratelimit.PerMinute(10)}, Cost: 1}
	if err := store.Check(ctx, req, out); err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := store.Check(ctx, req, out); err != nil {
		t.Fatalf("check after SCRIPT FLUSH (NOSCRIPT must fall back to EVAL): %v", err)
	}
	if out[0].Remaining != 8 {
		t.Fatalf("remaining %d, want 8", out[0].Remaining)
	}
}

func TestNewClient_URLs(t *testing.T) {
	for _, c := range []struct {
		url     string
		cluster bool
		wantErr string
	}{
		{url: "redis://127.0.0.1:6379/2"},
		{url: "redis://:secret@127.0.0.1:6379"},
		{url: "redis://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", cluster: true},
		{url: "redis+cluster://127.0.0.1:7000", cluster: true},
		{url: "redis+sentinel://127.0.0.1:26379/mymaster"},
		{url: "http://127.0.0.1", wantErr: "scheme"},
		{url: "redis+sentinel://127.0.0.1:26379", wantErr: "master name"},
		{url: "redis://127.0.0.1:7000,127.0.0.1:7001/3", wantErr: "bad database"},
		{url: "redis://:hunter2@[::1", wantErr: "xxxxx"},
	} {
		client, err := redisstore.NewClient(c.url)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%s: err = %v, want one containing %q without the password", c.url, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		_, isCluster := client.(*redis.ClusterClient)
		if isCluster != c.cluster {
			t.Errorf("%s: cluster client = %v, want %v", c.url, isCluster, c.cluster)
		}
		client.Close()
	}
}

func TestContract_RealRedis_Pipelined(t *testing.T) {
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
		s := redisstore.New(c, redisstore.Options{Now: clock.Now, Prefix: uniquePrefix(t), Pipeline: 2})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestAccuracy_RealCluster_Pipelined(t *testing.T) {
	cl := redistest.StartCluster(t)
	storetest.RunAccuracy(t, 3, 50, func(t *testing.T) ratelimit.Store {
		s := redisstore.New(cl.Client(t), redisstore.Options{Pipeline: 4})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestSentinelURL_ChecksThroughTheMaster(t *testing.T) {
	ctx := context.Background()
	master := redistest.StartRedis(t)
	sentinel := redistest.StartSentinel(t, master)
	client, err := redisstore.NewClient("redis+sentinel://" + sentinel + "/mymaster")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	store := redisstore.New(client, redisstore.Options{})
	lim := ratelimit.Limit{Rate: 2, Period: time.Minute}
	out := make([]ratelimit.LimitResult, 1)
	for i, want := range []bool{true, true, false} {
		if err := store.Check(ctx, ratelimit.CheckRequest{Key: "s", Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil {
			t.Fatalf("check %d through sentinel: %v", i, err)
		}
		if out[0].Allowed != want {
			t.Fatalf("check %d: allowed %v, want %v", i, out[0].Allowed, want)
		}
	}
	// The state is on the master the sentinel named.
	if keys, err := master.Client(t).Keys(ctx, "rl:{s}*").Result(); err != nil || len(keys) != 1 {
		t.Fatalf("keys on master: %q, %v", keys, err)
	}
}

func TestDifferential_MiniredisMatchesMemory(t *testing.T) {
	storetest.RunDifferential(t, func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
		mr := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { c.Close() })
		return redisstore.New(c, redisstore.Options{Now: clock.Now})
	})
}

func TestDifferential_RealRedisMatchesMemory(t *testing.T) {
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	storetest.RunDifferential(t, func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
		return redisstore.New(c, redisstore.Options{Now: clock.Now, Prefix: uniquePrefix(t), Pipeline: -1})
	})
}

func TestTop_PrefixWithGlobCharacters(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	star := redisstore.New(c, redisstore.Options{Prefix: "a*:"})
	plain := redisstore.New(c, redisstore.Options{Prefix: "ab:"})
	out := make([]ratelimit.LimitResult, 1)
	for _, s := range []*redisstore.Store{star, plain} {
		if err := s.Check(ctx, ratelimit.CheckRequest{Key: "k", Limits: []ratelimit.Limit{ratelimit.PerMinute(5)}, Cost: 1}, out); err != nil {
			t.Fatal(err)
		}
	}
	top, err := star.Top(ctx, 10)
	if err != nil || len(top) != 1 {
		t.Fatalf("top under prefix a*: %+v, %v (another prefix leaked in)", top, err)
	}
}

func TestAccuracy_RealRedis_Pipelined(t *testing.T) {
	srv := redistest.StartRedis(t)
	storetest.RunAccuracy(t, 3, 50, func(t *testing.T) ratelimit.Store {
		s := redisstore.New(srv.Client(t), redisstore.Options{Pipeline: 2})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// checkBatchedReplies runs many goroutines, each on its own identity with
// its own number of limits and rates, so that pipelined checks of different
// shapes share script calls; every caller must see exactly its own results.
func checkBatchedReplies(t *testing.T, store *redisstore.Store) {
	ctx := context.Background()
	const goroutines, checks = 40, 12
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			limits := make([]ratelimit.Limit, 1+g%3)
			for i := range limits {
				limits[i] = ratelimit.Limit{Name: fmt.Sprint("l", i), Rate: int64(100 + 10*g + i), Period: time.Hour}
			}
			out := make([]ratelimit.LimitResult, len(limits))
			for k := 0; k < checks; k++ {
				if err := store.Check(ctx, ratelimit.CheckRequest{Key: fmt.Sprint("batch-", g), Limits: limits, Cost: 2}, out); err != nil {
					errs <- err
					return
				}
				for i, r := range out {
					if want := limits[i].Rate - int64(2*(k+1)); !r.Allowed || r.Remaining != want {
						errs <- fmt.Errorf("goroutine %d check %d limit %d: %+v, want remaining %d", g, k, i, r, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestPipelined_EveryCallerGetsItsOwnReply(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		srv := redistest.StartRedis(t)
		s := redisstore.New(srv.Client(t), redisstore.Options{Pipeline: 2})
		defer s.Close()
		checkBatchedReplies(t, s)
	})
	t.Run("cluster", func(t *testing.T) {
		cl := redistest.StartCluster(t)
		s := redisstore.New(cl.Client(t), redisstore.Options{Pipeline: 2})
		defer s.Close()
		checkBatchedReplies(t, s)
	})
}

// An identity whose key holds something else (the hash of an older version)
// reads as no state and is replaced by the first check.
func TestOldHashStateIsReplaced(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	store := redisstore.New(c, redisstore.Options{})
	if err := c.HSet(ctx, store.Key("old"), "n", 7, "e", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if info, err := store.Info(ctx, "old"); err != nil || info.Exists {
		t.Fatalf("info of an old hash: %+v, %v", info, err)
	}
	if top, err := store.Top(ctx, 10); err != nil || len(top) != 0 {
		t.Fatalf("top with an old hash: %+v, %v", top, err)
	}
	out := make([]ratelimit.LimitResult, 1)
	lim := ratelimit.Limit{Rate: 5, Period: time.Minute}
	if err := store.Check(ctx, ratelimit.CheckRequest{Key: "old", Limits: []ratelimit.Limit{lim}, Cost: 1}, out); err != nil {
		t.Fatal(err)
	}
	if !out[0].Allowed || out[0].Remaining != 4 {
		t.Fatalf("first check over an old hash: %+v", out[0])
	}
	if info, err := store.Info(ctx, "old"); err != nil || !info.Exists || info.Hits != 1 || info.TTL <= 0 {
		t.Fatalf("info after the check: %+v, %v", info, err)
	}
}

// The default store batches: 50 goroutines' checks share script calls.
func TestDefault_BatchesConcurrentChecks(t *testing.T) {
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	s := redisstore.New(c, redisstore.Options{})
	ctx := context.Background()
	const goroutines, each = 50, 40
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]ratelimit.LimitResult, 1)
			for i := 0; i < each; i++ {
				if err := s.Check(ctx, ratelimit.CheckRequest{Key: fmt.Sprint("g", g), Limits: []ratelimit.Limit{ratelimit.PerMinute(1000)}, Cost: 1}, out); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	stats, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, line := range strings.Split(stats, "\n") {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
				var n int
				fmt.Sscanf(rest, "%d", &n)
				calls += n
			}
		}
	}
	if calls == 0 || calls >= goroutines*each/2 {
		t.Fatalf("%d script calls for %d checks: the default store does not batch", calls, goroutines*each)
	}
	t.Logf("%d script calls for %d checks", calls, goroutines*each)
}

// A batch is sent under its callers' deadlines, not a fixed one: a caller
// that allows 4 s gets its answer from a Redis that stalls for 1.5 s (a
// fixed 1 s batch timeout failed it), and one whose deadline has passed
// gets its own context's error at once.
func TestPipelined_HonoursTheCallersDeadline(t *testing.T) {
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	s := redisstore.New(srv.Client(t), redisstore.Options{Pipeline: 1})
	ctx := context.Background()
	out := make([]ratelimit.LimitResult, 1)
	req := ratelimit.CheckRequest{Key: "k", Limits: []ratelimit.Limit{ratelimit.PerMinute(10)}, Cost: 1}
	if err := s.Check(ctx, req, out); err != nil {
		t.Fatal(err)
	}
	// A script that stalls the server (DEBUG SLEEP is not on every server).
	go c.Eval(ctx, stallScript, nil, 1.5e6)
	time.Sleep(100 * time.Millisecond)
	long, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	if err := s.Check(long, req, out); err != nil || !out[0].Allowed {
		t.Fatalf("a 4s caller behind a 1.5s stall: %v %+v", err, out[0])
	}
	short, cancel2 := context.WithTimeout(ctx, time.Millisecond)
	defer cancel2()
	time.Sleep(2 * time.Millisecond)
	start := time.Now()
	if err := s.Check(short, req, out); err == nil || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("a caller past its deadline: %v after %v", err, time.Since(start))
	}
}

// stallScript keeps the server busy for ARGV[1] microseconds of its TIME.
const stallScript = `
local t = redis.call('time')
local start = t[1] * 1e6 + t[2]
repeat t = redis.call('time') until t[1] * 1e6 + t[2] - start >= tonumber(ARGV[1])
return 1`

// A policy edited 20 times (a new limit each time, two windows apart) leaves
// one limit's state in the stored value, not 20 (465 bytes before).
func TestStaleLimitsOfAnEditedPolicyAreDropped(t *testing.T) {
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	clock := storetest.NewClock()
	s := redisstore.New(c, redisstore.Options{Now: clock.Now, Pipeline: -1})
	ctx := context.Background()
	out := make([]ratelimit.LimitResult, 2)
	daily := ratelimit.Limit{Name: "daily", Rate: 10000, Period: 24 * time.Hour}
	for edit := 0; edit < 20; edit++ {
		lim := ratelimit.Limit{Name: "api", Rate: int64(100 + edit), Period: time.Minute}
		if err := s.Check(ctx, ratelimit.CheckRequest{Key: "k", Limits: []ratelimit.Limit{daily, lim}, Cost: 1}, out); err != nil {
			t.Fatal(err)
		}
		if !out[0].Allowed || out[0].Remaining != int64(10000-edit-1) {
			t.Fatalf("edit %d: the limit still named lost its state: %+v", edit, out[0])
		}
		clock.Advance(121 * time.Second) // staleness is kept to the minute
	}
	val, err := c.Get(ctx, s.Key("k")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(val, "|"); n != 2 || len(val) > 80 {
		t.Fatalf("after 20 edits the value holds %d limits in %d bytes: %q", n, len(val), val)
	}
	if info, err := s.Info(ctx, "k"); err != nil || !info.Exists || info.Hits != 20 {
		t.Fatalf("info after the edits: %+v %v", info, err)
	}
}
