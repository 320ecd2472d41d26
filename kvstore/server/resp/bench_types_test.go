package resp_test

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// BenchmarkRedisBenchmarkTypes runs redis-benchmark's own tests against our
// server (its default connection path) and a real redis-server in one run,
// alternating the two 3 times and reporting the medians and the ratio
// ours/redis per row. Rows, as issue goals state them:
//
//	SET-d4096, GET-d4096 /memory-only
//	                       4 KB values, a memory-only devkit (--data "")
//	                       vs redis without persistence: neither writes
//	                       anything
//	SET-c1, GET-c1 /memory-only
//	                       one connection, the same pair
//	SET-d4096, SET-c1 /sync=none-vs-appendfsync-no
//	                       the same promise with a log: devkit --sync none
//	                       vs redis appendonly yes, appendfsync no (both
//	                       write their log before the reply)
//	LPUSH LPOP SADD HSET ZADD LRANGE_100 /sync=none
//	                       vs redis without persistence
//	LPUSH SADD HSET ZADD /sync=always
//	                       strict writes of each type, vs appendfsync always
//	SET-short/sync=always  20,000 requests a turn (the strict SET goal must
//	                       hold in short runs too), vs appendfsync always
//
// devkit-snapshots is how many snapshots the engine took by itself in the
// row (fill included).
//
// redis-benchmark's collection tests write one key each (mylist, myset,
// myhash, myzset) with -r 100000 random members: these rows measure writes
// to a collection that grows to tens of thousands of elements.
// It needs redis-benchmark and redis-server; without them it skips (fails
// under CI=true).
func BenchmarkRedisBenchmarkTypes(b *testing.B) {
	benchTool := requireTool(b, "redis-benchmark")
	redisServer := requireTool(b, "redis-server")
	noPersistence := []string{"--appendonly", "no", "--save", ""}
	always := []string{"--appendonly", "yes", "--appendfsync", "always", "--save", ""}
	aofNoSync := []string{"--appendonly", "yes", "--appendfsync", "no", "--save", ""}
	type row struct {
		name     string
		policy   kvstore.SyncPolicy // memoryOnly: a memory-only engine instead
		redis    []string
		test     string
		clients  int
		size     int
		requests int
		fill     string // a test run first on each server, untimed (GET reads keys that exist)
	}
	none := kvstore.SyncNone
	rows := []row{
		{"SET-d4096/memory-only", memoryOnly, noPersistence, "set", 50, 4096, 100000, ""},
		{"SET-d4096/sync=none-vs-appendfsync-no", none, aofNoSync, "set", 50, 4096, 100000, ""},
		{"GET-d4096/memory-only", memoryOnly, noPersistence, "get", 50, 4096, 100000, "set"},
		{"SET-c1/memory-only", memoryOnly, noPersistence, "set", 1, 100, 20000, ""},
		{"SET-c1/sync=none", none, noPersistence, "set", 1, 100, 20000, ""}, // the row: the log kept
		{"SET-c1/sync=none-vs-appendfsync-no", none, aofNoSync, "set", 1, 100, 20000, ""},
		{"GET-c1/memory-only", memoryOnly, noPersistence, "get", 1, 100, 20000, "set"},
		{"SET-short/sync=always", kvstore.SyncAlways, always, "set", 50, 100, 20000, ""},
	}
	for _, t := range []string{"lpush", "lpop", "sadd", "hset", "zadd", "lrange_100"} {
		fill := ""
		if t == "lpop" || t == "lrange_100" {
			fill = "lpush"
		}
		rows = append(rows, row{strings.ToUpper(t) + "/sync=none", none, noPersistence, t, 50, 100, 100000, fill})
	}
	for _, t := range []string{"lpush", "sadd", "hset", "zadd"} {
		rows = append(rows, row{strings.ToUpper(t) + "/sync=always", kvstore.SyncAlways, always, t, 50, 100, 100000, ""})
	}
	for _, tc := range rows {
		b.Run(tc.name, func(b *testing.B) {
			requests := max(b.N, tc.requests)
			db := openBenchDB(b, tc.policy)
			ours := startOn(b, db, resp.Options{})
			port := freePort(b)
			srv := exec.Command(redisServer, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", b.TempDir()}, tc.redis...)...)
			if err := srv.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
			redisAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			waitListening(b, redisAddr)
			servers := []struct {
				name, addr string
				cpu        func() int64
			}{
				{"devkit", ours, selfCPU},
				{"redis", redisAddr, func() int64 { return procCPU(srv.Process.Pid) }},
			}
			// Alternated, each server first in turn (see BenchmarkRedisBenchmarkSET).
			fill := func() {
				for _, sv := range servers {
					measureWith(b, benchTool, sv.addr, tc.fill, requests, tc.clients, tc.size, nil)
				}
			}
			var between func()
			if tc.fill != "" {
				fill()
			}
			if tc.test == "lpop" {
				between = fill // LPOP empties what it pops: every turn starts from the same list
			}
			rps, cpu := alternate(len(servers), func(i int) (float64, float64) {
				c0 := servers[i].cpu()
				r := measureWith(b, benchTool, servers[i].addr, tc.test, requests, tc.clients, tc.size, nil)
				return r, float64(servers[i].cpu()-c0) / float64(requests)
			}, between)
			for i, sv := range servers {
				b.Logf("%s %s: %v requests/s, %v CPU ns/request", tc.name, sv.name, rps[i], cpu[i])
				b.ReportMetric(median(rps[i]), sv.name+"-ops/s")
				b.ReportMetric(median(cpu[i]), sv.name+"-cpu-ns/op")
			}
			b.ReportMetric(median(rps[0])/median(rps[1]), "devkit/redis")
			// Snapshots the engine took by itself in the row (fill included):
			// their writes compete with the requests for the CPU.
			b.ReportMetric(float64(db.Stats().Compactions), "devkit-snapshots")
		})
	}
}

// measureWith runs redis-benchmark -t test with clients connections and
// size-byte values, and returns requests per second.
func measureWith(b *testing.B, tool, addr, test string, requests, clients, size int, extra []string) float64 {
	b.Helper()
	host, port, _ := net.SplitHostPort(addr)
	args := append([]string{"-h", host, "-p", port, "-t", test, "-c", strconv.Itoa(clients), "-d", strconv.Itoa(size),
		"-n", strconv.Itoa(requests), "-r", "100000", "--csv"}, extra...)
	out, err := exec.Command(tool, args...).CombinedOutput()
	if err != nil {
		b.Fatalf("redis-benchmark %v: %v\n%s", args, err, out)
	}
	// "test","rps",...  then  "SET","41152.26",...; LRANGE_100's name goes
	// on: "LRANGE_100 (first 100 elements)". A fill line ("LPUSH (needed
	// to benchmark LRANGE)") comes first and is skipped by the exact name.
	name := strings.ToUpper(test)
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Split(line, ",")
		if len(fields) < 2 {
			continue
		}
		got := strings.Trim(fields[0], `"`)
		if got != name && !strings.HasPrefix(got, name+" (first") {
			continue
		}
		rps, err := strconv.ParseFloat(strings.Trim(fields[1], `"`), 64)
		if err != nil {
			b.Fatalf("redis-benchmark output %q: %v", line, err)
		}
		return rps
	}
	b.Fatalf("no %s line in redis-benchmark output:\n%s", name, out)
	return 0
}
