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
	"strconv"
	"strings"
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

func viewCostWindow() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("VIEW_COST_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 20 * time.Second
}

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
		measure(b, pid)
	})

	b.Run("dash", func(b *testing.B) {
		port := freePort(b)
		cmd := exec.Command(s.Bin, "dash", "-c", s.Config, "--listen", fmt.Sprintf("127.0.0.1:%d", port))
		cmd.Env = s.Environ()
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		// One open tab: the page's event stream, read as a browser reads it.
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
				b.Fatalf("devkit dash did not serve /events: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		b.Cleanup(func() { resp.Body.Close() })
		go func() {
			r := bufio.NewReader(resp.Body)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
			}
		}()
		measure(b, cmd.Process.Pid)
	})
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
