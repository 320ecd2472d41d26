package resp_test

import (
	"context"
	"fmt"
	"testing"

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
