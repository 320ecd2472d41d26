package resp_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// pathCountingStore counts the engine calls a command makes: updates (the
// write path: the pipeline's lock, a place in a commit group, the wait for
// its fsync) and read views.
type pathCountingStore struct {
	backend.Store
	updates, views atomic.Int64
}

func (s *pathCountingStore) UpdateWith(o kvstore.WriteOptions, fn func(tx *kvstore.Tx) error) (func() error, error) {
	s.updates.Add(1)
	return s.Store.UpdateWith(o, fn)
}

func (s *pathCountingStore) View(fn func(tx *kvstore.Tx) error) error {
	s.views.Add(1)
	return s.Store.View(fn)
}

func TestCollectionReads_OfOneKeyGoThroughTheReadViewNotTheWritePath(t *testing.T) {
	store := &pathCountingStore{Store: servertest.OpenDB(t)}
	c := goRedis2(t, start(t, store, resp.Options{})) // the wants are RESP2 shapes
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"HSET", "h", "f", "v", "g", "w"}, {"RPUSH", "l", "a", "b", "a"}, {"SADD", "s", "x", "y"},
		{"ZADD", "z", "1", "a", "2", "b"}, {"SET", "str", "v"}, {"HSET", "gone", "f", "v"}, {"PEXPIRE", "gone", "1"},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(cmd, err)
		}
	}
	time.Sleep(5 * time.Millisecond) // "gone" expires
	for _, tc := range []struct {
		cmd  []any
		want string
	}{
		{[]any{"HGET", "h", "f"}, "v"}, {[]any{"HMGET", "h", "f", "x"}, "[v <nil>]"},
		{[]any{"HEXISTS", "h", "g"}, "1"}, {[]any{"HSTRLEN", "h", "g"}, "1"}, {[]any{"HLEN", "h"}, "2"},
		{[]any{"HGETALL", "h"}, "[f v g w]"}, {[]any{"HKEYS", "h"}, "[f g]"}, {[]any{"HVALS", "h"}, "[v w]"},
		{[]any{"HRANDFIELD", "h", "-1"}, ""}, {[]any{"HSCAN", "h", "0"}, "[0 [f v g w]]"},
		{[]any{"LLEN", "l"}, "3"}, {[]any{"LRANGE", "l", "0", "-1"}, "[a b a]"}, {[]any{"LINDEX", "l", "1"}, "b"},
		{[]any{"LPOS", "l", "a", "COUNT", "0"}, "[0 2]"},
		{[]any{"SISMEMBER", "s", "x"}, "1"}, {[]any{"SMISMEMBER", "s", "x", "q"}, "[1 0]"},
		{[]any{"SMEMBERS", "s"}, ""}, {[]any{"SCARD", "s"}, "2"}, {[]any{"SRANDMEMBER", "s"}, ""},
		{[]any{"SSCAN", "s", "0"}, ""},
		{[]any{"ZSCORE", "z", "b"}, "2"}, {[]any{"ZMSCORE", "z", "a", "q"}, "[1 <nil>]"}, {[]any{"ZCARD", "z"}, "2"},
		{[]any{"ZCOUNT", "z", "-inf", "+inf"}, "2"}, {[]any{"ZLEXCOUNT", "z", "-", "+"}, "2"},
		{[]any{"ZRANK", "z", "b"}, "1"}, {[]any{"ZREVRANK", "z", "b"}, "0"},
		{[]any{"ZRANGE", "z", "0", "-1", "WITHSCORES"}, "[a 1 b 2]"}, {[]any{"ZREVRANGE", "z", "0", "0"}, "[b]"},
		{[]any{"ZRANGEBYSCORE", "z", "2", "2"}, "[b]"}, {[]any{"ZREVRANGEBYLEX", "z", "+", "-"}, "[b a]"},
		{[]any{"ZRANDMEMBER", "z"}, ""}, {[]any{"ZSCAN", "z", "0"}, "[0 [a 1 b 2]]"},
		{[]any{"MEMORY", "USAGE", "h"}, ""},
		// Type errors and expiry answer as on the write path.
		{[]any{"HGET", "l", "f"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"LRANGE", "str", "0", "-1"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"ZSCORE", "s", "x"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"HGET", "gone", "f"}, "redis: nil"}, {[]any{"HLEN", "gone"}, "0"},
	} {
		before := store.updates.Load()
		v, err := c.Do(ctx, tc.cmd...).Result()
		got := fmt.Sprint(v)
		if err != nil {
			got = err.Error()
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("%v = %s; want %s", tc.cmd, got, tc.want)
		}
		if n := store.updates.Load() - before; n != 0 {
			t.Errorf("%v ran %d engine updates; a read of one key runs none", tc.cmd, n)
		}
	}
	if store.views.Load() == 0 {
		t.Fatal("no read view was used")
	}
	// Inside MULTI the reads run in EXEC's update, and a command that
	// stores what it reads is still a write.
	pipe := c.TxPipeline()
	get := pipe.HGet(ctx, "h", "f")
	pipe.HSet(ctx, "h", "f", "v2")
	get2 := pipe.HGet(ctx, "h", "f")
	if _, err := pipe.Exec(ctx); err != nil || get.Val() != "v" || get2.Val() != "v2" {
		t.Fatalf("MULTI HGET, HSET, HGET: %q, %q, %v; want v, v2", get.Val(), get2.Val(), err)
	}
	if n, err := c.ZRangeStore(ctx, "z2", redis.ZRangeArgs{Key: "z", Start: 0, Stop: -1}).Result(); err != nil || n != 2 {
		t.Fatalf("ZRANGESTORE: %d, %v", n, err)
	}
}

// BenchmarkCollectionReads_BesideSyncAlwaysWriters is HGET (one key of a
// 100-field hash) from parallel clients while 4 other clients HSET other
// keys under --sync always: reads per second, and the writes that went
// on meanwhile.
func BenchmarkCollectionReads_BesideSyncAlwaysWriters(b *testing.B) {
	ctx := context.Background()
	db := servertest.OpenDBWith(b, kvstore.Options{Sync: kvstore.SyncAlways})
	addr := start(b, db, resp.Options{})
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	defer c.Close()
	fields := make([]any, 0, 200)
	for i := range 100 {
		fields = append(fields, fmt.Sprintf("f%03d", i), strings.Repeat("v", 32))
	}
	if err := c.HSet(ctx, "h", fields...).Err(); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	var writes atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := c.HSet(ctx, fmt.Sprintf("w%d", w), fmt.Sprintf("f%d", i%1000), "x").Err(); err != nil {
					return
				}
				writes.Add(1)
			}
		}()
	}
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.HGet(ctx, "h", "f042").Err(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reads/s")
	b.ReportMetric(float64(writes.Load())/elapsed.Seconds(), "writes/s")
}
