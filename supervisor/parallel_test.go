//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStart_IndependentProcessesBecomeReadyConcurrently(t *testing.T) {
	// Six processes that become ready only once the test opens a gate: a
	// start that waited for one before spawning the next would never have
	// all six running at once. No wall-clock bound, so load cannot fail it.
	var b strings.Builder
	b.WriteString("processes:\n")
	for i := range 6 {
		fmt.Fprintf(&b, `  p%d:
    command: sh
    args: ["-c", "touch p%[1]d-started; while [ ! -e go ]; do sleep 0.02; done; touch p%[1]d-ready; echo ready; exec sleep 300"]
    ready: {log: ready, timeout: 60s}
`, i)
	}
	// after records whether p0 and p5 were ready when it started.
	b.WriteString(`  after:
    command: sh
    args: ["-c", "if [ -e p0-ready ] && [ -e p5-ready ]; then touch after-ok; else touch after-early; fi; exec sleep 300"]
    ready: {exec: "test -e after-ok || test -e after-early", timeout: 60s}
    depends_on: [p0, p5]
`)
	h := newHarness(t, b.String())
	for _, p := range h.sup.cfg.Processes {
		p.Cwd = h.dir
	}
	type started struct {
		res []StartResult
		err error
	}
	done := make(chan started, 1)
	go func() {
		res, err := h.sup.Start(context.Background(), h.sup.cfg.Order)
		done <- started{res, err}
	}()
	exists := func(f string) bool { _, err := os.Stat(filepath.Join(h.dir, f)); return err == nil }
	eventually(t, 20*time.Second, "all six run at once, none of them ready", func() bool {
		for i := range 6 {
			if !exists(fmt.Sprintf("p%d-started", i)) {
				return false
			}
		}
		return true
	})
	if err := os.WriteFile(filepath.Join(h.dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var r started
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("start did not return once the gate was open")
	}
	if r.err != nil || len(r.res) != 7 {
		t.Fatalf("start = %+v, %v", r.res, r.err)
	}
	if exists("after-early") || !exists("after-ok") {
		t.Fatal("after started before p0 and p5 were ready")
	}
}

func TestStart_FailureSkipsOnlyDependents(t *testing.T) {
	h := newHarness(t, `
processes:
  broken:
    command: sh
    args: ["-c", "exit 3"]
    ready: {log: ready, timeout: 30s}
  dependent:
    command: sh
    args: ["-c", "echo ready; exec sleep 300"]
    ready: {log: ready, timeout: 30s}
    depends_on: [broken]
  independent:
    command: sh
    args: ["-c", "echo ready; exec sleep 300"]
    ready: {log: ready, timeout: 30s}
`)
	// broken fails for certain, whatever the load: it dies before its
	// ready probe can pass (without a probe, a start that outlives
	// StartGrace on a loaded machine would count as a success).
	res, err := h.sup.Start(context.Background(), h.sup.cfg.Order)
	var se *StartError
	if !errors.As(err, &se) || se.Name != "broken" || !errors.Is(err, ErrDependency) {
		t.Fatalf("start = %v; want broken's failure first and dependent skipped", err)
	}
	if len(res) != 1 || res[0].Name != "independent" {
		t.Fatalf("results = %+v, want only independent started", res)
	}
	if st := h.status("dependent"); st.State != StateStopped {
		t.Fatalf("dependent = %+v, want never started", st)
	}
}

func TestOneshot_CompletesAndGatesItsDependents(t *testing.T) {
	h := newHarness(t, `
processes:
  migrate:
    command: sh
    args: ["-c", "sleep 0.3; echo migrated"]
    oneshot: true
  api:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=ready,sleep"}
    ready: {log: ready, timeout: 5s}
    depends_on: [migrate]
  failing:
    command: sh
    args: ["-c", "exit 4"]
    oneshot: true
  blocked:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=ready,sleep"}
    depends_on: [failing]
`)
	res, err := h.sup.Start(context.Background(), []string{"api", "blocked"})
	if !errors.Is(err, ErrDependency) || !strings.Contains(err.Error(), "exited with code 4") {
		t.Fatalf("start = %v, want failing's exit 4 and blocked skipped", err)
	}
	if len(res) != 2 || res[0].Name != "migrate" || !res[0].Completed || res[1].Name != "api" {
		t.Fatalf("results = %+v", res)
	}
	if api, mig := h.status("api"), h.status("migrate"); api.StartedAt.Before(mig.ExitedAt.Add(-10 * time.Millisecond)) {
		t.Fatalf("api started at %v, before migrate completed at %v", api.StartedAt, mig.ExitedAt)
	}
	sts, err := h.sup.Status(context.Background(), []string{"migrate", "api"})
	if err != nil || sts[0].State != StateCompleted || !AllRunning(sts) {
		t.Fatalf("status = %+v, %v; want migrate completed and the answer yes", sts, err)
	}
	if st := h.status("failing"); st.State != StateExited {
		t.Fatalf("failing = %+v, want exited", st)
	}
}

func TestStart_FailedStartShowsOnlyThisRunsLogLines(t *testing.T) {
	h := newHarness(t, `
processes:
  flaky:
    command: sh
    args: ["-c", "echo run $(date +%s%N); exit 3"]
`)
	for range 2 {
		_, err := h.sup.Start(context.Background(), []string{"flaky"})
		var se *StartError
		if !errors.As(err, &se) {
			t.Fatalf("start = %v, want a StartError", err)
		}
		if n := strings.Count(string(se.LogTail), "run "); n != 1 {
			t.Fatalf("log tail of a failed start holds %d runs:\n%s", n, se.LogTail)
		}
	}
}
