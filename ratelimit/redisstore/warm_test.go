package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// commandCalls is INFO commandstats' calls of cmd (0 when never called).
func commandCalls(t *testing.T, c *redis.Client, cmd string) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(info, "cmdstat_"+cmd+":calls=")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
	return n
}

// After Warm, the first burst of a fresh store on a fresh identity (300
// concurrent checks) opens no connection, sends no script source (EVAL
// after NOSCRIPT) and finds its limit registered: what a cold store did
// during that burst, on the checks' budget: without Warm the same burst
// opened 4 connections and sent 2 script sources, and its first checks
// waited for the registration.
func TestWarm_FirstBurstOpensNoConnectionAndSendsNoScript(t *testing.T) {
	srv := redistest.StartRedis(t)
	admin := srv.Client(t)
	client, err := redisstore.NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	prefix := uniquePrefix(t)
	store := redisstore.New(client, redisstore.Options{Prefix: prefix})
	login := ratelimit.Limit{Name: "login", Rate: 100, Period: 15 * time.Minute, Block: time.Hour}
	if err := ratelimit.New(store, ratelimit.Options{}).Warm(context.Background(), []ratelimit.Limit{login}); err != nil {
		t.Fatal(err)
	}
	if ids, err := admin.ZRange(context.Background(), prefix+"lean-ids", 0, -1).Result(); err != nil || len(ids) != 1 {
		t.Errorf("registry after Warm: %v %v, want the login limit's id", ids, err)
	}
	misses, evals := client.(*redis.Client).PoolStats().Misses, commandCalls(t, admin, "eval")
	limiter := ratelimit.New(store, ratelimit.Options{})
	var admitted sync.Map
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			res, err := limiter.Check(context.Background(), ratelimit.Request{Key: "ip:203.0.113.9", Limits: []ratelimit.Limit{login}, Rule: "login"})
			if err != nil {
				t.Error(err)
			}
			if res.Allowed {
				admitted.Store(i, res.Source)
			}
		})
	}
	wg.Wait()
	n := 0
	admitted.Range(func(_, src any) bool {
		if src != ratelimit.FromStore {
			t.Errorf("admitted by %v", src)
		}
		n++
		return true
	})
	if n != 100 {
		t.Errorf("%d of 300 admitted for a limit of 100", n)
	}
	if d := client.(*redis.Client).PoolStats().Misses - misses; d != 0 {
		t.Errorf("the burst opened %d connections after Warm", d)
	}
	if d := commandCalls(t, admin, "eval") - evals; d != 0 {
		t.Errorf("the burst sent %d script sources (EVAL) after Warm", d)
	}
}
