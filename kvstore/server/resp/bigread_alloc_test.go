package resp_test

// The reads of a big collection (a scan page, a count or range of a sorted
// set by its bounds, random picks, RENAME and COPY) cost what they answer,
// not the collection: measured as the bytes (or allocations) the server
// and its client allocate per command on collections of 100k entries.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// fillBig gives key n entries with the command name (HSET, SADD or ZADD;
// ZADD with score i, or 0 when sameScore), in pipelined batches.
func fillBig(t *testing.T, c *redis.Client, name, key string, n int, sameScore bool) {
	t.Helper()
	ctx := context.Background()
	const batch = 2000
	for lo := 0; lo < n; lo += batch {
		pipe := c.Pipeline()
		args := []any{name, key}
		for i := lo; i < min(lo+batch, n); i++ {
			m := fmt.Sprintf("m%07d", i)
			switch name {
			case "hset":
				args = append(args, m, "value-of-"+m)
			case "sadd":
				args = append(args, m)
			case "zadd":
				score := i
				if sameScore {
					score = 0
				}
				args = append(args, score, m)
			}
		}
		pipe.Do(ctx, args...)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// cmd is a command's arguments, for a table of commands (here, untagged,
// as the redisdiff tests that use it too are unix-only).
func cmd(args ...any) []any { return args }

// perCommand is what the process allocates per run of cmds (bytes and
// allocations), cmds run runs times.
func perCommand(t *testing.T, c *redis.Client, runs int, cmds ...[]any) (bytes, allocs uint64) {
	t.Helper()
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		for _, cmd := range cmds {
			if err := c.Do(ctx, cmd...).Err(); err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs), (after.Mallocs - before.Mallocs) / uint64(runs)
}

func TestBigCollections_ReadsAllocateWhatTheyAnswerNotTheCollection(t *testing.T) {
	if testing.Short() {
		t.Skip("fills collections of 100k entries")
	}
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	const n = 100_000
	fillBig(t, c, "hset", "h", n, false)
	fillBig(t, c, "sadd", "s", n, false)
	fillBig(t, c, "zadd", "z", n, false)
	fillBig(t, c, "zadd", "zl", n, true)
	// A cursor from the middle of each scan order.
	mid := func(name, key string) string {
		v, err := c.Do(context.Background(), name, key, "0", "count", "1000").Slice()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(v[0])
	}
	// The whole hash's values alone are 1.8 MB; a command may allocate 64 KiB.
	const limit = 64 << 10
	for _, tc := range []struct {
		name string
		cmds [][]any
	}{
		{"HSCAN", [][]any{cmd("hscan", "h", "0"), cmd("hscan", "h", mid("hscan", "h"), "count", "100", "match", "m*")}},
		{"SSCAN", [][]any{cmd("sscan", "s", "0"), cmd("sscan", "s", mid("sscan", "s"), "count", "100")}},
		{"ZSCAN", [][]any{cmd("zscan", "z", "0"), cmd("zscan", "z", mid("zscan", "z"), "count", "100")}},
		{"ZCOUNT", [][]any{cmd("zcount", "z", "-inf", "+inf"), cmd("zcount", "z", "(1000", "90000")}},
		{"ZLEXCOUNT", [][]any{cmd("zlexcount", "zl", "-", "+"), cmd("zlexcount", "zl", "[m0001000", "(m0090000")}},
		{"ZRANGEBYLEX", [][]any{cmd("zrangebylex", "zl", "[m0050000", "+", "limit", "0", "10"),
			cmd("zrevrangebylex", "zl", "+", "-", "limit", "5", "10"), cmd("zrange", "zl", "[m0001", "(m0009", "bylex", "limit", "100", "10")}},
		{"ZRANGEBYSCORE", [][]any{cmd("zrangebyscore", "z", "50000", "+inf", "limit", "0", "10")}},
		{"ZREMRANGEBYSCORE", [][]any{cmd("zadd", "z", "0.5", "x"), cmd("zremrangebyscore", "z", "0.5", "0.5")}},
		{"ZREMRANGEBYLEX", [][]any{cmd("zadd", "zl", "0", "m0050000x"), cmd("zremrangebylex", "zl", "[m0050000x", "[m0050000x")}},
		{"ZREMRANGEBYRANK", [][]any{cmd("zadd", "z", "-1", "x"), cmd("zremrangebyrank", "z", "0", "0")}},
		{"ZPOPMIN", [][]any{cmd("zadd", "z", "-1", "x"), cmd("zpopmin", "z")}},
		{"HRANDFIELD", [][]any{cmd("hrandfield", "h"), cmd("hrandfield", "h", "5", "withvalues"), cmd("hrandfield", "h", "-5")}},
		{"SRANDMEMBER", [][]any{cmd("srandmember", "s"), cmd("srandmember", "s", "5"), cmd("srandmember", "s", "-5")}},
		{"SPOP", [][]any{cmd("spop", "s", "3"), cmd("sadd", "s", "a", "b", "c")}},
		{"ZRANDMEMBER", [][]any{cmd("zrandmember", "z"), cmd("zrandmember", "z", "5", "withscores"), cmd("zrandmember", "z", "-5")}},
	} {
		per, _ := perCommand(t, c, 20, tc.cmds...)
		t.Logf("%s: %d bytes per run", tc.name, per)
		if per > limit {
			t.Errorf("%s on collections of %d entries allocates %d bytes per run, want at most %d", tc.name, n, per, limit)
		}
	}
	// RENAME and COPY log the whole value (the log has no record naming
	// another key), one buffer, but share the tree instead of rebuilding it.
	for _, tc := range []struct {
		name string
		cmds [][]any
	}{
		{"RENAME", [][]any{cmd("rename", "h", "h2"), cmd("rename", "h2", "h")}},
		{"COPY", [][]any{cmd("copy", "z", "z2", "replace")}},
	} {
		_, allocs := perCommand(t, c, 5, tc.cmds...)
		t.Logf("%s: %d allocations per run", tc.name, allocs)
		if allocs > 2000 {
			t.Errorf("%s of a collection of %d entries makes %d allocations per run, want at most 2000", tc.name, n, allocs)
		}
	}
}
