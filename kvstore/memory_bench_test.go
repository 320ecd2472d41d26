//go:build unix

// Unix only: the peer is a real redis-server, a Unix program, and the
// engine's resident size is read from /proc (skipped where there is none).

package kvstore

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkMemoryPerKey loads 1M keys of 100-byte values into the engine
// and, in the same run, into a real redis-server (no persistence), and
// reports the resident memory each needs per key, and how much the engine's
// grows when every key is overwritten once. Run it alone: the engine's
// figure is this process's RSS growth.
//
//	go test -run '^$' -bench BenchmarkMemoryPerKey -benchtime 1x .
func BenchmarkMemoryPerKey(b *testing.B) {
	const keys = 1_000_000
	keyOf := func(i int) []byte { return fmt.Appendf(nil, "key:%012d", i) }
	for range b.N {
		ours, grown := engineBytesPerKey(b, keys, keyOf)
		theirs := redisBytesPerKey(b, keys, keyOf)
		b.ReportMetric(ours, "engine-B/key")
		b.ReportMetric(theirs, "redis-B/key")
		b.ReportMetric(ours/theirs, "engine/redis")
		b.ReportMetric(grown, "overwrite-growth-%")
	}
}

// rss is this process's resident set in bytes, after a full collection
// returned what it could to the OS.
func rss(b *testing.B) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	b.Skip("no VmRSS")
	return 0
}

func engineBytesPerKey(b *testing.B, keys int, keyOf func(int) []byte) (perKey, overwriteGrowthPct float64) {
	dir := b.TempDir()
	before := rss(b)
	db, err := Open(dir, Options{Sync: SyncNone, CompactionThreshold: -1, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	load := func() {
		var batch Batch
		for i := 0; i < keys; i++ {
			batch.Set(keyOf(i), benchValue)
			if batch.Len() == 1000 || i == keys-1 {
				if err := db.Write(&batch); err != nil {
					b.Fatal(err)
				}
				batch.Reset()
			}
		}
	}
	load()
	loaded := rss(b)
	if path := os.Getenv("KVSTORE_HEAP_PROFILE"); path != "" { // the heap at its loaded size
		if f, err := os.Create(path); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	load() // every key overwritten once
	again := rss(b)
	return float64(loaded-before) / float64(keys), 100 * float64(again-loaded) / float64(loaded-before)
}

func redisBytesPerKey(b *testing.B, keys int, keyOf func(int) []byte) float64 {
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
	for i := 0; i < keys; i += 1000 {
		p := c.Pipeline()
		for j := i; j < min(i+1000, keys); j++ {
			p.Set(ctx, string(keyOf(j)), benchValue, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return float64(rssOf()-before) / float64(keys)
}
