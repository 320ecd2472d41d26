//go:build unix

package resp_test

// Differential tests of the reads that touch only what they answer on big
// collections (scan pages, sorted-set ranges by bound, random picks,
// RENAME/COPY): the same answers as Redis, and for scans, Redis's guarantee
// under writes between the calls, checked on both servers.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/resp"
)

func TestRedisDiff_SortedSetRangesByBoundOnBigAndSmallSets(t *testing.T) {
	p := newPair(t, resp.Options{})
	// An empty range of ranks of a big list or sorted set is empty.
	p.same(append([]any{"rpush", "bl"}, many("e", 0, 300, false)...), append([]any{"zadd", "bz"}, many("m", 0, 300, true)...),
		cmd("lrange", "bl", "5", "1"), cmd("lrange", "bl", "300", "400"), cmd("lrange", "bl", "-1", "-2"),
		cmd("zrange", "bz", "5", "1"), cmd("zrange", "bz", "-1", "-2"), cmd("zrevrange", "bz", "3", "2"),
		cmd("zremrangebyrank", "bz", "3", "1"), cmd("zcard", "bz"))
	// WRONGTYPE comes before an empty count, offset or range.
	p.same(cmd("set", "str", "x"), cmd("zpopmin", "str", "0"), cmd("zpopmax", "str", "-1"), cmd("zrangebylex", "str", "-", "+", "limit", "-1", "1"),
		cmd("zrangebyscore", "str", "0", "1", "limit", "-1", "1"), cmd("zcount", "str", "1", "0"), cmd("zlexcount", "str", "+", "-"),
		cmd("zrandmember", "str"), cmd("zrandmember", "str", "0"), cmd("hrandfield", "str", "0"), cmd("srandmember", "str", "0"),
		cmd("spop", "str", "0"), cmd("hscan", "str", "0"), cmd("sscan", "str", "5"), cmd("zscan", "str", "0"),
		cmd("zremrangebylex", "str", "+", "-"), cmd("zremrangebyrank", "str", "3", "1"), cmd("zremrangebyscore", "str", "1", "0"),
		cmd("zrange", "str", "3", "1"), cmd("zrevrange", "str", "0", "-1"))
	for _, size := range []int{40, 1000} {
		z, zl := fmt.Sprintf("z%d", size), fmt.Sprintf("zl%d", size)
		lex := []any{"zadd", zl}
		for i := range size {
			lex = append(lex, 0, fmt.Sprintf("m%04d", i))
		}
		p.same(append([]any{"zadd", z}, many("m", 0, size, true)...), lex)
		for _, c := range [][]any{
			cmd("zcount", z, "-inf", "+inf"), cmd("zcount", z, "5", "10"), cmd("zcount", z, "(5", "(10"),
			cmd("zcount", z, "10", "5"), cmd("zcount", z, "(5", "5"), cmd("zcount", z, "36", "+inf"), cmd("zcount", z, "x", "1"),
			cmd("zlexcount", zl, "-", "+"), cmd("zlexcount", zl, "[m0010", "(m0020"), cmd("zlexcount", zl, "(m0010", "[m0020"),
			cmd("zlexcount", zl, "+", "-"), cmd("zlexcount", zl, "[m0020", "[m0010"), cmd("zlexcount", zl, "[a", "[b"),
			cmd("zlexcount", zl, "-", "(m"), cmd("zlexcount", zl, "[m0039", "+"), cmd("zlexcount", zl, "m", "+"),
			cmd("zrangebylex", zl, "-", "+", "limit", "0", "5"), cmd("zrangebylex", zl, "[m0010", "(m0030", "limit", "3", "4"),
			cmd("zrangebylex", zl, "[m0010", "(m0030", "limit", "3", "-1"), cmd("zrangebylex", zl, "[m0010", "(m0030", "limit", "-1", "4"),
			cmd("zrangebylex", zl, "[m0010", "(m0030", "limit", "30", "4"), cmd("zrangebylex", zl, "[m0010", "(m0030", "limit", "0", "0"),
			cmd("zrangebylex", zl, "(m0035", "+"), cmd("zrangebylex", zl, "+", "+"), cmd("zrangebylex", zl, "-", "-"),
			cmd("zrevrangebylex", zl, "+", "-", "limit", "0", "5"), cmd("zrevrangebylex", zl, "(m0030", "[m0010", "limit", "2", "3"),
			cmd("zrevrangebylex", zl, "[m0030", "(m0010"), cmd("zrange", zl, "(m0030", "[m0010", "bylex", "rev", "limit", "1", "4"),
			cmd("zrange", zl, "[m0005", "[m0015", "bylex"), cmd("zrange", z, "(5", "7", "byscore", "limit", "2", "3"),
			cmd("zrangestore", "dst", zl, "[m0005", "[m0015", "bylex", "limit", "1", "3"), cmd("zrange", "dst", "0", "-1", "withscores"),
			cmd("zremrangebylex", zl, "[m0010", "(m0015"), cmd("zremrangebylex", zl, "(m0030", "+"), cmd("zrange", zl, "0", "-1"),
			cmd("zremrangebyscore", z, "(30", "33"), cmd("zremrangebyscore", z, "-inf", "(2"), cmd("zcard", z),
			cmd("zremrangebyrank", z, "-5", "-3"), cmd("zremrangebyrank", z, "3", "1"), cmd("zremrangebyrank", z, "0", "2"),
			cmd("zpopmin", z, "3"), cmd("zpopmax", z, "4"), cmd("zrange", z, "0", "-1", "withscores"),
			cmd("zpopmax", z, "100000"), cmd("exists", z),
		} {
			p.same(c)
		}
	}
}

// A random pick has Redis's shape: as many answers, distinct for a
// positive count, each a member with its value or score.
func TestRedisDiff_RandomPicksOnBigAndSmallCollections(t *testing.T) {
	p := newPair(t, resp.Options{})
	ctx := context.Background()
	for _, size := range []int{20, 1000} {
		h, s, z := fmt.Sprintf("h%d", size), fmt.Sprintf("s%d", size), fmt.Sprintf("z%d", size)
		p.same(append([]any{"hset", h}, many("m", 0, size, true)...), append([]any{"sadd", s}, many("m", 0, size, false)...),
			append([]any{"zadd", z}, many("m", 0, size, true)...))
		for _, n := range []int{0, 1, 5, -5, size - 1, size + 10, -(size + 10)} {
			for _, c := range [][]any{
				cmd("hrandfield", h, n), cmd("hrandfield", h, n, "withvalues"), cmd("srandmember", s, n),
				cmd("zrandmember", z, n), cmd("zrandmember", z, n, "withscores"),
			} {
				want, err1 := p.redis.Do(ctx, c...).Slice()
				got, err2 := p.ours.Do(ctx, c...).Slice()
				if err1 != nil || err2 != nil || len(want) != len(got) {
					t.Errorf("%v: redis %d items (%v), ours %d (%v)", c, len(want), err1, len(got), err2)
					continue
				}
				checkPicks(t, p.ours, c, got, n > 0)
			}
		}
		for _, c := range [][]any{cmd("hrandfield", h), cmd("srandmember", s), cmd("zrandmember", z)} {
			v, err := p.ours.Do(ctx, c...).Text()
			if err != nil || v == "" {
				t.Errorf("%v: %q, %v", c, v, err)
			}
		}
		p.same(cmd("hrandfield", "nokey", 3), cmd("hrandfield", "nokey"), cmd("srandmember", "nokey", -3),
			cmd("zrandmember", "nokey", 2, "withscores"), cmd("hrandfield", h, 1, "x"), cmd("srandmember", s, "x"))
		for _, n := range []int{3, 0, size / 2} {
			want, _ := p.redis.Do(ctx, "spop", s, n).StringSlice()
			got, err := p.ours.Do(ctx, "spop", s, n).StringSlice()
			if err != nil || len(got) != len(want) || len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
				t.Errorf("SPOP %s %d: %d distinct of %d, redis %d (%v)", s, n, len(slices.Compact(slices.Sorted(slices.Values(got)))), len(got), len(want), err)
			}
			for _, m := range got {
				if ok, _ := p.ours.SIsMember(ctx, s, m).Result(); ok {
					t.Errorf("SPOP %s: %s is still a member", s, m)
				}
			}
			p.same(cmd("scard", s))
		}
	}
}

// checkPicks checks a random pick's items: members (with their value or
// score when the reply has pairs), distinct when distinct.
func checkPicks(t *testing.T, c *redis.Client, command []any, items []any, distinct bool) {
	t.Helper()
	ctx := context.Background()
	key, withPairs := command[1].(string), len(command) == 4
	step := 1
	if withPairs {
		step = 2
	}
	if len(items) > 0 {
		if _, nested := items[0].([]any); nested { // RESP3's pairs: flattened
			var flat []any
			for _, p := range items {
				flat = append(flat, p.([]any)...)
			}
			items = flat
		}
	}
	seen := map[string]bool{}
	for i := 0; i+step-1 < len(items); i += step {
		m := fmt.Sprint(items[i])
		if distinct && seen[m] {
			t.Errorf("%v: %s twice", command, m)
		}
		seen[m] = true
		var want string
		var err error
		switch command[0] {
		case "hrandfield":
			want, err = c.HGet(ctx, key, m).Result()
		case "srandmember":
			var ok bool
			ok, err = c.SIsMember(ctx, key, m).Result()
			want = strconv.FormatBool(ok)
		case "zrandmember":
			var sc float64
			sc, err = c.ZScore(ctx, key, m).Result()
			want = strconv.FormatFloat(sc, 'f', -1, 64)
		}
		switch {
		case err != nil:
			t.Errorf("%v: %s is no member: %v", command, m, err)
		case withPairs && fmt.Sprint(items[i+1]) != want:
			t.Errorf("%v: %s = %v, want %s", command, m, items[i+1], want)
		}
	}
}

// A scan under writes between its calls — inserts and deletes on both
// sides of the cursor, and the collection turning packed and big again —
// returns every member present for its whole length, on Redis and on
// devkit kv alike; a big collection's pages hold about COUNT entries.
func TestRedisDiff_ScansOfBigCollectionsPageAndReturnEveryLastingMember(t *testing.T) {
	p := newPair(t, resp.Options{})
	ctx := context.Background()
	for _, kind := range []struct{ scan, add, del, card string }{
		{"hscan", "hset", "hdel", "hlen"}, {"sscan", "sadd", "srem", "scard"}, {"zscan", "zadd", "zrem", "zcard"},
	} {
		key := "k" + kind.scan
		add := func(c *redis.Client, members ...string) {
			args := []any{kind.add, key}
			for _, m := range members {
				switch kind.add {
				case "hset":
					args = append(args, m, "v")
				case "zadd":
					args = append(args, 1, m)
				default:
					args = append(args, m)
				}
			}
			if err := c.Do(ctx, args...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		del := func(c *redis.Client, members ...string) {
			if err := c.Do(ctx, append([]any{kind.del, key}, strs(members)...)...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		lasting := names("keep", 0, 40)
		for _, c := range []*redis.Client{p.redis, p.ours} {
			ours := c == p.ours
			r := rand.New(rand.NewPCG(1, 2))
			add(c, lasting...)
			add(c, names("v", 0, 1000)...)
			seen := map[string]bool{}
			cursor, calls := "0", 0
			for {
				v, err := c.Do(ctx, kind.scan, key, cursor, "count", "20").Slice()
				if err != nil {
					t.Fatal(err)
				}
				cursor = fmt.Sprint(v[0])
				page := v[1].([]any)
				step := 1
				if kind.scan != "sscan" {
					step = 2
				}
				for i := 0; i < len(page); i += step {
					seen[fmt.Sprint(page[i])] = true
				}
				if ours && calls == 0 && (cursor == "0" || len(page)/step > 40) {
					t.Errorf("%s of 1040 entries COUNT 20: first page of %d entries, cursor %s", kind.scan, len(page)/step, cursor)
				}
				calls++
				if cursor == "0" || calls > 10000 {
					break
				}
				switch calls {
				case 5: // packed: only the lasting members and a few
					del(c, names("v", 0, 1000)...)
					del(c, names("new", 0, 10000)...)
				case 6, 8: // big again
					add(c, names("v", 0, 1000)...)
				case 7:
					del(c, names("v", 0, 1000)...)
				default:
					n := r.IntN(10000)
					add(c, names("new", n, n+30)...)
					m := r.IntN(1000)
					del(c, names("v", m, m+20)...)
					del(c, names("new", m, m+20)...)
				}
			}
			for _, m := range lasting {
				if !seen[m] {
					t.Errorf("%s (ours: %v): %s, present all along, was not returned", kind.scan, ours, m)
				}
			}
		}
		// MATCH filters each page; the whole scan has Redis's members.
		p.same(cmd("del", key), append([]any{kind.add, key}, addArgs(kind.add, names("m", 0, 500))...))
		for _, pattern := range []string{"m1*", "*7", "x*"} {
			want, got := scanMatch(t, p.redis, kind.scan, key, pattern), scanMatch(t, p.ours, kind.scan, key, pattern)
			if !slices.Equal(want, got) {
				t.Errorf("%s MATCH %s: %d items, redis %d", kind.scan, pattern, len(got), len(want))
			}
		}
		p.same(cmd(kind.scan, key, "0", "count", "0"), cmd(kind.scan, key, "x"), cmd(kind.scan, key, "0", "count"),
			cmd(kind.scan, key, "0", "foo", "1"), cmd(kind.scan, "nokey", "0"), cmd(kind.scan, "nokey", "123"))
	}
}

func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%05d", prefix, i))
	}
	return out
}

func strs(in []string) []any {
	out := make([]any, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}

func addArgs(add string, members []string) []any {
	var out []any
	for i, m := range members {
		switch add {
		case "hset":
			out = append(out, m, i)
		case "zadd":
			out = append(out, i%7, m)
		default:
			out = append(out, m)
		}
	}
	return out
}

// scanMatch is every item of a full scan with MATCH, sorted.
func scanMatch(t *testing.T, c *redis.Client, name, key, pattern string) []string {
	t.Helper()
	return scanWith(t, c, name, key, "match", pattern, "count", "7")
}

// RENAME and COPY of big collections share the tree copy-on-write: a
// change to either name leaves the other as it was.
func TestRedisDiff_RenameAndCopyOfBigCollections(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(append([]any{"hset", "h"}, many("f", 0, 500, true)...), cmd("expire", "h", "1000"),
		append([]any{"zadd", "z"}, many("m", 0, 500, true)...), append([]any{"sadd", "s"}, many("m", 0, 500, false)...),
		cmd("rename", "h", "h2"), cmd("exists", "h"), cmd("ttl", "h2"), cmd("copy", "h2", "h3"), cmd("ttl", "h3"),
		cmd("hset", "h3", "f001", "changed", "new", "1"), cmd("hdel", "h2", "f002"), cmd("hget", "h2", "f001"),
		cmd("hget", "h3", "f002"), cmd("hlen", "h2"), cmd("hlen", "h3"),
		cmd("copy", "z", "z2"), cmd("zadd", "z2", "100", "m003"), cmd("zrem", "z", "m004"), cmd("zscore", "z", "m003"),
		cmd("zscore", "z2", "m004"), cmd("zcard", "z"), cmd("zcard", "z2"), cmd("copy", "z", "z2"), cmd("copy", "s", "z2", "replace"),
		cmd("type", "z2"), cmd("renamenx", "s", "z"), cmd("renamenx", "s", "s9"), cmd("scard", "s9"), cmd("rename", "nokey", "x"))
	p.sameSorted(true, cmd("hgetall", "h2"), cmd("hgetall", "h3"), cmd("zrange", "z", "0", "-1", "withscores"))
	p.sameSorted(false, cmd("smembers", "z2"), cmd("smembers", "s9"))
}
