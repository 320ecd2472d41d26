package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// Two gateways share a store (redis-server, or devkit kv in the suite's
// second run): a reset through gateway A reaches gateway B's blocked cache
// over the store's pub/sub, so B stops denying at once instead of for the
// rest of the block (an hour here).
func TestReset_ThroughOneGatewayClearsTheBlockedCacheOfAnother(t *testing.T) {
	srv := redistest.StartRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := uniquePrefix(t)
	login := ratelimit.Limit{Name: "login", Rate: 2, Period: time.Hour, Block: time.Hour}
	const who = "ip=198.51.100.7"
	gateway := func() *ratelimit.Limiter {
		l := ratelimit.New(redisstore.New(srv.Client(t), redisstore.Options{Prefix: prefix}), ratelimit.Options{BlockedCacheSize: 100})
		go l.FollowResets(ctx)
		return l
	}
	a, b := gateway(), gateway()
	for range 4 {
		if _, err := b.Allow(ctx, who, login); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := b.Allow(ctx, who, login); r.Allowed || r.Source != ratelimit.FromBlockedCache {
		t.Fatalf("gateway B: %+v (source %v), want denied from its blocked cache", r, r.Source)
	}
	// B subscribes in the background: a reset before that is not heard, so
	// the reset is repeated until B allows, or the deadline says it never will.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, err := a.Reset(ctx, who); err != nil {
			t.Fatalf("reset through gateway A: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
		r, err := b.Allow(ctx, who, login)
		if err != nil {
			t.Fatal(err)
		}
		if r.Allowed {
			if r.Source != ratelimit.FromStore {
				t.Fatalf("gateway B after the reset: %+v (source %v), want allowed by the store", r, r.Source)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway B still denies 5 s after resets through gateway A: %+v (source %v): the reset never reached its blocked cache", r, r.Source)
		}
	}
}
