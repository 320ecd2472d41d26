//go:build unix

package resp_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// BenchmarkRESPCollectionWriteAtSize is one LPUSH, RPUSH, HSET, SADD or ZADD
// through go-redis to a key that already holds size elements: ns/op growing
// with size is a write costing O(size) (the engine's
// BenchmarkCollectionWriteAtSize without the protocol).
func BenchmarkRESPCollectionWriteAtSize(b *testing.B) {
	ctx := context.Background()
	writes := []struct {
		name  string
		write func(c *redis.Client, i int) error
	}{
		{"LPUSH", func(c *redis.Client, i int) error { return c.LPush(ctx, "k", fmt.Sprintf("e%09d", i)).Err() }},
		{"RPUSH", func(c *redis.Client, i int) error { return c.RPush(ctx, "k", fmt.Sprintf("e%09d", i)).Err() }},
		{"HSET", func(c *redis.Client, i int) error { return c.HSet(ctx, "k", fmt.Sprintf("f%09d", i), "value").Err() }},
		{"SADD", func(c *redis.Client, i int) error { return c.SAdd(ctx, "k", fmt.Sprintf("m%09d", i)).Err() }},
		{"ZADD", func(c *redis.Client, i int) error {
			return c.ZAdd(ctx, "k", redis.Z{Member: fmt.Sprintf("m%09d", i), Score: float64(i % 1000)}).Err()
		}},
	}
	for _, w := range writes {
		for _, size := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/size=%d", w.name, size), func(b *testing.B) {
				db := openBenchDB(b, kvstore.SyncNone)
				addr := start(b, db, resp.Options{})
				c := redis.NewClient(&redis.Options{Addr: addr})
				defer c.Close()
				// Fill 1000 elements per command so the fill itself stays cheap.
				for i := 0; i < size; i += 1000 {
					var err error
					args := make([]any, 0, 2000)
					for j := i; j < i+1000; j++ {
						switch w.name {
						case "HSET":
							args = append(args, fmt.Sprintf("f%09d", j), "value")
						case "ZADD":
							args = append(args, redis.Z{Member: fmt.Sprintf("m%09d", j), Score: float64(j % 1000)})
						default:
							args = append(args, fmt.Sprintf("m%09d", j))
						}
					}
					switch w.name {
					case "HSET":
						err = c.HSet(ctx, "k", args...).Err()
					case "ZADD":
						zs := make([]redis.Z, len(args))
						for j, a := range args {
							zs[j] = a.(redis.Z)
						}
						err = c.ZAdd(ctx, "k", zs...).Err()
					case "SADD":
						err = c.SAdd(ctx, "k", args...).Err()
					default:
						err = c.RPush(ctx, "k", args...).Err()
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for i := range b.N {
					if err := w.write(c, size+i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCollectionCommandAtSize is the cost of one LPUSH, RPOP, HSET,
// SADD, ZADD (of a new member), ZRANK or LINDEX (of the middle) on a
// collection of size elements, on devkit kv (--sync none) and on a real
// redis-server without persistence, side by side: commands go 100 to a
// round trip (a pipeline), so ns/op is mostly the server's work, not the
// network's. The collection is kept within 10 % of size: what the writes
// add (or RPOP removes) is undone off the clock once it reaches a tenth.
// Collections are filled once per server and shared by the commands;
// devkit's through the engine (a packed sorted set filled through the
// server before big collections cost O(members × size): hours at 1M).
func BenchmarkCollectionCommandAtSize(b *testing.B) {
	ctx := context.Background()
	var db *kvstore.DB // devkit's
	servers := []struct {
		name string
		addr func(b *testing.B) string
	}{
		{"devkit", func(b *testing.B) string {
			db = openBenchDB(b, kvstore.SyncNone)
			return start(b, db, resp.Options{})
		}},
		{"redis", func(b *testing.B) string { return startRedis(b) }},
	}
	type command struct {
		name, kind string
		run        func(p redis.Pipeliner, key string, size, i int)
		// drift is how many elements run adds (+1) or removes (-1).
		drift int
	}
	member := func(i int) string { return fmt.Sprintf("m%09d", i) }
	commands := []command{
		{"LPUSH", "list", func(p redis.Pipeliner, k string, _, i int) { p.LPush(ctx, k, member(i)) }, 1},
		{"RPOP", "list", func(p redis.Pipeliner, k string, _, _ int) { p.RPop(ctx, k) }, -1},
		{"HSET", "hash", func(p redis.Pipeliner, k string, _, i int) { p.HSet(ctx, k, "new"+member(i), "value") }, 1},
		{"SADD", "set", func(p redis.Pipeliner, k string, _, i int) { p.SAdd(ctx, k, "new"+member(i)) }, 1},
		{"ZADD", "zset", func(p redis.Pipeliner, k string, _, i int) {
			p.ZAdd(ctx, k, redis.Z{Member: "new" + member(i), Score: float64(i % 1000)})
		}, 1},
		{"ZRANK", "zset", func(p redis.Pipeliner, k string, size, i int) { p.ZRank(ctx, k, member(i*7919%size)) }, 0},
		{"LINDEX", "list", func(p redis.Pipeliner, k string, size, _ int) { p.LIndex(ctx, k, int64(size/2)) }, 0},
		// Reads that answer a few entries of a big collection.
		{"HSCAN", "hash", func(p redis.Pipeliner, k string, _, _ int) { p.HScan(ctx, k, 0, "", 10) }, 0},
		{"ZCOUNT", "zset", func(p redis.Pipeliner, k string, size, _ int) {
			p.ZCount(ctx, k, strconv.Itoa(size/4), strconv.Itoa(3*size/4))
		}, 0},
		{"HRANDFIELD", "hash", func(p redis.Pipeliner, k string, _, _ int) { p.HRandField(ctx, k, 5) }, 0},
		{"SRANDMEMBER", "set", func(p redis.Pipeliner, k string, _, _ int) { p.SRandMemberN(ctx, k, 5) }, 0},
	}
	sizes := []int{1_000, 100_000, 1_000_000}
	clients := map[string]*redis.Client{}
	filled := map[string]bool{}
	client := func(b *testing.B, server int) *redis.Client {
		s := servers[server]
		if c, ok := clients[s.name]; ok {
			return c
		}
		// The servers outlive the sub-benchmarks: started on the parent.
		c := redis.NewClient(&redis.Options{Addr: s.addr(b), ReadTimeout: time.Minute, WriteTimeout: time.Minute})
		b.Cleanup(func() { c.Close() })
		clients[s.name] = c
		return c
	}
	fill := func(b *testing.B, c *redis.Client, server, kind string, size int) string {
		key := fmt.Sprintf("%s:%d", kind, size)
		if filled[server+key] {
			return key
		}
		if server == "devkit" {
			if err := fillEngine(db, key, kind, size, member); err != nil {
				b.Fatal(err)
			}
			filled[server+key] = true
			return key
		}
		const chunk = 10_000
		for i := 0; i < size; i += chunk {
			args := make([]any, 0, 2*chunk)
			var zs []redis.Z
			for j := i; j < min(i+chunk, size); j++ {
				switch kind {
				case "hash":
					args = append(args, member(j), "value")
				case "zset":
					zs = append(zs, redis.Z{Member: member(j), Score: float64(j)}) // ascending: a packed fill appends
				default:
					args = append(args, member(j))
				}
			}
			var err error
			switch kind {
			case "hash":
				err = c.HSet(ctx, key, args...).Err()
			case "zset":
				err = c.ZAdd(ctx, key, zs...).Err()
			case "set":
				err = c.SAdd(ctx, key, args...).Err()
			default:
				err = c.RPush(ctx, key, args...).Err()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		filled[server+key] = true
		return key
	}
	// undo takes back what n runs of cmd did (i: the index of the first).
	undo := func(b *testing.B, c *redis.Client, cmd command, key string, i, n int) {
		var err error
		switch cmd.name {
		case "LPUSH":
			err = c.LPopCount(ctx, key, n).Err()
		case "RPOP":
			args := make([]any, n)
			for j := range args {
				args[j] = member(j)
			}
			err = c.RPush(ctx, key, args...).Err()
		default:
			args := make([]any, n)
			for j := range args {
				args[j] = "new" + member(i+j)
			}
			switch cmd.kind {
			case "hash":
				err = c.HDel(ctx, key, anyStrings(args)...).Err()
			case "set":
				err = c.SRem(ctx, key, args...).Err()
			case "zset":
				err = c.ZRem(ctx, key, args...).Err()
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, cmd := range commands {
		for _, size := range sizes {
			for si, s := range servers {
				c := client(b, si)
				b.Run(fmt.Sprintf("%s/size=%d/server=%s", cmd.name, size, s.name), func(b *testing.B) {
					key := fill(b, c, s.name, cmd.kind, size)
					const depth = 100
					limit := max(size/10, depth)
					b.ResetTimer()
					from := 0 // the first run not undone
					for i := 0; i < b.N; i += depth {
						n := min(depth, b.N-i)
						if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
							for j := i; j < i+n; j++ {
								cmd.run(p, key, size, j)
							}
							return nil
						}); err != nil && !errors.Is(err, redis.Nil) {
							b.Fatal(err)
						}
						if cmd.drift != 0 && (i+n-from >= limit || i+n == b.N) {
							b.StopTimer()
							undo(b, c, cmd, key, from, i+n-from)
							from = i + n
							b.StartTimer()
						}
					}
				})
			}
		}
	}
}

// fillEngine fills key with size elements of kind through the engine, one
// transaction.
func fillEngine(db *kvstore.DB, key, kind string, size int, member func(int) string) error {
	var elems [][]byte
	var zs []kvstore.ZMember
	for j := range size {
		switch kind {
		case "hash":
			elems = append(elems, []byte(member(j)), []byte("value"))
		case "zset":
			zs = append(zs, kvstore.ZMember{Member: []byte(member(j)), Score: float64(j)})
		default:
			elems = append(elems, []byte(member(j)))
		}
	}
	k := []byte(key)
	var err error
	switch kind {
	case "hash":
		_, err = db.HSet(k, elems...)
	case "zset":
		_, err = db.ZAdd(k, zs...)
	case "set":
		err = db.Update(func(tx *kvstore.Tx) error { _, err := tx.SAdd(k, elems...); return err })
	default:
		_, err = db.RPush(k, elems...)
	}
	return err
}

func anyStrings(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a.(string)
	}
	return out
}
