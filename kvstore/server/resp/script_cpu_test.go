package resp

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
)

// leanFWPath is the rate limiter's lean fixed-window script, the script its
// store runs most, read from the repository beside this module (not copied:
// the module is tested alone too, and then the benchmark skips).
const leanFWPath = "../../../ratelimit/redisstore/lua/lean_fw.lua"

// BenchmarkEvalshaServerSide runs EVALSHA of the rate limiter's lean
// fixed-window script, batched as its store sends it (9 checks a call over
// 10k keys), through the server's command path without a network: the
// server's CPU per call, which under a loaded machine decides the
// store-vs-redis ratio (ratelimit/redisstore BenchmarkStore_DevkitKVVsRedis).
func BenchmarkEvalshaServerSide(b *testing.B) {
	for _, policy := range []kvstore.SyncPolicy{kvstore.SyncNone, kvstore.SyncAlways} {
		b.Run("sync="+policy.String(), func(b *testing.B) {
			src, err := os.ReadFile(leanFWPath)
			if err != nil {
				b.Skipf("the rate limiter's script is not beside this module (%v): run it from the devkit repository", err)
			}
			leanFW := string(src)
			db := servertest.OpenDBWith(b, kvstore.Options{Sync: policy})
			s := NewServer(db, Options{Logger: servertest.Logger(b)})
			cl := &client{srv: s, authed: true, log: s.opts.Logger}
			cl.multiLen.Store(-1)
			now := time.Now()
			s.execute(cl, [][]byte{[]byte("SCRIPT"), []byte("LOAD"), []byte(leanFW)}, now)
			sha := bytes.Clone(cl.out.buf[len(cl.out.buf)-42 : len(cl.out.buf)-2]) // out.buf is reused by the calls
			cl.out.buf = cl.out.buf[:0]
			const checks = 9
			calls := make([][][]byte, 64)
			for i := range calls {
				args := [][]byte{[]byte("EVALSHA"), sha, []byte(strconv.Itoa(checks))}
				for k := range checks {
					args = append(args, fmt.Appendf(nil, "rl:{user:%d}:abcdef", (i*checks+k)%10000))
				}
				args = append(args, []byte(strconv.Itoa(checks)))
				for range checks {
					args = append(args, []byte("1"), []byte("1099511627776"), []byte("60000"), []byte("0"))
				}
				calls[i] = args
			}
			b.ReportAllocs()
			cpu0, _, _ := cpuTimes()
			b.ResetTimer()
			for i := range b.N {
				s.execute(cl, calls[i%len(calls)], now)
				if !cl.settle() {
					b.Fatal("write failed")
				}
				if cl.out.buf[0] != '*' {
					b.Fatalf("reply %q", cl.out.buf)
				}
				cl.out.buf = cl.out.buf[:0]
			}
			b.StopTimer()
			if cpu1, _, ok := cpuTimes(); ok {
				used := cpu1[0] + cpu1[1] - cpu0[0] - cpu0[1]
				b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
