//go:build unix

// Unix only: the peer is a real redis-server, a Unix program, and the
// engine's resident size is read from /proc (skipped where there is none).

package kvstore

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// collectionShape is one of the memory benchmark's loads: keys collections
// of elems elements each.
type collectionShape struct {
	name        string
	keys, elems int
	// ours adds key i to a transaction; redis queues it on a pipeline.
	ours  func(tx *Tx, i int) error
	redis func(p redis.Pipeliner, i int)
}

func elemOf(j int) []byte { return fmt.Appendf(nil, "value:%04d", j) } // 10 bytes

var collectionShapes = []collectionShape{
	{name: "hash10", keys: 1_000_000, elems: 10,
		ours: func(tx *Tx, i int) error {
			pairs := make([][]byte, 0, 20)
			for j := range 10 {
				pairs = append(pairs, fmt.Appendf(nil, "field:%d", j), elemOf(j))
			}
			_, err := tx.HSet(fmt.Appendf(nil, "hash:%09d", i), pairs...)
			return err
		},
		redis: func(p redis.Pipeliner, i int) {
			args := []any{}
			for j := range 10 {
				args = append(args, fmt.Sprintf("field:%d", j), string(elemOf(j)))
			}
			p.HSet(context.Background(), fmt.Sprintf("hash:%09d", i), args...)
		}},
	{name: "list100", keys: 100_000, elems: 100,
		ours: func(tx *Tx, i int) error {
			vals := make([][]byte, 100)
			for j := range vals {
				vals[j] = elemOf(j)
			}
			_, err := tx.RPush(fmt.Appendf(nil, "list:%09d", i), vals...)
			return err
		},
		redis: func(p redis.Pipeliner, i int) {
			args := make([]any, 100)
			for j := range args {
				args[j] = string(elemOf(j))
			}
			p.RPush(context.Background(), fmt.Sprintf("list:%09d", i), args...)
		}},
	{name: "zset100", keys: 100_000, elems: 100,
		ours: func(tx *Tx, i int) error {
			ms := make([]ZMember, 100)
			for j := range ms {
				ms[j] = ZMember{Member: elemOf(j), Score: float64(j)}
			}
			_, err := tx.ZAdd(fmt.Appendf(nil, "zset:%09d", i), ms...)
			return err
		},
		redis: func(p redis.Pipeliner, i int) {
			ms := make([]redis.Z, 100)
			for j := range ms {
				ms[j] = redis.Z{Score: float64(j), Member: string(elemOf(j))}
			}
			p.ZAdd(context.Background(), fmt.Sprintf("zset:%09d", i), ms...)
		}},
}

// BenchmarkMemoryCollections loads 1M hashes of 10 fields, 100k lists of
// 100 elements and 100k sorted sets of 100 members (10-byte elements) into
// the engine and, in the same run, into a real redis-server (no
// persistence, default listpack settings), and reports the resident memory
// per element of each. Run it alone: the engine's figure is this
// process's RSS growth.
//
//	go test -run '^$' -bench BenchmarkMemoryCollections -benchtime 1x .
func BenchmarkMemoryCollections(b *testing.B) {
	for _, shape := range collectionShapes {
		b.Run(shape.name, func(b *testing.B) {
			for range b.N {
				ours := engineBytesPerElement(b, shape)
				theirs := redisBytesPerElement(b, shape)
				b.ReportMetric(ours, "engine-B/elem")
				b.ReportMetric(theirs, "redis-B/elem")
				b.ReportMetric(ours/theirs, "engine/redis")
			}
		})
	}
}

func engineBytesPerElement(b *testing.B, shape collectionShape) float64 {
	before := rss(b)
	db, err := Open(b.TempDir(), Options{Sync: SyncNone, CompactionThreshold: -1, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < shape.keys; i += 1000 {
		err := db.Update(func(tx *Tx) error {
			for k := i; k < min(i+1000, shape.keys); k++ {
				if err := shape.ours(tx, k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return float64(rss(b)-before) / float64(shape.keys*shape.elems)
}

func redisBytesPerElement(b *testing.B, shape collectionShape) float64 {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal("redis-server not found: install redis-server")
		}
		b.Skip("redis-server not found: install it with `apt-get install redis-server`")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", b.TempDir(),
		"--save", "", "--appendonly", "no")
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(ctx).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("redis-server did not start")
		}
	}
	rssOf := func() int64 {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory_rss:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		b.Fatal("no used_memory_rss in INFO memory")
		return 0
	}
	before := rssOf()
	for i := 0; i < shape.keys; i += 1000 {
		p := c.Pipeline()
		for k := i; k < min(i+1000, shape.keys); k++ {
			shape.redis(p, k)
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return float64(rssOf()-before) / float64(shape.keys*shape.elems)
}
