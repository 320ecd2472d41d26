//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/ready"
)

func TestStart_ReadyProbes(t *testing.T) {
	addr := freeAddr(t)
	tests := []struct {
		name  string
		ready string
	}{
		{"tcp", fmt.Sprintf("{tcp: %q, timeout: 5s}", addr)},
		{"http", fmt.Sprintf("{http: %q, timeout: 5s}", "http://"+addr+"/")},
		{"exec", fmt.Sprintf("{exec: %q, timeout: 5s}", "grep -q listening \"$LOG\"")},
		{"log", "{log: 'listening on 127\\.0\\.0\\.1', timeout: 5s}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "processes: {}")
			child := "listen=" + addr + ",sleep"
			if tt.name == "http" {
				child = "http=" + addr + ",sleep"
			}
			h.load(fmt.Sprintf(`
processes:
  web:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: %q, LOG: %q}
    log_file: web.log
    ready: %s
`, child, h.dir+"/web.log", tt.ready))
			res := h.start("web")
			if h.status("web").State != StateRunning {
				t.Fatalf("not running after a successful ready probe: %+v", res)
			}
			if _, err := h.sup.Stop(context.Background(), []string{"web"}, StopOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestStart_ReadyFailureExitsNonZeroWithLogTail(t *testing.T) {
	h := newHarness(t, `
processes:
  crashy:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=fatal: config missing,exit=3"}
    ready: {tcp: "127.0.0.1:1", timeout: 5s}
`)
	_, err := h.sup.Start(context.Background(), []string{"crashy"})
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *StartError", err)
	}
	if !strings.Contains(se.Err.Error(), "(exit code 3)") || !strings.Contains(string(se.LogTail), "fatal: config missing") {
		t.Fatalf("start error %q, tail %q", se.Err, se.LogTail)
	}
	if r, _ := h.sup.home.ReadRecord("crashy"); r != nil {
		t.Fatal("record left after a failed start")
	}
}

func TestStart_ReadyTimeoutStopsTheProcess(t *testing.T) {
	addr := freeAddr(t)
	h := newHarness(t, fmt.Sprintf(`
processes:
  slow:
    command: sh
    args: ["-c", "echo warming up; exec sleep 300"]
    ready: {tcp: %q, timeout: %s}
`, addr, scaled(300*time.Millisecond)))
	_, err := h.sup.Start(context.Background(), []string{"slow"})
	var se *StartError
	if !errors.As(err, &se) || !errors.Is(err, ready.ErrTimeout) || !strings.Contains(string(se.LogTail), "warming up") {
		t.Fatalf("err = %v (tail %q), want a ready timeout with the log tail", err, tailOf(se))
	}
	if st := h.status("slow"); st.State == StateRunning {
		t.Fatalf("process still running after a failed start: %+v", st)
	}
}

func TestStart_ReadyPortTakenFailsFastNamingTheHolder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.NotFoundHandler())
	h := newHarness(t, fmt.Sprintf(`
processes:
  web:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "sleep"}
    ready: {tcp: %q, timeout: 5s}
`, ln.Addr().String()))
	_, err = h.sup.Start(context.Background(), []string{"web"})
	if err == nil || !strings.Contains(err.Error(), "already in use by pid") {
		t.Fatalf("err = %v, want the port holder named", err)
	}
	if r, _ := h.sup.home.ReadRecord("web"); r != nil {
		t.Fatal("a process was started although its port was taken")
	}
}

func tailOf(se *StartError) string {
	if se == nil {
		return ""
	}
	return string(se.LogTail)
}

func TestStart_HTTPProbeReportsTheStatusNotTheDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(250 * time.Millisecond) // so that the deadline falls inside an attempt
		http.Error(w, "warming up", http.StatusServiceUnavailable)
	}))
	h := newHarness(t, fmt.Sprintf(`
processes:
  web:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "sleep"}
    ready: {http: "http://%s/healthz", timeout: 600ms, interval: 100ms}
`, ln.Addr().String()))
	_, err = h.sup.Start(context.Background(), []string{"web"})
	if err == nil || !strings.Contains(err.Error(), "503") || strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("err = %v, want the 503 reported", err)
	}
}

func TestStart_FailedStartReportsTheExitCodeEvenFromASlowMonitor(t *testing.T) {
	// A loaded machine, played by stopping the monitor: the process dies
	// before it is ready, and its monitor can record how it ended only
	// seconds later. The start must wait for that record, not guess.
	h := newHarness(t, `
processes:
  crashy:
    command: sh
    args: ["-c", "while [ ! -e go ]; do sleep 0.02; done; exit 3"]
    ready: {log: never printed, timeout: 60s}
`)
	done := make(chan error, 1)
	go func() {
		_, err := h.sup.Start(context.Background(), []string{"crashy"})
		done <- err
	}()
	var monitor int
	eventually(t, 10*time.Second, "crashy runs under its monitor", func() bool {
		if r, _ := h.sup.home.ReadRecord("crashy"); r != nil && r.Monitor != nil {
			monitor = r.Monitor.PID
		}
		return monitor != 0
	})
	if err := syscall.Kill(monitor, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			syscall.Kill(monitor, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	if err := os.WriteFile(filepath.Join(h.dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done: // too early: the monitor has recorded nothing yet
	case <-time.After(2 * time.Second):
		resume()
		err = <-done
	}
	resume()
	var se *StartError
	if !errors.As(err, &se) || !strings.Contains(se.Err.Error(), "(exit code 3)") {
		t.Fatalf("err = %v, want the exit code the monitor records", err)
	}
}
