//go:build unix

package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// digests is DEBUG DIGEST-VALUE of the store's identity keys on c.
func digests(t *testing.T, c *redis.Client, keys []string) string {
	t.Helper()
	v, err := c.Do(context.Background(), append([]any{"DEBUG", "DIGEST-VALUE"}, toAny(keys)...)...).Result()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(v)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// With WaitReplicas, every check is answered only once the replica holds
// its write (the counts a failover to it would keep): after each check,
// every identity key reads the same on the replica as on the master, for
// the plain counter, the lean script, the general script and batched
// checks. A replica that stops acknowledging delays each check by the
// WaitTimeout, never answers it wrongly, and every such write is counted.
func TestWaitReplicas_ChecksAnsweredOnceTheReplicaHoldsThem(t *testing.T) {
	master := redistest.StartRedis(t)
	replica := redistest.StartReplica(t, master)
	mc, rc := master.Client(t), replica.Client(t)
	client, err := redisstore.NewClient(master.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	prefix := uniquePrefix(t)
	store := redisstore.New(client, redisstore.Options{Prefix: prefix, WaitReplicas: 1, WaitTimeout: 40 * time.Millisecond})
	l := ratelimit.New(store, ratelimit.Options{Budget: 5 * time.Second})
	limits := [][]ratelimit.Limit{
		{{Name: "plain", Rate: 1000, Period: time.Hour}},                                              // INCRBY pipeline
		{{Name: "blocking", Rate: 1000, Period: time.Hour, Block: time.Minute}},                       // lean_fw.lua
		{{Name: "gcra", Algorithm: ratelimit.GCRA, Rate: 1000, Period: time.Hour}},                    // lean_gcra.lua
		{{Name: "a", Rate: 1000, Period: time.Hour}, {Name: "b", Rate: 5000, Period: 24 * time.Hour}}, // check.lua
	}
	ctx := context.Background()
	for i := range 20 {
		for j, ls := range limits {
			if _, err := l.Check(ctx, ratelimit.Request{Key: fmt.Sprintf("id%d", j), Limits: ls}); err != nil {
				t.Fatal(err)
			}
			keys, _ := mc.Keys(ctx, prefix+"{*").Result()
			if m, r := digests(t, mc, keys), digests(t, rc, keys); m != r {
				t.Fatalf("check %d of %v answered before the replica held it: master %s, replica %s", i, ls, m, r)
			}
		}
	}
	var wg sync.WaitGroup // batched: several checks share a pipeline, then one WAIT
	for range 50 {
		wg.Go(func() { l.Check(ctx, ratelimit.Request{Key: "batched", Limits: limits[1]}) })
	}
	wg.Wait()
	keys, _ := mc.Keys(ctx, prefix+"{*").Result()
	if m, r := digests(t, mc, keys), digests(t, rc, keys); m != r {
		t.Fatalf("batched checks answered before the replica held them")
	}
	if n := store.WaitShortfalls(); n != 0 {
		t.Fatalf("%d shortfalls with the replica up", n)
	}

	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	defer replica.Resume()
	start := time.Now()
	for i := range 5 {
		res, err := l.Check(ctx, ratelimit.Request{Key: "paused", Limits: limits[0]})
		if err != nil || !res.Allowed || res.Remaining != int64(999-i) || res.Source != ratelimit.FromStore {
			t.Fatalf("check %d with the replica paused: %+v %v", i, res, err)
		}
	}
	if took := time.Since(start); took < 5*40*time.Millisecond {
		t.Fatalf("5 checks took %v with the replica paused: they did not wait", took)
	}
	if n := store.WaitShortfalls(); n != 5 {
		t.Fatalf("%d shortfalls counted, want the 5 writes the paused replica did not acknowledge", n)
	}
}

// The cost of waiting, reported (not asserted): sequential checks on one
// machine with the replica beside the master.
func TestWaitReplicas_CostReported(t *testing.T) {
	master := redistest.StartRedis(t)
	redistest.StartReplica(t, master)
	per := func(wait int) time.Duration {
		client, err := redisstore.NewClient(master.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		l := ratelimit.New(redisstore.New(client, redisstore.Options{Prefix: uniquePrefix(t), WaitReplicas: wait}), ratelimit.Options{})
		lim := ratelimit.Limit{Rate: 1 << 20, Period: time.Hour}
		l.Allow(context.Background(), "warm", lim)
		start := time.Now()
		for range 300 {
			l.Allow(context.Background(), "k", lim)
		}
		return time.Since(start) / 300
	}
	without, with := per(0), per(1)
	t.Logf("per sequential check: %v without WAIT, %v with WAIT 1 (one replica on the same machine)", without, with)
}

// Checks batched behind one WAIT that comes short are each counted as a
// shortfall: WaitShortfalls bounds what a failover may take from the new
// master, so it counts checks, not WAITs (TestSentinelFailover_… found a
// failover losing more checks than it counted).
func TestWaitReplicas_EveryCheckOfAShortBatchIsCounted(t *testing.T) {
	master := redistest.StartRedis(t)
	replica := redistest.StartReplica(t, master)
	client, err := redisstore.NewClient(master.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	store := redisstore.New(client, redisstore.Options{Prefix: uniquePrefix(t), WaitReplicas: 1, WaitTimeout: 40 * time.Millisecond})
	l := ratelimit.New(store, ratelimit.Options{Budget: 5 * time.Second})
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	defer replica.Resume()
	const checks = 64
	var wg sync.WaitGroup
	var answered atomic.Int64
	for i := range checks {
		wg.Go(func() {
			lim := []ratelimit.Limit{{Name: "n", Rate: 1000, Period: time.Hour, Block: time.Duration(i%2) * time.Minute}}
			res, err := l.Check(context.Background(), ratelimit.Request{Key: fmt.Sprintf("k%d", i%8), Limits: lim})
			if err == nil && res.Allowed && res.Source == ratelimit.FromStore {
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	if answered.Load() != checks {
		t.Fatalf("%d of %d checks answered by the store", answered.Load(), checks)
	}
	if n := store.WaitShortfalls(); n != checks {
		t.Fatalf("%d shortfalls counted for %d checks whose writes the paused replica never acknowledged", n, checks)
	}
}
