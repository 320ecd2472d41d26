//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestStart_IndependentProcessesBecomeReadyConcurrently(t *testing.T) {
	var b strings.Builder
	b.WriteString("processes:\n")
	for i := range 6 {
		fmt.Fprintf(&b, `  p%d:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "sleepfor=1s,print=ready,sleep"}
    ready: {log: ready, timeout: 10s}
`, i)
	}
	b.WriteString(`  after:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=ready,sleep"}
    ready: {log: ready, timeout: 10s}
    depends_on: [p0, p5]
`)
	h := newHarness(t, b.String())
	began := time.Now()
	res := h.start(h.sup.cfg.Order...)
	took := time.Since(began)
	if len(res) != 7 {
		t.Fatalf("results = %+v", res)
	}
	// Six sequential 1 s starts take 6 s; concurrent ones about 1 s. The
	// bound is loose (a shared machine), the gap is not.
	if took > 3500*time.Millisecond {
		t.Fatalf("six independent 1 s starts took %s: not concurrent", took)
	}
	after := h.status("after").StartedAt
	for _, d := range []string{"p0", "p5"} {
		if after.Before(h.status(d).StartedAt.Add(time.Second)) {
			t.Fatalf("after started before %s was ready", d)
		}
	}
}

func TestStart_FailureSkipsOnlyDependents(t *testing.T) {
	h := newHarness(t, `
processes:
  broken:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "exit=3"}
  dependent:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=ready,sleep"}
    ready: {log: ready, timeout: 5s}
    depends_on: [broken]
  independent:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=ready,sleep"}
    ready: {log: ready, timeout: 5s}
`)
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
