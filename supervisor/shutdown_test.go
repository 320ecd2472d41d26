//go:build unix

package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A process that ignores its stop signal and ends only when asked by its
// own protocol (here: a file appears) stops cleanly through its shutdown
// command; without the command the same stop times out.
func TestStop_ShutdownCommandRunsBeforeSignals(t *testing.T) {
	const yaml = `
processes:
  app:
    command: sh
    args: ["-c", "trap '' TERM; echo up; while [ ! -e \"$QUIT_FILE\" ]; do sleep 0.02; done; echo bye"]
    env: {QUIT_FILE: quit}
    stop_timeout: 500ms
    shutdown: {command: 'echo "$DEVKIT_SUP_PID" > "$QUIT_FILE"', timeout: 5s}
`
	h := newHarness(t, yaml)
	pid := h.start("app")[0].PID
	res, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{})
	if err != nil || res[0].Outcome != StopStopped || res[0].Shutdown != "" {
		t.Fatalf("stop = %+v, %v; want stopped through the shutdown command", res, err)
	}
	if alive(pid) {
		t.Fatalf("pid %d alive after stop", pid)
	}
	got, err := os.ReadFile(filepath.Join(h.dir, "quit"))
	if err != nil || strings.TrimSpace(string(got)) != strconv.Itoa(pid) {
		t.Fatalf("the command saw DEVKIT_SUP_PID=%q (%v), want %d", got, err, pid)
	}
	if st := h.status("app"); st.State != StateStopped {
		t.Fatalf("status after stop = %+v", st)
	}
}

// The shutdown signal replaces stop_signal once the command has had its
// time; a failing command is reported and the signals still follow.
func TestStop_ShutdownSignalFollowsFailedCommand(t *testing.T) {
	const yaml = `
processes:
  app:
    command: sh
    args: ["-c", "trap '' TERM; trap 'exit 0' INT; echo up; while :; do sleep 0.02; done"]
    stop_timeout: 2s
    shutdown: {command: 'echo refused >&2; exit 3', signal: SIGINT, timeout: 300ms}
`
	h := newHarness(t, yaml)
	pid := h.start("app")[0].PID
	res, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{})
	if err != nil || res[0].Outcome != StopStopped {
		t.Fatalf("stop = %+v, %v; want stopped by SIGINT", res, err)
	}
	if !strings.Contains(res[0].Shutdown, "exit status 3") || !strings.Contains(res[0].Shutdown, "refused") {
		t.Fatalf("shutdown error = %q, want the command's status and output", res[0].Shutdown)
	}
	if alive(pid) {
		t.Fatalf("pid %d alive after stop", pid)
	}
}

// Without a shutdown command, the same process ignoring TERM outlives its
// timeout: the command is what stopped it above.
func TestStop_NoShutdownTimesOut(t *testing.T) {
	const yaml = `
processes:
  app:
    command: sh
    args: ["-c", "trap '' TERM; echo up; while :; do sleep 0.02; done"]
    stop_timeout: 300ms
`
	h := newHarness(t, yaml)
	h.start("app")
	start := time.Now()
	_, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{})
	if !errors.Is(err, ErrStopTimeout) {
		t.Fatalf("stop err = %v after %s, want ErrStopTimeout", err, time.Since(start))
	}
}

func TestConfig_ShutdownErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"shutdown: {command: x, timeout: 0s}", "processes.a.shutdown.timeout: must be positive"},
		{"shutdown: {signal: SIGFOO}", "processes.a.shutdown.signal: \"SIGFOO\" is not a stop signal"},
		{"shutdown: {comand: x}", "processes.a.shutdown.comand: unknown field"},
		{"shutdown: {timeout: 1s}", "processes.a.shutdown: want a command, a signal or both"},
	} {
		_, err := ParseConfig("ops.yaml", []byte("processes:\n  a:\n    command: x\n    "+tc.body+"\n"), func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), "ops.yaml:") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.body, err, tc.want)
		}
	}
	cfg, err := ParseConfig("ops.yaml", []byte("processes:\n  a:\n    command: x\n    stop_signal: QUIT\n    shutdown: {command: x}\n"), func(string) (string, bool) { return "", false })
	if err != nil || cfg.Processes["a"].Shutdown.Signal != "QUIT" || cfg.Processes["a"].Shutdown.Timeout != DefaultShutdownTimeout {
		t.Fatalf("defaults: %+v, %v", cfg.Processes["a"].Shutdown, err)
	}
}
