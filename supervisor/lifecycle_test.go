//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

const sleeperYAML = `
processes:
  app:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=hello,sleep"}
    stop_timeout: 5s
`

func TestStartStatusStop_RoundTrip(t *testing.T) {
	h := newHarness(t, sleeperYAML)
	res := h.start("app")
	if len(res) != 1 || res[0].PID == 0 || res[0].AlreadyRunning {
		t.Fatalf("start results = %+v", res)
	}
	pid := res[0].PID
	st := h.status("app")
	if st.State != StateRunning || st.PID != pid || st.Drift || st.StartedAt == nil {
		t.Fatalf("status after start = %+v", st)
	}
	again := h.start("app")
	if !again[0].AlreadyRunning || again[0].PID != pid {
		t.Fatalf("second start = %+v, want already running pid %d", again, pid)
	}
	stopped, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{})
	if err != nil || stopped[0].Outcome != StopStopped {
		t.Fatalf("stop = %+v, %v", stopped, err)
	}
	if alive(pid) {
		t.Fatalf("pid %d still alive after stop", pid)
	}
	st = h.status("app")
	if st.State != StateStopped || st.ExitedAt == nil {
		t.Fatalf("status after stop = %+v", st)
	}
	log, _ := h.sup.LogPath("app")
	if !strings.HasSuffix(log, "app.log") {
		t.Fatalf("log path %q", log)
	}
}

func TestStop_NotRunningIsNotAnError(t *testing.T) {
	h := newHarness(t, sleeperYAML)
	res, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{})
	if err != nil || res[0].Outcome != StopNotRunning {
		t.Fatalf("stop = %+v, %v", res, err)
	}
	if _, err := h.sup.Stop(context.Background(), []string{"nope"}, StopOptions{}); !errors.Is(err, ErrUnknownProcess) {
		t.Fatalf("stop of unknown name: err = %v", err)
	}
}

func TestMonitor_RecordsExitCode(t *testing.T) {
	h := newHarness(t, `
processes:
  job:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=up,sleepfor=300ms,exit=7"}
    ready: {log: "^up", timeout: 5s}
`)
	h.start("job")
	eventually(t, 5*time.Second, "job is recorded as exited", func() bool {
		return h.status("job").State == StateExited
	})
	st := h.status("job")
	if st.ExitCode == nil || *st.ExitCode != 7 || st.ExitedAt == nil {
		t.Fatalf("status = %+v, want exited with code 7", st)
	}
}

func TestRestart_NewProcessOldOneGone(t *testing.T) {
	h := newHarness(t, sleeperYAML)
	old := h.start("app")[0].PID
	res, err := h.sup.Restart(context.Background(), []string{"app"}, StopOptions{})
	if err != nil || len(res) != 1 || res[0].PID == old || res[0].AlreadyRunning {
		t.Fatalf("restart = %+v, %v", res, err)
	}
	if alive(old) {
		t.Fatal("old process survived the restart")
	}
	if st := h.status("app"); st.State != StateRunning || st.PID != res[0].PID {
		t.Fatalf("status after restart = %+v", st)
	}
	// Restart of a stopped process simply starts it.
	h.sup.Stop(context.Background(), []string{"app"}, StopOptions{})
	if res, err := h.sup.Restart(context.Background(), []string{"app"}, StopOptions{}); err != nil || res[0].PID == 0 {
		t.Fatalf("restart of a stopped process = %+v, %v", res, err)
	}
}

func TestStart_RotatesAnOversizedLog(t *testing.T) {
	h := newHarness(t, `
processes:
  app:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=fresh,sleep"}
    log_file: logs/app.log   # the directory is created on start
    log_max_size: 100B
    log_backups: 1
`)
	path := h.dir + "/logs/app.log"
	h.start("app") // the supervisor creates the log: it may rotate it
	if _, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(strings.Repeat("old line\n", 50)), 0o600)
	h.start("app")
	// Without a ready probe start returns once the grace has passed, which
	// on a loaded machine can be before the child has printed.
	var cur []byte
	eventually(t, 10*time.Second, "the new run prints to the log", func() bool {
		cur, _ = os.ReadFile(path)
		return strings.Contains(string(cur), "fresh")
	})
	prev, _ := os.ReadFile(path + ".1")
	if strings.Contains(string(cur), "old line") || !strings.Contains(string(cur), "fresh") || !strings.HasPrefix(string(prev), "old line") {
		t.Fatalf("after start: %s = %q, .1 starts %q", path, cur, prev[:min(len(prev), 20)])
	}
}

func TestStartStop_DependencyOrder(t *testing.T) {
	h := newHarness(t, `
processes:
  db:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: sleep}
  cache:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: sleep}
  api:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: sleep}
    depends_on: [db, cache]
  worker:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: sleep}
    depends_on: [api]
`)
	// Starting worker starts its dependencies first.
	res := h.start("worker")
	var order []string
	for _, r := range res {
		order = append(order, r.Name)
	}
	if !slices.Equal(order, []string{"cache", "db", "api", "worker"}) {
		t.Fatalf("start order = %v", order)
	}
	// Start times recorded by the monitors agree with the dependencies
	// (cache and db, independent, start concurrently).
	started := map[string]time.Time{}
	for _, name := range order {
		started[name] = *h.status(name).StartedAt
	}
	for name, deps := range map[string][]string{"api": {"db", "cache"}, "worker": {"api"}} {
		for _, d := range deps {
			if started[name].Before(started[d]) {
				t.Fatalf("%s started before its dependency %s", name, d)
			}
		}
	}
	stopped, err := h.sup.Stop(context.Background(), []string{"db", "api", "worker", "cache"}, StopOptions{})
	if err != nil {
		t.Fatal(err)
	}
	order = order[:0]
	for _, r := range stopped {
		order = append(order, r.Name)
	}
	if !slices.Equal(order, []string{"worker", "api", "db", "cache"}) {
		t.Fatalf("stop order = %v", order)
	}
}
