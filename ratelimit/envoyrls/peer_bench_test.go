//go:build unix

package envoyrls_test

// Side by side with envoyproxy/ratelimit, the service whose API envoyrls
// serves: both run as their own processes on the same redis-server, take
// turns under the same load, and must give the same decisions for it
// (the same number of OK and OVER_LIMIT answers), or the run fails.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/envoyrls"
	"github.com/devkit-go/devkit/ratelimit/policy"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// EnvoyRLSBinEnv names envoyproxy/ratelimit's service binary the peer
// benchmark runs (it is not a dependency of any module):
//
//	GOBIN=$PWD/bin go install github.com/envoyproxy/ratelimit/src/service_cmd@v1.4.1-0.20260122083618-3fb702589d36
//	ENVOY_RLS_BIN=$PWD/bin/service_cmd make bench
const EnvoyRLSBinEnv = "ENVOY_RLS_BIN"

// The two workloads. "many": every identity is asked hitsPerIdentity times
// under a limit of manyLimit an hour, so both servers count a new key in
// Redis for most checks and deny a quarter. "hot": one identity under a
// limit of hotLimit an hour, so nearly every check is a denial.
const (
	hitsPerIdentity = 4
	manyLimit       = 3
	hotLimit        = 1000
)

// The same limits in each server's words: devkit's policy keys the rule
// chosen by the path on the user; envoyproxy/ratelimit's configuration
// nests the user under the path's value.
const (
	peerBenchPolicy = `
identity:
  trusted_proxies: [127.0.0.1/32]
rules:
  - {name: many, paths: [/many], key: [user], limits: [{limit: 3, window: 1h}]}
  - {name: hot, paths: [/hot], key: [user], limits: [{limit: 1000, window: 1h}]}
`
	peerBenchEnvoyConfig = `
domain: edge
descriptors:
  - key: path
    value: /many
    descriptors:
      - key: user
        rate_limit: {unit: hour, requests_per_unit: 3}
  - key: path
    value: /hot
    descriptors:
      - key: user
        rate_limit: {unit: hour, requests_per_unit: 1000}
`
)

// rlsProcess is one rate limit service, started by the benchmark.
type rlsProcess struct {
	name    string
	pid     int // 0: in this process
	grpc    string
	clients []rlsv3.RateLimitServiceClient // one connection each
	// shared are as many clients over sharedConns connections, as Envoy's
	// workers each keep one HTTP/2 connection to the service.
	shared []rlsv3.RateLimitServiceClient
}

// sharedConns is the connections of rlsProcess.shared: Envoy's workers on
// this machine's 2 cores.
const sharedConns = 2

// cpu is the CPU time (user and system) the process has used, from /proc.
func (p *rlsProcess) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if p.pid == 0 {
		b, err = os.ReadFile("/proc/self/stat")
	}
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // clock ticks of 10 ms
}

// syscalls is the number of read and write system calls the process has
// made (syscr and syscw of /proc/<pid>/io): unlike CPU time, it hardly
// depends on what else runs on the machine.
func (p *rlsProcess) syscalls() int64 {
	path := fmt.Sprintf("/proc/%d/io", p.pid)
	if p.pid == 0 {
		path = "/proc/self/io"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var n int64
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok && (k == "syscr" || k == "syscw") {
			c, _ := strconv.ParseInt(v, 10, 64)
			n += c
		}
	}
	return n
}

// selfCPU is the CPU time this process (the clients) has used.
func selfCPU() time.Duration { return (&rlsProcess{}).cpu() }

// freeAddr is a 127.0.0.1 address whose port was free a moment ago.
func freeAddr(b *testing.B) (string, int) {
	port := redistest.FreePort(b)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port
}

// startRLS starts cmd (its log in dir), kills it by its PID at cleanup,
// and returns once its gRPC address answers a check.
func startRLS(b *testing.B, name string, cmd *exec.Cmd, grpcAddr, dir string, clients int) *rlsProcess {
	b.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.Cleanup(func() { // SIGTERM, then SIGKILL after 5 s
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return dialRLS(b, &rlsProcess{name: name, pid: cmd.Process.Pid, grpc: grpcAddr}, exited, logf.Name(), clients)
}

// dialRLS connects clients to p and returns it once it answers a check;
// exited, when closed, says the process is gone (its log in logFile).
func dialRLS(b *testing.B, p *rlsProcess, exited <-chan struct{}, logFile string, clients int) *rlsProcess {
	b.Helper()
	for i := range clients + sharedConns {
		cc, err := grpc.NewClient("passthrough:///"+p.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cc.Close() })
		if i < clients {
			p.clients = append(p.clients, rlsv3.NewRateLimitServiceClient(cc))
		} else {
			p.shared = append(p.shared, rlsv3.NewRateLimitServiceClient(cc))
		}
	}
	for i := range clients - sharedConns {
		p.shared = append(p.shared, p.shared[i%sharedConns])
	}
	probe := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*commonv3.RateLimitDescriptor{benchDescriptor("/many", "probe")}}
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case <-exited:
			log, _ := os.ReadFile(logFile)
			b.Fatalf("%s exited:\n%s", p.name, log)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := p.clients[0].ShouldRateLimit(ctx, probe)
		cancel()
		if err == nil {
			return p
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			b.Fatalf("%s does not answer on %s: %v\n%s", p.name, p.grpc, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func benchDescriptor(path, user string) *commonv3.RateLimitDescriptor {
	return &commonv3.RateLimitDescriptor{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "path", Value: path}, {Key: "user", Value: user}}}
}

// startDevkitRLS runs `devkit ratelimit serve --grpc-addr` at its defaults.
func startDevkitRLS(b *testing.B, bin, redisURL, dir string, clients int) *rlsProcess {
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(peerBenchPolicy), 0o644); err != nil {
		b.Fatal(err)
	}
	listen, _ := freeAddr(b)
	grpcAddr, _ := freeAddr(b)
	cmd := exec.Command(bin, "ratelimit", "serve", "--listen", listen, "--grpc-addr", grpcAddr, "--policy", pol, "--redis", redisURL)
	cmd.Env = append(os.Environ(), "REDIS_URL=")
	return startRLS(b, "devkit", cmd, grpcAddr, dir, clients)
}

// InProcessEnv, set to 1, serves devkit's side in the benchmark's own
// process (envoyrls.Serve with the limiter serve builds), so that
// -cpuprofile sees it; its CPU per decision then includes the clients'.
const InProcessEnv = "ENVOYRLS_BENCH_INPROCESS"

// startDevkitInProcess serves envoyrls as `devkit ratelimit serve` does:
// the policy's budget, fail-open, a blocked cache of 100,000 identities,
// the Redis store at its defaults.
func startDevkitInProcess(b *testing.B, redisURL string, clients int) *rlsProcess {
	p, err := policy.Parse("policy.yaml", []byte(peerBenchPolicy))
	if err != nil {
		b.Fatal(err)
	}
	client, err := redisstore.NewClient(redisURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close() })
	l := ratelimit.New(redisstore.New(client, redisstore.Options{}),
		ratelimit.Options{Fail: ratelimit.FailOpen, Budget: p.Budget, BlockedCacheSize: 100_000})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- envoyrls.Serve(ctx, ln, envoyrls.New(l, func() *policy.Policy { return p }), time.Second, nil)
	}()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("serve: %v", err)
		}
	})
	return dialRLS(b, &rlsProcess{name: "devkit (in process)", grpc: ln.Addr().String()}, nil, "", clients)
}

// startEnvoyRLS runs envoyproxy/ratelimit's service at its defaults
// (statistics kept but printed, not sent: USE_STATSD=false).
func startEnvoyRLS(b *testing.B, bin, redisAddr, dir string, clients int) *rlsProcess {
	conf := filepath.Join(dir, "runtime", "ratelimit", "config")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "edge.yaml"), []byte(peerBenchEnvoyConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	grpcAddr, grpcPort := freeAddr(b)
	_, httpPort := freeAddr(b)
	_, debugPort := freeAddr(b)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisAddr,
		"RUNTIME_ROOT="+filepath.Join(dir, "runtime"), "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_APPDIRECTORY=config",
		"RUNTIME_WATCH_ROOT=false", "USE_STATSD=false", "LOG_LEVEL=warn",
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(httpPort),
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(grpcPort),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+strconv.Itoa(debugPort))
	return startRLS(b, "envoyproxy-ratelimit", cmd, grpcAddr, dir, clients)
}

// turnResult is one server's turn: its decisions, and its CPU time.
type turnResult struct {
	ok, over int64
	took     time.Duration
	cpu      time.Duration // the server's
	syscalls int64         // the server's reads and writes
	// clientCPU and redisCPU are the benchmark process's and redis-server's.
	clientCPU, redisCPU time.Duration
	// crossedHour is set when the turn spanned an hour boundary, where
	// envoyproxy/ratelimit's windows (aligned on the clock) start again.
	crossedHour bool
}

func (r turnResult) perSecond() float64 { return float64(r.ok+r.over) / r.took.Seconds() }

// turn runs clients concurrent callers against p for d, each call asking
// one descriptor: for "many", call i asks for identity i/hitsPerIdentity of
// this turn's own set, for "hot" every call asks for the turn's one identity.
func turn(p *rlsProcess, clients []rlsv3.RateLimitServiceClient, rs *redistest.Server, workload, tag string, d time.Duration) (turnResult, error) {
	var next, ok, over atomic.Int64
	var firstErr atomic.Value
	cpu0, hour0 := p.cpu(), time.Now().Truncate(time.Hour)
	sys0 := p.syscalls()
	client0 := selfCPU()
	redis0, _ := rs.CPU()
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			req := &rlsv3.RateLimitRequest{Domain: "edge"}
			for time.Now().Before(deadline) {
				i := next.Add(1) - 1
				user := tag
				if workload == "many" {
					user = tag + "-" + strconv.FormatInt(i/hitsPerIdentity, 10)
				}
				req.Descriptors = []*commonv3.RateLimitDescriptor{benchDescriptor("/"+workload, user)}
				resp, err := c.ShouldRateLimit(context.Background(), req)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if resp.GetOverallCode() == rlsv3.RateLimitResponse_OK {
					ok.Add(1)
				} else {
					over.Add(1)
				}
			}
		})
	}
	wg.Wait()
	redis1, _ := rs.CPU()
	r := turnResult{ok: ok.Load(), over: over.Load(), took: time.Since(start), cpu: p.cpu() - cpu0, syscalls: p.syscalls() - sys0,
		clientCPU: selfCPU() - client0, redisCPU: redis1 - redis0,
		crossedHour: !time.Now().Truncate(time.Hour).Equal(hour0)}
	if err, _ := firstErr.Load().(error); err != nil {
		return r, fmt.Errorf("%s: %w", p.name, err)
	}
	return r, nil
}

// wantOK is the number of OK answers the limits give for n calls.
func wantOK(workload string, n int64) int64 {
	if workload == "hot" {
		return min(n, hotLimit)
	}
	return n/hitsPerIdentity*manyLimit + min(n%hitsPerIdentity, manyLimit)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkShouldRateLimitVsEnvoyRatelimit compares `devkit ratelimit
// serve --grpc-addr` with envoyproxy/ratelimit's own service
// ($ENVOY_RLS_BIN), both at their defaults on one redis-server, under 50
// concurrent gRPC clients (one connection each; "-2conns": over 2
// connections, as Envoy's workers share theirs), in turns of 2 s whose
// order alternates, for at least 3 rounds; it reports each server's median
// decisions/s and CPU per decision (of the server's process) and the
// median of the per-round ratios. Every turn must answer exactly the OK
// count the limits give, on both servers.
//
//	DEVKIT_BIN=$PWD/bin/devkit ENVOY_RLS_BIN=$PWD/bin/service_cmd \
//	  go test -run '^$' -bench VsEnvoyRatelimit ./envoyrls/
func BenchmarkShouldRateLimitVsEnvoyRatelimit(b *testing.B) {
	const (
		clients  = 50
		turnTime = 2 * time.Second
	)
	peerBin := os.Getenv(EnvoyRLSBinEnv)
	if peerBin == "" {
		b.Skip("$" + EnvoyRLSBinEnv + " is not set: install envoyproxy/ratelimit's service (GOBIN=$PWD/bin go install " +
			"github.com/envoyproxy/ratelimit/src/service_cmd@v1.4.1-0.20260122083618-3fb702589d36) and set it to the binary")
	}
	inProcess := os.Getenv(InProcessEnv) == "1"
	devkitBin := ""
	if !inProcess {
		devkitBin = redistest.DevkitBin(b)
	}
	rs := redistest.StartRedisServer(b)
	dir := b.TempDir()
	var devkit *rlsProcess
	if inProcess {
		devkit = startDevkitInProcess(b, rs.URL(), clients)
	} else {
		devkit = startDevkitRLS(b, devkitBin, rs.URL(), dir, clients)
	}
	servers := []*rlsProcess{devkit, startEnvoyRLS(b, peerBin, rs.Addr, dir, clients)}
	for _, bench := range []string{"many", "hot", "many-2conns", "hot-2conns"} {
		workload, twoConns := strings.CutSuffix(bench, "-2conns")
		b.Run(bench, func(b *testing.B) {
			rounds := max(3, b.N)
			rates := make([][]float64, len(servers))
			cpus := make([][]float64, len(servers))
			clientCPUs := make([][]float64, len(servers))
			redisCPUs := make([][]float64, len(servers))
			syscalls := make([][]float64, len(servers))
			var ratios []float64
			for round := range rounds {
				var results [2]turnResult
				for k := range servers {
					i := (k + round) % len(servers) // alternate who goes first
					tag := fmt.Sprintf("%s-r%d-%d-%d", workload, round, i, time.Now().UnixNano())
					clients := servers[i].clients
					if twoConns {
						clients = servers[i].shared
					}
					r, err := turn(servers[i], clients, rs, workload, tag, turnTime)
					if err != nil {
						b.Fatal(err)
					}
					n := r.ok + r.over
					if want := wantOK(workload, n); r.ok != want && !r.crossedHour {
						b.Errorf("%s, round %d: %d OK of %d, want %d", servers[i].name, round, r.ok, n, want)
					}
					results[i] = r
					rates[i] = append(rates[i], r.perSecond())
					perDecision := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(max(n, 1)) }
					cpus[i] = append(cpus[i], perDecision(r.cpu))
					clientCPUs[i] = append(clientCPUs[i], perDecision(r.clientCPU))
					redisCPUs[i] = append(redisCPUs[i], perDecision(r.redisCPU))
					syscalls[i] = append(syscalls[i], float64(r.syscalls)/float64(max(n, 1)))
				}
				ratios = append(ratios, results[0].perSecond()/results[1].perSecond())
			}
			b.ReportMetric(median(rates[0]), "devkit-decisions/s")
			b.ReportMetric(median(rates[1]), "envoy-decisions/s")
			b.ReportMetric(median(ratios), "devkit/envoy")
			b.ReportMetric(median(cpus[0]), "devkit-cpu-µs/decision")
			b.ReportMetric(median(cpus[1]), "envoy-cpu-µs/decision")
			// What the servers share: the clients' CPU and Redis's, per decision.
			b.ReportMetric(median(clientCPUs[0]), "devkit-client-cpu-µs/decision")
			b.ReportMetric(median(clientCPUs[1]), "envoy-client-cpu-µs/decision")
			b.ReportMetric(median(redisCPUs[0]), "devkit-redis-cpu-µs/decision")
			b.ReportMetric(median(redisCPUs[1]), "envoy-redis-cpu-µs/decision")
			b.ReportMetric(median(syscalls[0]), "devkit-syscalls/decision")
			b.ReportMetric(median(syscalls[1]), "envoy-syscalls/decision")
			b.ReportMetric(0, "ns/op") // the figures above are the result
		})
	}
}
