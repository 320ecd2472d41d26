//go:build unix

package top

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/stacktest"
)

// The views' own cost, idle, over a ten-process stack (the example stack
// plus idle processes): CPU as a percentage of one core and resident
// memory of the view's process, over a window of VIEW_COST_SECONDS
// (default 20) per iteration. The goal (docs/live-view.md) is under 2 % of
// a core and under 40 MB for either view.
//
//	cd cmd/devkit && GOWORK=off go test -run '^$' -bench BenchmarkViewIdleCost -benchtime 1x ./internal/cmd/top/

func viewCostWindow() time.Duration { return envSeconds("VIEW_COST_SECONDS", 20) }

// tenProcessStack starts the example stack with as many idle processes
// added as make ten in all.
func tenProcessStack(b *testing.B) *stacktest.Stack {
	b.Helper()
	s := stacktest.Start(b, stacktest.Devkit(b), stacktest.Options{Idle: 7})
	out, err := s.Run("sup", "-c", s.Config, "status", "--json")
	if err != nil {
		b.Fatalf("sup status: %v\n%s", err, out)
	}
	if n := strings.Count(out, `"name"`); n < 10 {
		b.Logf("the stack has %d processes", n)
	}
	return s
}

// procCPU is utime+stime of pid, in clock ticks (USER_HZ, 100 on Linux).
func procCPU(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis: state is field 3,
	// utime 14 and stime 15.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return ut + st
}

// procRSS is VmRSS of pid, in bytes.
func procRSS(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024
		}
	}
	b.Fatalf("/proc/%d/status has no VmRSS", pid)
	return 0
}

// measure reports pid's CPU over the window and its RSS at the end.
func measure(b *testing.B, pid int) {
	b.Helper()
	// Let the view settle: its first ticks build what it keeps.
	time.Sleep(3 * time.Second)
	window := viewCostWindow()
	var cpu, rss float64
	b.ResetTimer()
	for range b.N {
		before := procCPU(b, pid)
		time.Sleep(window)
		cpu += (procCPU(b, pid) - before) / 100 / window.Seconds() * 100
		rss = procRSS(b, pid)
	}
	b.StopTimer()
	b.ReportMetric(cpu/float64(b.N), "cpu-%")
	b.ReportMetric(rss/1e6, "rss-MB")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkViewIdleCost(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc")
	}
	s := tenProcessStack(b)

	b.Run("top", func(b *testing.B) {
		pid, closeView := openTop(b, s)
		b.Cleanup(closeView)
		measure(b, pid)
	})

	b.Run("dash", func(b *testing.B) {
		pid, closeView := openDash(b, s)
		b.Cleanup(closeView)
		measure(b, pid)
	})
}

// openTop runs `devkit top` over s in a 120x40 tmux pane, as a person
// does, and returns its PID and what closes it.
func openTop(b *testing.B, s *stacktest.Stack) (int, func()) {
	b.Helper()
	tm := newTmux(b)
	var env []string
	for k, v := range s.Env {
		env = append(env, k+"="+shellQuote(v))
	}
	command := fmt.Sprintf("exec env TERM=xterm-256color PATH=%s %s %s top -c %s --read-only",
		shellQuote(os.Getenv("PATH")), strings.Join(env, " "), shellQuote(s.Bin), shellQuote(s.Config))
	tm.run("new-session", "-d", "-s", "top", "-x", "120", "-y", "40", command)
	tm.await(30*time.Second, "the view shows the kv row", func(sc string) bool {
		_, ok := rowOf(sc, "kv")
		return ok
	})
	pid, err := strconv.Atoi(strings.TrimSpace(tm.run("display-message", "-p", "-t", "top", "#{pane_pid}")))
	if err != nil {
		b.Fatal(err)
	}
	return pid, func() { _ = exec.Command("tmux", "-S", tm.socket, "kill-server").Run() }
}

// openDash runs `devkit dash` over s with one open tab (its event stream,
// read as a browser reads it), and returns its PID and what closes both.
func openDash(b *testing.B, s *stacktest.Stack) (int, func()) {
	b.Helper()
	port := freePort(b)
	cmd := exec.Command(s.Bin, "dash", "-c", s.Config, "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.Env = s.Environ()
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	var resp *http.Response
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/events", port))
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if resp != nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			stop()
			b.Fatalf("devkit dash did not serve /events: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	go func() {
		r := bufio.NewReader(resp.Body)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	return cmd.Process.Pid, func() { resp.Body.Close(); stop() }
}

// The stack's throughput with a view open, against without: the example
// stack (ten processes, as above) serves THROUGHPUT_SECONDS (default 5) of
// requests through the gateway (THROUGHPUT_WORKERS clients, default 8, each
// request of another workspace, so that the limiter decides every one in the
// KV server and lets it through to the store) with no view, with `devkit
// top` in a tmux pane and with `devkit dash` and one open event stream, in
// THROUGHPUT_ROUNDS rounds (default 3) that rotate the order. It reports the
// median requests per second of each and the ratios to no view.
//
//	cd cmd/devkit && GOWORK=off go test -run '^$' -bench BenchmarkStackThroughputWithAView -benchtime 1x ./internal/cmd/top/
func BenchmarkStackThroughputWithAView(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc")
	}
	window := envSeconds("THROUGHPUT_SECONDS", 5)
	rounds, workers := envInt("THROUGHPUT_ROUNDS", 3), envInt("THROUGHPUT_WORKERS", 8)
	newTmux(b) // skips without tmux before the stack starts
	s := tenProcessStack(b)
	gateway := s.URL("GATEWAY_PORT") + "/keys/greeting"
	views := []struct {
		name string
		open func() func()
	}{
		{"none", func() func() { return func() {} }},
		{"top", func() func() { _, closeView := openTop(b, s); return closeView }},
		{"dash", func() func() { _, closeView := openDash(b, s); return closeView }},
	}
	rates := map[string][]float64{}
	b.ResetTimer()
	for range b.N {
		for round := range rounds {
			for i := range views {
				v := views[(i+round)%len(views)]
				closeView := v.open()
				time.Sleep(3 * time.Second) // past the view's first readings
				rates[v.name] = append(rates[v.name], throughput(b, gateway, workers, window))
				closeView()
			}
		}
	}
	b.StopTimer()
	for name, rs := range rates {
		b.Logf("%s: %.0f req/s", name, rs)
	}
	none := median(rates["none"])
	if none > 0 {
		// The noise: how far apart the runs without a view are.
		b.ReportMetric((slices.Max(rates["none"])-slices.Min(rates["none"]))/none, "none-spread")
	}
	for _, v := range views {
		b.ReportMetric(median(rates[v.name]), v.name+"-req/s")
		if v.name != "none" && none > 0 {
			b.ReportMetric(median(rates[v.name])/none, v.name+"/none")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// throughput sends requests to url from workers clients for window and
// returns the answers per second (any status: a denial is served too).
func throughput(b *testing.B, url string, workers int, window time.Duration) float64 {
	b.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	var answered atomic.Int64
	var failed atomic.Value
	deadline := time.Now().Add(window)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("X-Workspace-ID", fmt.Sprintf("bench-%d-%d-%d", time.Now().UnixNano(), w, i))
				resp, err := client.Do(req)
				if err != nil {
					failed.Store(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered.Add(1)
			}
		})
	}
	start := time.Now()
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatalf("a request through the gateway failed: %v", err)
	}
	return float64(answered.Load()) / time.Since(start).Seconds()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func envSeconds(name string, def int) time.Duration {
	return time.Duration(envInt(name, def)) * time.Second
}

// freePort is a 127.0.0.1 port that was free a moment ago.
func freePort(b *testing.B) int {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
