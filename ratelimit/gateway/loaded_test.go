//go:build unix

package gateway_test

// Exact at the defaults on a busy machine: a store that answers, however
// late the busy machine makes its answers, decides every check; only a store
// that stops answering (or answers slower than the hard bound) is left to the
// failure policy, and then within a bounded time.

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

const loadedPolicy = "rules:\n  - {name: hot, paths: [/], key: [ip], limits: [{limit: 300, window: 1h}]}\n"

// burnCPU starts n busy-looping shell processes and stops them (by PID) at
// cleanup or when the returned function is called: the machine is then
// busy the way a shared CI runner is, for the gateway and redis-server alike.
func burnCPU(t *testing.T, n int) (stop func()) {
	t.Helper()
	var procs []*exec.Cmd
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a CPU burner: %v", err)
		}
		procs = append(procs, cmd)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, p := range procs {
				p.Process.Kill()
				p.Wait()
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// hammer sends GET / (one identity: 127.0.0.1) from clients goroutines, each
// on its own keep-alive connection, each request after the previous answer,
// n requests each, and counts the answers.
func hammer(t *testing.T, base string, clients, n int) (admitted, denied, failOpen, total int64) {
	t.Helper()
	var a, dn, fo, tot atomic.Int64
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range n {
				req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				tot.Add(1)
				switch {
				case resp.StatusCode == http.StatusOK && resp.Header.Get("X-RateLimit-Limit") == "":
					fo.Add(1) // admitted by the failure policy: no store answer to report
					a.Add(1)
				case resp.StatusCode == http.StatusOK:
					a.Add(1)
				case resp.StatusCode == http.StatusTooManyRequests:
					dn.Add(1)
				default:
					t.Errorf("status %d", resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	return a.Load(), dn.Load(), fo.Load(), tot.Load()
}

// okUpstream answers 200 to everything.
func okUpstream(t *testing.T) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(up.Close)
	return up.URL
}

// gatewayOnRedis starts a gateway at the CLI's defaults (fail open, the
// default budget, a blocked cache) on the Redis at url.
func gatewayOnRedis(t *testing.T, url, upstream string) (*gateway.Server, *ratelimit.Limiter) {
	t.Helper()
	client, err := redisstore.NewClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	limiter := ratelimit.New(redisstore.New(client, redisstore.Options{Prefix: "loaded:"}),
		ratelimit.Options{Fail: ratelimit.FailOpen, BlockedCacheSize: 10000, Logger: discardLogger()})
	return startGateway(t, upstream, loadedPolicy, gateway.Config{Limiter: limiter, Logger: discardLogger()}), limiter
}

// 200 clients of one identity through the gateway at its defaults, on a real
// redis-server, while CPU burners keep the 2-core machine's load far above
// its cores: the store answers every check, late as the machine makes its
// answers, so exactly the limit is admitted and the failure policy decides
// nothing. With a fixed 250 ms deadline on each store call, 50–70 checks of
// such a burst ran out of it at load 13 and were admitted by fail-open
// (529 of a limit of 500 through three proxies).
func TestGateway_BusyMachineHealthyRedisAdmitsExactlyTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("a burst on a busy machine")
	}
	rs := redistest.StartRedis(t)
	srv, limiter := gatewayOnRedis(t, rs.URL(), okUpstream(t))
	stop := burnCPU(t, 2*runtime.NumCPU())
	start := time.Now()
	admitted, denied, failOpen, total := hammer(t, "http://"+srv.Addr(), 200, 3)
	took := time.Since(start)
	load := loadAverage()
	stop()
	var counted int64
	for _, rc := range limiter.Stats().Snapshot() {
		counted += rc.FailOpen
	}
	t.Logf("load %s: %d requests in %v, %d admitted (%d by the failure policy, %d counted), %d denied",
		load, total, took.Round(time.Millisecond), admitted, failOpen, counted, denied)
	if admitted != 300 || failOpen != 0 {
		t.Fatalf("admitted %d of a limit of 300 (%d by the failure policy) with a healthy store; want exactly 300, none by the policy",
			admitted, failOpen)
	}
}

// A store that stops answering (redis-server stopped with SIGSTOP) is left
// to the failure policy, open and closed alike: a check waiting in the
// store's queue one budget after the store's last answer, and a check
// already on the wire (at most redisstore.DefaultPipeline of them: the Redis
// client ends those at its socket deadline only) at the longest wait.
func TestGateway_StoppedRedisDecidedByTheFailurePolicyInBoundedTime(t *testing.T) {
	rs := redistest.StartRedis(t)
	for _, fail := range []ratelimit.FailurePolicy{ratelimit.FailOpen, ratelimit.FailClosed} {
		t.Run(fail.String(), func(t *testing.T) {
			client, err := redisstore.NewClient(rs.URL())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { client.Close() })
			limiter := ratelimit.New(redisstore.New(client, redisstore.Options{Prefix: "stopped-" + fail.String() + ":"}),
				ratelimit.Options{Fail: fail, Logger: discardLogger()})
			lim := ratelimit.Limit{Rate: 1000, Period: time.Hour}
			if _, err := limiter.Allow(context.Background(), "warm", lim); err != nil {
				t.Fatal(err)
			}
			if err := rs.Pause(); err != nil {
				t.Fatal(err)
			}
			defer rs.Resume()
			want := map[ratelimit.FailurePolicy]ratelimit.Source{ratelimit.FailOpen: ratelimit.FromFailOpen,
				ratelimit.FailClosed: ratelimit.FromFailClosed}[fail]
			var mu sync.Mutex
			var took []time.Duration
			var wrong int
			var wg sync.WaitGroup
			for range 50 {
				wg.Go(func() {
					start := time.Now()
					res, _ := limiter.Allow(context.Background(), "tenant:acme", lim)
					mu.Lock()
					defer mu.Unlock()
					took = append(took, time.Since(start))
					if res.Source != want {
						wrong++
					}
				})
			}
			wg.Wait()
			slices.Sort(took)
			onWire := took[len(took)-redisstore.DefaultPipeline:]
			queued := took[:len(took)-redisstore.DefaultPipeline]
			if wrong != 0 || queued[len(queued)-1] > ratelimit.DefaultBudget+300*time.Millisecond ||
				onWire[len(onWire)-1] > ratelimit.DefaultMaxWait+500*time.Millisecond {
				t.Fatalf("stopped store, fail %s: %d of 50 checks not decided by the policy; queued checks decided within %v (want %v), the %d on the wire within %v (want %v)",
					fail, wrong, queued[len(queued)-1], ratelimit.DefaultBudget, len(onWire), onWire[len(onWire)-1], ratelimit.DefaultMaxWait)
			}
			t.Logf("stopped store, fail %s: 50 checks decided by the policy, %d within %v, the slowest in %v",
				fail, len(queued), queued[len(queued)-1].Round(time.Millisecond), onWire[len(onWire)-1].Round(time.Millisecond))
		})
	}
}
