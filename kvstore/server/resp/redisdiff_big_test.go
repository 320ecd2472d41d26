//go:build unix

package resp_test

// Differential tests of collections past the size where devkit kv keeps
// them as persistent trees (kvstore's bigAt, 128 entries) and back under
// it: every reply equal to Redis's, those of unordered collections
// (hashes, sets, the pages of a scan) compared sorted.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// sameSorted is same for replies whose order is unspecified: an array's
// items (pairs of it when pairs) are compared sorted.
func (p *pair) sameSorted(pairs bool, cmds ...[]any) {
	p.t.Helper()
	for _, c := range cmds {
		want, got := sortedItemsReply(p.redis, pairs, c...), sortedItemsReply(p.ours, pairs, c...)
		if want != got {
			p.t.Errorf("%v:\n redis: %s\n ours:  %s", c, want, got)
		}
	}
}

func sortedItemsReply(c *redis.Client, pairs bool, args ...any) string {
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil {
		return "error: " + err.Error()
	}
	if m, ok := v.(map[any]any); ok { // RESP3's map
		var out []string
		for k, e := range m {
			out = append(out, fmt.Sprint(k, "=", e))
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	items, ok := v.([]any)
	if !ok {
		return fmt.Sprint(v)
	}
	var out []string
	for i := 0; i < len(items); i++ {
		if pair, ok := items[i].([]any); ok && pairs && len(pair) == 2 { // RESP3's pairs
			out = append(out, fmt.Sprint(pair[0], "=", pair[1]))
			continue
		}
		if pairs && i+1 < len(items) {
			out = append(out, fmt.Sprint(items[i], "=", items[i+1]))
			i++
			continue
		}
		out = append(out, fmt.Sprint(items[i]))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// scanItems is every item a full scan (HSCAN, SSCAN, ZSCAN) returns, sorted.
func scanItems(t *testing.T, c *redis.Client, name, key string) []string {
	t.Helper()
	return scanWith(t, c, name, key, "count", "50")
}

// scanWith is every item of a full scan with options (MATCH, COUNT), sorted.
func scanWith(t *testing.T, c *redis.Client, name, key string, options ...any) []string {
	t.Helper()
	var out []string
	cursor := "0"
	for {
		v, err := c.Do(context.Background(), append([]any{name, key, cursor}, options...)...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		cursor = fmt.Sprint(v[0])
		for _, it := range v[1].([]any) {
			out = append(out, fmt.Sprint(it))
		}
		if cursor == "0" {
			break
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func many(prefix string, from, to int, withValues bool) []any {
	var out []any
	for i := from; i < to; i++ {
		if withValues {
			out = append(out, i%37) // a score or a value
		}
		out = append(out, fmt.Sprintf("%s%03d", prefix, i))
	}
	return out
}

func TestRedisDiff_BigCollectionsAcrossTheThresholdBothWays(t *testing.T) {
	p := newPair(t, resp.Options{})
	hsetArgs := func(from, to int) []any {
		args := []any{"hset", "h"}
		for i := from; i < to; i++ {
			args = append(args, fmt.Sprintf("f%03d", i), fmt.Sprintf("v%d", i%13))
		}
		return args
	}
	p.same(hsetArgs(0, 300), cmd("hlen", "h"), cmd("hget", "h", "f150"), cmd("hget", "h", "nope"),
		cmd("hmget", "h", "f001", "f299", "x"), cmd("hexists", "h", "f200"), cmd("hstrlen", "h", "f010"),
		cmd("hincrby", "h", "f007", "5"), cmd("hsetnx", "h", "f007", "x"), cmd("hsetnx", "h", "new", "x"))
	p.sameSorted(true, cmd("hgetall", "h"))
	p.sameSorted(false, cmd("hkeys", "h"), cmd("hvals", "h"))
	if want, got := scanItems(t, p.redis, "hscan", "h"), scanItems(t, p.ours, "hscan", "h"); !slices.Equal(want, got) {
		t.Errorf("HSCAN of a big hash: %d items, redis %d", len(got), len(want))
	}
	p.same(append([]any{"hdel", "h"}, many("f", 0, 280, false)...), cmd("hlen", "h"), cmd("hget", "h", "f290"))
	p.sameSorted(true, cmd("hgetall", "h"))
	p.same(hsetArgs(0, 200), cmd("hlen", "h"), append([]any{"hdel", "h", "new"}, many("f", 0, 300, false)...), cmd("exists", "h"))

	p.same(append([]any{"rpush", "l"}, many("e", 0, 300, false)...), append([]any{"lpush", "l"}, many("h", 0, 50, false)...),
		cmd("llen", "l"), cmd("lindex", "l", "175"), cmd("lindex", "l", "-1"), cmd("lindex", "l", "349"), cmd("lindex", "l", "350"),
		cmd("lrange", "l", "100", "120"), cmd("lrange", "l", "-5", "-1"), cmd("lset", "l", "200", "X"), cmd("lindex", "l", "200"),
		cmd("linsert", "l", "before", "e100", "I1"), cmd("linsert", "l", "after", "e100", "I2"), cmd("linsert", "l", "after", "e100", "I3"),
		cmd("lrange", "l", "145", "160"), cmd("rpush", "l", "e005", "e005"), cmd("lrem", "l", "2", "e005"), cmd("lrem", "l", "-1", "e005"),
		cmd("lpos", "l", "e250"), cmd("lpop", "l", "3"), cmd("rpop", "l", "3"), cmd("lmove", "l", "l", "left", "right"),
		cmd("lrange", "l", "0", "-1"), cmd("ltrim", "l", "10", "40"), cmd("lrange", "l", "0", "-1"), cmd("llen", "l"),
		cmd("rpush", "l", "z"), cmd("lrange", "l", "0", "-1"))

	p.same(append([]any{"sadd", "s"}, many("m", 0, 300, false)...), cmd("scard", "s"), cmd("sismember", "s", "m123"),
		cmd("sismember", "s", "x"), cmd("smismember", "s", "m001", "x", "m299"), cmd("sadd", "s", "m001", "new"),
		cmd("srem", "s", "m002", "x"), cmd("scard", "s"))
	p.sameSorted(false, cmd("smembers", "s"), cmd("sinter", "s", "s"), cmd("sunion", "s", "nokey"))
	if want, got := scanItems(t, p.redis, "sscan", "s"), scanItems(t, p.ours, "sscan", "s"); !slices.Equal(want, got) {
		t.Errorf("SSCAN of a big set: %d items, redis %d", len(got), len(want))
	}
	p.same(append([]any{"srem", "s"}, many("m", 0, 290, false)...), cmd("scard", "s"))
	p.sameSorted(false, cmd("smembers", "s"))

	p.same(append([]any{"zadd", "z"}, many("m", 0, 300, true)...), cmd("zcard", "z"), cmd("zrank", "z", "m150"),
		cmd("zrevrank", "z", "m150"), cmd("zrank", "z", "x"), cmd("zscore", "z", "m299"), cmd("zincrby", "z", "2.5", "m010"),
		cmd("zrank", "z", "m010"), cmd("zrange", "z", "100", "110", "withscores"), cmd("zrange", "z", "-3", "-1"),
		cmd("zrevrange", "z", "0", "9", "withscores"), cmd("zrange", "z", "5", "15", "rev"), cmd("zrevrange", "z", "-5", "-2"),
		cmd("zrangebyscore", "z", "(5", "7", "limit", "3", "4"), cmd("zrangebyscore", "z", "-inf", "+inf", "limit", "0", "3"),
		cmd("zrevrangebyscore", "z", "(10", "(8", "withscores"), cmd("zrevrangebyscore", "z", "+inf", "30", "limit", "2", "5"),
		cmd("zrange", "z", "(36", "-inf", "byscore", "rev", "limit", "0", "2"), cmd("zrangebyscore", "z", "9", "3"),
		cmd("zrangebyscore", "z", "36", "36", "limit", "-1", "5"), cmd("zrangebyscore", "z", "0", "0", "limit", "1", "-1"),
		cmd("zrangestore", "dst", "z", "290", "400"), cmd("zrange", "dst", "0", "-1", "withscores"),
		cmd("zrangebyscore", "z", "5", "(6", "withscores"), cmd("zcount", "z", "10", "20"), cmd("zmscore", "z", "m001", "x"),
		cmd("zadd", "z", "nx", "1", "m001", "1", "new"), cmd("zadd", "z", "xx", "ch", "-1", "m002"), cmd("zrank", "z", "m002"),
		cmd("zrem", "z", "m003", "x"), cmd("zpopmin", "z", "2"), cmd("zpopmax", "z"), cmd("zcard", "z"))
	if want, got := scanItems(t, p.redis, "zscan", "z"), scanItems(t, p.ours, "zscan", "z"); !slices.Equal(want, got) {
		t.Errorf("ZSCAN of a big sorted set: %d items, redis %d", len(got), len(want))
	}
	// The same score ranges on a small (packed) sorted set.
	p.same(append([]any{"zadd", "small"}, many("m", 0, 40, true)...),
		cmd("zrangebyscore", "small", "(5", "7", "limit", "1", "2"), cmd("zrevrangebyscore", "small", "(10", "(3", "withscores"),
		cmd("zrevrangebyscore", "small", "+inf", "30", "limit", "1", "3"), cmd("zrange", "small", "(36", "-inf", "byscore", "rev"),
		cmd("zrangebyscore", "small", "-inf", "-1"), cmd("zrevrangebyscore", "small", "-1", "-inf"))
	p.same(append([]any{"zrem", "z"}, many("m", 0, 280, false)...), cmd("zcard", "z"), cmd("zrange", "z", "0", "-1", "withscores"),
		cmd("zrank", "z", "m290"), cmd("zrevrank", "z", "new"))
}
