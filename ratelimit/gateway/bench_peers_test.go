//go:build unix

package gateway_test

// Pass-through side by side, in one run, taking turns: the same load (a Go
// load generator in a process of its own, N connections, a fixed time)
// against nginx with limit_req, devkit's gateway (memory store), Caddy's
// reverse_proxy and a bare httputil.ReverseProxy, each in front of the same
// upstream process, at 200 and at 1,000 connections, kept alive and with
// Connection: close (a new connection per request). Every request passes
// (the limits are far above the load), so each proxy counts it and
// forwards it.
//
//	go test -run '^$' -bench '^BenchmarkGateway_PassThroughVsNginxAndReverseProxy$' -benchtime 4x ./gateway

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/policy"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// benchOnlyEnv, when set (gateway, nginx, caddy or reverseproxy), makes the
// pass-through comparison drive that proxy alone: a CPU profile of the
// benchmark is then the gateway's alone.
const benchOnlyEnv = "GATEWAY_BENCH_ONLY"

// peerSlice is one turn of one proxy at one operating point; peerSliceEnv
// (a Go duration) overrides it, for a quick check that the comparison runs.
const (
	peerSlice    = 3 * time.Second
	peerSliceEnv = "GATEWAY_BENCH_SLICE"
)

// turnLength is peerSlice or what peerSliceEnv says.
func turnLength(b *testing.B) time.Duration {
	v := os.Getenv(peerSliceEnv)
	if v == "" {
		return peerSlice
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 100*time.Millisecond {
		b.Fatalf("%s=%q: want a duration of at least 100ms", peerSliceEnv, v)
	}
	return d
}

// latencyGenEnv, when set in the environment of this test binary, makes
// TestLatencyLoadGenerator the load generator of the pass-through
// comparison: "url conns milliseconds keepalive|close".
const latencyGenEnv = "GATEWAY_BENCH_LATGEN"

// TestLatencyLoadGenerator is not a test: run in a child process, it drives
// url from conns clients (one goroutine each, a request after each answer)
// for the time given and prints the requests per second and the p50 and
// p99 latency in microseconds. Every answer must be a 200. With "close",
// each request says Connection: close and goes on a new connection (the
// latency then includes the connect).
func TestLatencyLoadGenerator(t *testing.T) {
	spec := os.Getenv(latencyGenEnv)
	if spec == "" {
		t.Skip("the pass-through comparison's load generator; runs only in its child process")
	}
	var target string
	var conns, ms int
	var mode string
	if _, err := fmt.Sscanf(spec, "%s %d %d %s", &target, &conns, &ms, &mode); err != nil || (mode != "keepalive" && mode != "close") {
		t.Fatalf("%s=%q: want \"url conns milliseconds keepalive|close\" (%v)", latencyGenEnv, spec, err)
	}
	// DisableKeepAlives sends Connection: close and dials for each request.
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, MaxIdleConns: conns,
		DisableKeepAlives: mode == "close"}
	client := &http.Client{Transport: tr}
	run := func(d time.Duration) []time.Duration {
		var mu sync.Mutex
		var all []time.Duration
		var wg sync.WaitGroup
		deadline := time.Now().Add(d)
		for range conns {
			wg.Go(func() {
				mine := make([]time.Duration, 0, 1024)
				for time.Now().Before(deadline) {
					start := time.Now()
					resp, err := client.Get(target)
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Errorf("%s: status %d, want 200", target, resp.StatusCode)
						return
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				all = append(all, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		return all
	}
	run(300 * time.Millisecond) // connect every connection first
	took := run(time.Duration(ms) * time.Millisecond)
	if len(took) == 0 {
		t.Fatal("no answer")
	}
	slices.Sort(took)
	q := func(p float64) float64 {
		return float64(took[min(len(took)-1, int(p*float64(len(took))))].Microseconds())
	}
	fmt.Printf("rps=%f p50=%f p99=%f\n", float64(len(took))/(float64(ms)/1000), q(0.50), q(0.99))
}

// passTurn is one turn's figures.
type passTurn struct{ rps, p50, p99 float64 }

// driveLatency runs the load generator against target at conns connections
// for one turn, kept alive or (mode "close") one per request.
func driveLatency(b *testing.B, target string, conns int, mode string) passTurn {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLatencyLoadGenerator$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d %s", latencyGenEnv, target, conns, turnLength(b).Milliseconds(), mode))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("load generator against %s: %v\n%s", target, err, out)
	}
	var r passTurn
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "rps=") {
			fmt.Sscanf(line, "rps=%f p50=%f p99=%f", &r.rps, &r.p50, &r.p99)
		}
	}
	if r.rps == 0 {
		b.Fatalf("load generator printed no rate:\n%s", out)
	}
	return r
}

// startNginxPassing runs nginx with a limit_req zone whose rate no load
// reaches, proxying to upstream over kept-alive connections.
func startNginxPassing(b *testing.B, upstream string) string {
	target, _ := runNginx(b, upstream, nginxConf{
		rate: "100000000r/s", limitReq: "limit_req zone=perip burst=100000 nodelay;", keepalive: 1024, listen: " backlog=4096",
	})
	return target + "/"
}

// startCaddy runs Debian's caddy (reverse_proxy to upstream, the admin
// endpoint off, automatic HTTPS off, bound to 127.0.0.1 on a free port,
// its home, storage and log in a temporary directory) and returns its URL;
// the benchmark stops it by its PID. Its upstream pool keeps up to 1,024
// idle connections, as nginx's keepalive does (Caddy's default is 32).
func startCaddy(b *testing.B, upstream string) string {
	bin, err := exec.LookPath("caddy")
	if err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal("caddy not found (apt-get install caddy); CI=true: the peer benchmark must run")
		}
		b.Skip("caddy not found: the peer is missing (apt-get install caddy)")
	}
	dir := b.TempDir()
	port := redistest.FreePort(b)
	u, _ := url.Parse(upstream)
	conf := fmt.Sprintf(`{
	admin off
	auto_https off
	servers {
		protocols h1
	}
}
http://:%[1]d {
	bind 127.0.0.1
	reverse_proxy %[2]s {
		transport http {
			keepalive_idle_conns_per_host 1024
		}
	}
}
`, port, u.Host)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "caddy.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "run", "--config", path, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stopNginx(cmd) }) // SIGINT, then SIGKILL after 5 s: Caddy's graceful stop too
	target := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resp, err := http.Get(target); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "caddy.log"))
			b.Fatalf("caddy did not answer 200 at %s:\n%s", target, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return target
}

// BenchmarkGateway_PassThroughVsNginxAndReverseProxy takes turns (max(b.N,
// 4) rounds, the order rotating each round, so that each proxy takes each
// place) at each operating point — conns=N kept alive, close/conns=N with
// Connection: close — and reports each proxy's median throughput and
// p50/p99 latency, the median of the per-round ratios (gateway/nginx,
// gateway/caddy, gateway/reverseproxy), and the load average at the end:
// the machine is shared, so the figures are for ratios within one run.
func BenchmarkGateway_PassThroughVsNginxAndReverseProxy(b *testing.B) {
	upstream := processUpstream(b)
	nginx := startNginxPassing(b, upstream)
	caddy := startCaddy(b, upstream)
	gw := "http://" + benchGateway(b, upstream, openPolicy).Addr() + "/"
	bare := bareProxy(b, upstream) + "/"
	type target struct{ name, url string }
	all := []target{{"gateway", gw}, {"nginx", nginx}, {"caddy", caddy}, {"reverseproxy", bare}}
	targets := all
	if only := os.Getenv(benchOnlyEnv); only != "" {
		// Profiling one proxy (-cpuprofile): drive it alone.
		targets = slices.DeleteFunc(slices.Clone(all), func(t target) bool { return t.name != only })
	}
	point := func(b *testing.B, conns int, mode string) {
		rounds := max(b.N, len(targets))
		turns := make(map[string][]passTurn)
		ratios := make(map[string][]float64) // peer name → gateway/peer per round
		b.ResetTimer()
		for r := range rounds {
			got := map[string]passTurn{}
			for i := range targets {
				t := targets[(r+i)%len(targets)]
				got[t.name] = driveLatency(b, t.url, conns, mode)
				turns[t.name] = append(turns[t.name], got[t.name])
			}
			if len(targets) == len(all) {
				for _, peer := range all[1:] {
					ratios[peer.name] = append(ratios[peer.name], got["gateway"].rps/got[peer.name].rps)
				}
			}
		}
		b.StopTimer()
		for _, t := range targets {
			var rps, p50, p99 []float64
			for _, x := range turns[t.name] {
				rps, p50, p99 = append(rps, x.rps), append(p50, x.p50), append(p99, x.p99)
			}
			b.ReportMetric(median(rps), t.name+"-req/s")
			b.ReportMetric(median(p50), t.name+"-p50-µs")
			b.ReportMetric(median(p99), t.name+"-p99-µs")
		}
		for peer, rs := range ratios {
			b.ReportMetric(median(rs), "gateway/"+peer)
		}
		if load, err := strconv.ParseFloat(loadAverage(), 64); err == nil {
			b.ReportMetric(load, "loadavg")
		}
	}
	for _, conns := range []int{200, 1000} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) { point(b, conns, "keepalive") })
	}
	b.Run("close", func(b *testing.B) {
		for _, conns := range []int{200, 1000} {
			b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) { point(b, conns, "close") })
		}
	})
}

// authBenchPolicy is the auth endpoint's policy in the auth_request
// benchmark: nginx (on 127.0.0.1) is the trusted proxy, and every request
// is counted under a limit no load reaches, as limit_req's zone is.
const authBenchPolicy = `
identity:
  trusted_proxies: [127.0.0.1/32]
rules:
  - {name: api, paths: [/], key: [ip], limits: [{limit: 1000000000, window: 1h}]}
`

// startNginxAuth runs nginx as startNginxPassing does (two workers, the
// upstream kept alive), with auth_request asking devkit's auth endpoint at
// auth (host:port, kept alive too) instead of limit_req: the configuration
// of docs/ratelimit.md without the denial's named location, which a load
// that is never denied does not reach.
func startNginxAuth(b *testing.B, upstream, auth string) string {
	target, _ := runNginx(b, upstream, nginxConf{
		rate: "100000000r/s", limitReq: "auth_request /_ratelimit;", keepalive: 1024, listen: " backlog=4096",
		http: "upstream devkit { server " + auth + "; keepalive 1024; }",
		location: `    }
    location = /_ratelimit {
      internal;
      proxy_pass http://devkit/ratelimit/auth;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URI $request_uri;
      proxy_set_header X-Original-Method $request_method;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
`,
	})
	return target + "/"
}

// BenchmarkGateway_AuthRequestVsNginxLimitReq: nginx asking devkit's auth
// endpoint (a gateway with no upstream, memory store, in this process)
// for every request with auth_request, against nginx with its own
// limit_req, both in front of the same upstream process, taking turns at
// 200 connections kept alive from the Go load generator (every request
// passes). The goal: nginx + devkit ≥ 0.5× nginx + limit_req. Each turn of
// nginx + devkit is checked to have asked devkit once per answer at least.
func BenchmarkGateway_AuthRequestVsNginxLimitReq(b *testing.B) {
	upstream := processUpstream(b)
	p, err := policy.Parse("auth.yaml", []byte(authBenchPolicy))
	if err != nil {
		b.Fatal(err)
	}
	asTheCommand(b)
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	auth, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", AuthPath: "/ratelimit/auth", Policy: p, Limiter: l,
		Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := auth.Listen(ctx); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { auth.Serve(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	withAuth := startNginxAuth(b, upstream, auth.Addr())
	withLimitReq := startNginxPassing(b, upstream)
	for _, conns := range []int{200} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			var ours, peer, ratios []float64
			var first float64
			b.ResetTimer()
			for i := range evenRounds(b.N) {
				var o, p passTurn
				decisions := func() (n int64) {
					for _, c := range l.Stats().Snapshot() {
						n += c.Decisions()
					}
					return n
				}
				before := decisions()
				if i%2 == 0 {
					o = driveLatency(b, withAuth, conns, "keepalive")
					p = driveLatency(b, withLimitReq, conns, "keepalive")
					first = o.rps / p.rps
				} else {
					p = driveLatency(b, withLimitReq, conns, "keepalive")
					o = driveLatency(b, withAuth, conns, "keepalive")
					ratios = append(ratios, math.Sqrt(first*o.rps/p.rps))
				}
				if got := decisions() - before; float64(got) < o.rps*turnLength(b).Seconds() {
					b.Fatalf("devkit decided %d requests in a turn of %.0f answers: nginx did not ask it for each", got, o.rps*turnLength(b).Seconds())
				}
				ours, peer = append(ours, o.rps), append(peer, p.rps)
			}
			b.StopTimer()
			b.ReportMetric(median(ours), "nginx-auth-request-req/s")
			b.ReportMetric(median(peer), "nginx-limit-req-req/s")
			b.ReportMetric(median(ratios), "auth-request/limit-req")
			if load, err := strconv.ParseFloat(loadAverage(), 64); err == nil {
				b.ReportMetric(load, "loadavg")
			}
		})
	}
}
