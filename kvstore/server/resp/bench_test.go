package resp_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

func openBenchDB(b *testing.B, policy kvstore.SyncPolicy) *kvstore.DB {
	b.Helper()
	db, err := kvstore.Open(b.TempDir(), kvstore.Options{Sync: policy, Logger: servertest.Logger(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkGoRedis measures SET and GET through go-redis against our server,
// 50 concurrent clients as in redis-benchmark -c 50.
func BenchmarkGoRedis(b *testing.B) {
	for _, policy := range []kvstore.SyncPolicy{kvstore.SyncAlways, kvstore.SyncNone} {
		for _, op := range []string{"SET", "GET"} {
			b.Run(fmt.Sprintf("%s/sync=%s", op, policy), func(b *testing.B) {
				db := openBenchDB(b, policy)
				addr := start(b, db, resp.Options{})
				c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 50})
				defer c.Close()
				ctx := context.Background()
				value := strings.Repeat("x", 3) // redis-benchmark's default -d 3
				for i := range 1000 {
					c.Set(ctx, "key:"+strconv.Itoa(i), value, 0)
				}
				b.SetParallelism(max(1, 50/runtime.GOMAXPROCS(0)))
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						key := "key:" + strconv.Itoa(i%1000)
						var err error
						if op == "SET" {
							err = c.Set(ctx, key, value, 0).Err()
						} else {
							err = c.Get(ctx, key).Err()
						}
						if err != nil {
							b.Error(err)
							return
						}
						i++
					}
				})
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
			})
		}
	}
}

// BenchmarkRedisBenchmarkSET runs `redis-benchmark -t set -c 50` against our
// server and, in the same run, against a real redis-server with the matching
// durability (appendfsync always / no), and reports both rates and their
// ratio. It needs redis-benchmark and redis-server; without them it skips.
func BenchmarkRedisBenchmarkSET(b *testing.B) {
	benchTool := requireTool(b, "redis-benchmark")
	redisServer := requireTool(b, "redis-server")
	for _, mode := range []struct {
		policy      kvstore.SyncPolicy
		appendfsync string
	}{{kvstore.SyncAlways, "always"}, {kvstore.SyncNone, "no"}} {
		b.Run("sync="+mode.policy.String(), func(b *testing.B) {
			requests := max(b.N, 20000)
			db := openBenchDB(b, mode.policy)
			oursAddr := start(b, db, resp.Options{})

			dir := b.TempDir()
			port := freePort(b)
			srv := exec.Command(redisServer, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
				"--appendonly", "yes", "--appendfsync", mode.appendfsync, "--save", "")
			if err := srv.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { srv.Process.Kill(); srv.Wait() }()
			redisAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			waitListening(b, redisAddr)

			// Alternate the two servers and keep the medians, so that load
			// from elsewhere on the machine hits both alike.
			const rounds = 3
			var ours, theirs []float64
			for range rounds {
				ours = append(ours, measureSET(b, benchTool, oursAddr, requests))
				theirs = append(theirs, measureSET(b, benchTool, redisAddr, requests))
			}
			o, r := median(ours), median(theirs)
			b.ReportMetric(o, "ours-ops/s")
			b.ReportMetric(r, "redis-ops/s")
			b.ReportMetric(o/r, "ours/redis")
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// measureSET runs redis-benchmark -t set -c 50 and returns requests per second.
func measureSET(b *testing.B, tool, addr string, requests int) float64 {
	b.Helper()
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(tool, "-h", host, "-p", port, "-t", "set", "-c", "50", "-n", strconv.Itoa(requests), "-r", "100000", "--csv").CombinedOutput()
	if err != nil {
		b.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	// "test","rps",...  then  "SET","41152.26",...
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, `"SET"`) {
			fields := strings.Split(line, ",")
			rps, err := strconv.ParseFloat(strings.Trim(fields[1], `"`), 64)
			if err != nil {
				b.Fatalf("redis-benchmark output %q: %v", line, err)
			}
			return rps
		}
	}
	b.Fatalf("no SET line in redis-benchmark output:\n%s", out)
	return 0
}

func freePort(b *testing.B) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitListening(b *testing.B, addr string) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("nothing listens on %s", addr)
}
