package kv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

func TestMigrate_ToRedisSingleSentinelAndCluster(t *testing.T) {
	redistest.RequireBinaries(t, "redis-server", "redis-cli")
	single := redistest.StartRedis(t)
	sentinel := redistest.StartSentinel(t, redistest.StartRedis(t))
	cluster := redistest.StartCluster(t)
	for _, tc := range []struct {
		name, url string
		client    func() redis.UniversalClient
	}{
		{"single", single.URL(), func() redis.UniversalClient { return single.Client(t) }},
		{"sentinel", "redis+sentinel://" + sentinel + "/mymaster", func() redis.UniversalClient {
			return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{sentinel}})
		}},
		{"cluster", cluster.URL(), func() redis.UniversalClient { return cluster.Client(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, db := startServer(t)
			const plain, withTTL = 2500, 300
			for i := range plain {
				db.Set(fmt.Appendf(nil, "user:%d", i), fmt.Appendf(nil, "v%d", i))
			}
			for i := range withTTL {
				db.SetWithTTL(fmt.Appendf(nil, "session:{u%d}:%d", i%7, i), []byte("s"), time.Now().Add(time.Hour))
			}
			binKey, binVal := "bin:\xff\x00", "\x00\xfe\r\n"
			db.Set([]byte(binKey), []byte(binVal))
			// One collection of each kind, a hash with a TTL.
			db.HSet([]byte("h"), []byte("f1"), []byte("v1"), []byte("f2"), []byte("v2"))
			db.RPush([]byte("l"), []byte("a"), []byte("b"), []byte("c"))
			db.SAdd([]byte("s"), []byte("x"), []byte("y"))
			db.ZAdd([]byte("z"), kvstore.ZMember{Member: []byte("m1"), Score: 1.5}, kvstore.ZMember{Member: []byte("m2"), Score: -2})
			db.HSet([]byte("hashttl"), []byte("f"), []byte("v"))
			db.Update(func(tx *kvstore.Tx) error {
				_, err := tx.Expire([]byte("hashttl"), time.Now().Add(time.Hour))
				return err
			})
			const collections = 5
			db.SetWithTTL([]byte("gone"), []byte("x"), time.Now().Add(30*time.Millisecond))
			time.Sleep(60 * time.Millisecond)

			out, errOut, code := run(t, nil, "", "migrate", "--addr", addr, "--to", tc.url, "--json", "--page-size", "700")
			if code != 0 {
				t.Fatalf("migrate: %d %q", code, errOut)
			}
			var res MigrateResult
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("migrate --json = %q: %v", out, err)
			}
			if want := int64(plain + withTTL + 1 + collections); res.Keys != want || res.WithTTL != withTTL+1 || res.Bytes == 0 || res.DurationSeconds <= 0 {
				t.Fatalf("summary %+v, want %d keys, %d with TTL", res, want, withTTL)
			}
			rc := tc.client()
			ctx := context.Background()
			for _, i := range []int{0, 1234, plain - 1} {
				if v, err := rc.Get(ctx, fmt.Sprint("user:", i)).Result(); err != nil || v != fmt.Sprint("v", i) {
					t.Fatalf("user:%d at the target = %q, %v", i, v, err)
				}
			}
			if ttl, err := rc.TTL(ctx, "session:{u3}:10").Result(); err != nil || ttl < 59*time.Minute || ttl > time.Hour {
				t.Fatalf("TTL at the target = %v, %v", ttl, err)
			}
			if v, err := rc.Get(ctx, binKey).Result(); err != nil || v != binVal {
				t.Fatalf("binary key at the target = %q, %v", v, err)
			}
			if v, err := rc.HGetAll(ctx, "h").Result(); err != nil || fmt.Sprint(v) != "map[f1:v1 f2:v2]" {
				t.Fatalf("hash at the target = %v, %v", v, err)
			}
			if v, err := rc.LRange(ctx, "l", 0, -1).Result(); err != nil || fmt.Sprint(v) != "[a b c]" {
				t.Fatalf("list at the target = %v, %v", v, err)
			}
			if v, err := rc.SMembers(ctx, "s").Result(); err != nil || len(v) != 2 {
				t.Fatalf("set at the target = %v, %v", v, err)
			}
			if v, err := rc.ZRangeWithScores(ctx, "z", 0, -1).Result(); err != nil || fmt.Sprint(v) != "[{-2 m2} {1.5 m1}]" {
				t.Fatalf("sorted set at the target = %v, %v", v, err)
			}
			if ttl, err := rc.TTL(ctx, "hashttl").Result(); err != nil || ttl < 59*time.Minute {
				t.Fatalf("hash TTL at the target = %v, %v", ttl, err)
			}
			if n, _ := rc.Exists(ctx, "gone").Result(); n != 0 {
				t.Fatal("an expired key was copied")
			}
			var n int64
			if cc, ok := rc.(*redis.ClusterClient); ok {
				cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
					m, _ := c.DBSize(ctx).Result()
					n += m
					return nil
				})
			} else {
				n, _ = rc.DBSize(ctx).Result()
			}
			if n != res.Keys {
				t.Fatalf("target holds %d keys, migrate reported %d", n, res.Keys)
			}
			// Run again: it overwrites and reports the same.
			if out2, _, code := run(t, nil, "", "migrate", "--addr", addr, "--to", tc.url); code != 0 || !strings.Contains(out2, fmt.Sprintf("copied %d keys", res.Keys)) {
				t.Fatalf("second migrate: %d %q", code, out2)
			}
		})
	}
}

func TestMigrate_BadTargetsAreClearErrors(t *testing.T) {
	addr, _ := startServer(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"migrate", "--addr", addr}, 2, "--to URL is required"},
		{[]string{"migrate", "--addr", addr, "--to", "http://x"}, 2, "scheme must be"},
		{[]string{"migrate", "--addr", addr, "--to", "redis://127.0.0.1:1"}, 1, "cannot reach the target"},
		{[]string{"migrate", "--addr", addr, "--to", "redis://:secret@127.0.0.1:1"}, 1, "xxxxx@"},
	} {
		_, errOut, code := run(t, nil, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "secret") {
			t.Errorf("%v: exit %d %q, want %d and %q (no password)", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

func TestHashSlot_MatchesRedis(t *testing.T) {
	// Values from CLUSTER KEYSLOT on redis-server 7.0.
	for key, want := range map[string]uint16{"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{user1000}.followers": 3443, "a{}b": 13694, "": 0} {
		if got := hashSlot([]byte(key)); got != want {
			t.Errorf("hashSlot(%q) = %d, want %d", key, got, want)
		}
	}
}
