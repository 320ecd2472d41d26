//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

func TestMonitor_OnFailureRestartsWithBackoffThenGivesUp(t *testing.T) {
	// Each run outlives StartGrace by far more than a loaded machine delays
	// the monitor's reply (see TestMonitor_AlwaysRestartsAfterCleanExitAndStopEndsIt).
	h := newHarness(t, `
processes:
  flaky:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=run,sleepfor=1s,exit=1"}
    restart: {policy: on-failure, max_restarts: 2, backoff: 50ms, max_backoff: 100ms}
`)
	first := h.start("flaky")[0].PID
	eventually(t, 10*time.Second, "the monitor gives up", func() bool {
		st := h.status("flaky")
		return st.State == StateExited && strings.Contains(st.Reason, "gave up")
	})
	st := h.status("flaky")
	if st.Restarts != 2 || st.ExitCode == nil || *st.ExitCode != 1 {
		t.Fatalf("status = %+v, want exited code 1 after 2 restarts", st)
	}
	path, _ := h.sup.LogPath("flaky")
	log, _ := logTail(path)
	if n := strings.Count(log, "run\n"); n != 3 {
		t.Fatalf("process ran %d times, want 3 (first + 2 restarts); log:\n%s", n, log)
	}
	if !strings.Contains(log, "in=50ms") || !strings.Contains(log, "in=100ms") {
		t.Fatalf("backoff not doubled as configured; log:\n%s", log)
	}
	if alive(first) {
		t.Fatal("first process still alive")
	}
}

func TestMonitor_AlwaysRestartsAfterCleanExitAndStopEndsIt(t *testing.T) {
	// Each run outlives StartGrace by far more than a loaded machine delays
	// the monitor's reply (600ms left 100ms and failed at load 20).
	h := newHarness(t, `
processes:
  loop:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "sleepfor=1s,exit=0"}
    restart: {policy: always, backoff: 10ms}
`)
	first := h.start("loop")[0].PID
	eventually(t, 5*time.Second, "a restarted process runs", func() bool {
		st := h.status("loop")
		return st.State == StateRunning && st.PID != first && st.Restarts >= 1
	})
	if _, err := h.sup.Stop(context.Background(), []string{"loop"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // longer than a run: a restart would show now
	if st := h.status("loop"); st.State != StateStopped {
		t.Fatalf("status after stop = %+v, want stopped (no restart)", st)
	}
}

func TestMonitor_KilledMonitorShowsUnsupervisedAndHidesNothing(t *testing.T) {
	h := newHarness(t, sleeperYAML)
	pid := h.start("app")[0].PID
	rec, _ := h.sup.home.ReadRecord("app")
	mon, err := proc.Open(*rec.Monitor)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	mon.Signal(syscall.SIGKILL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := mon.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if st := h.status("app"); st.State != StateUnsupervised || st.PID != pid || !strings.Contains(st.Reason, "devkit sup restart app") {
		t.Fatalf("status with the monitor killed = %+v, want unsupervised with the fix", st)
	}
	res, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{})
	if err != nil || res[0].Outcome != StopStopped || alive(pid) {
		t.Fatalf("stop with the monitor killed = %+v, %v (alive=%v)", res, err, alive(pid))
	}
	if st := h.status("app"); st.State != StateStopped {
		t.Fatalf("status after stop = %+v", st)
	}
}

func logTail(path string) (string, error) {
	data, err := os.ReadFile(path)
	return string(data), err
}

func TestMonitor_StopDuringBackoffPreventsTheRestart(t *testing.T) {
	// The process outlives StartGrace (500ms, counted from the monitor's
	// reply, which follows the synced record) by far more than a loaded
	// machine's delay of that reply: 550ms left 50ms and failed at load 12.
	h := newHarness(t, `
processes:
  dying:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=ready,sleepfor=1s,exit=2"}
    restart: {policy: on-failure, backoff: 400ms}
`)
	h.start("dying")
	eventually(t, 5*time.Second, "the process waits for its restart", func() bool {
		return h.status("dying").State == StateRestarting
	})
	if _, err := h.sup.Stop(context.Background(), []string{"dying"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // past the backoff
	st := h.status("dying")
	if st.State == StateRunning || st.State == StateRestarting || st.Restarts != 0 {
		t.Fatalf("status after stop during backoff = %+v, want no restart", st)
	}
	path, _ := h.sup.LogPath("dying")
	if log, _ := logTail(path); strings.Count(log, "ready") != 1 {
		t.Fatalf("process ran again after stop; log:\n%s", log)
	}
}

func TestMonitorKilledDuringBackoff_StatusSaysThePolicyIsNoLongerApplied(t *testing.T) {
	h := newHarness(t, `
processes:
  flaky:
    command: sh
    args: ["-c", "echo up; while [ ! -e die ]; do sleep 0.02; done; rm die; exit 1"]
    ready: {log: up, timeout: 20s}
    restart: {policy: always, backoff: 1m, max_backoff: 1m}
`)
	h.sup.cfg.Processes["flaky"].Cwd = h.dir
	h.start("flaky")
	if err := os.WriteFile(filepath.Join(h.dir, "die"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the monitor waits out its backoff", func() bool {
		exit, _ := h.sup.home.ReadExit("flaky")
		return h.status("flaky").State == StateRestarting && exit != nil && exit.RestartAt != nil
	})
	rec, err := h.sup.home.ReadRecord("flaky")
	if err != nil || rec == nil || rec.Monitor == nil {
		t.Fatalf("record %+v: %v", rec, err)
	}
	if err := syscall.Kill(rec.Monitor.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the monitor is gone", func() bool { return !alive(rec.Monitor.PID) })
	for range 2 { // it stays said: the first status does not clean it away
		st := h.status("flaky")
		if st.State != StateExited || !strings.Contains(st.Reason, "restart policy is no longer applied") || !strings.Contains(st.Reason, "devkit sup start flaky") {
			t.Fatalf("status after the monitor died in a backoff: %s: %q", st.State, st.Reason)
		}
	}
	h.start("flaky") // the way back
	if st := h.status("flaky"); st.State != StateRunning {
		t.Fatalf("after start: %s %q", st.State, st.Reason)
	}
}
