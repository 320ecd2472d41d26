//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// otherProject returns a Supervisor over the same home as h for a config
// in another directory: another project.
func otherProject(t *testing.T, h *harness, yaml string) *harness {
	t.Helper()
	o := &harness{t: t, dir: t.TempDir(), home: h.home}
	o.load(yaml)
	t.Cleanup(o.cleanup)
	return o
}

func TestProjects_TwoConfigsUnderOneHomeDoNotSeeEachOther(t *testing.T) {
	a := newHarness(t, sleeperYAML)
	b := otherProject(t, a, sleeperYAML)
	if a.sup.Project() == b.sup.Project() {
		t.Fatalf("both projects got key %q", a.sup.Project())
	}
	pidA := a.start("app")[0].PID
	if st := b.status("app"); st.State != StateStopped {
		t.Fatalf("project B sees A's app: %+v", st)
	}
	pidB := b.start("app")[0].PID
	names, _ := b.sup.Names()
	if _, err := b.sup.Stop(context.Background(), names, StopOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.sup.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if alive(pidB) || !alive(pidA) {
		t.Fatalf("stop --all and reload in B: B alive %v, A alive %v; want only B stopped", alive(pidB), alive(pidA))
	}
	if st := a.status("app"); st.State != StateRunning || st.PID != pidA {
		t.Fatalf("A after B's stop --all: %+v", st)
	}
}

func TestProjects_RecordsOfTheOldLayoutAreFoundAndReported(t *testing.T) {
	h := newHarness(t, `
processes:
  old:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=hello,sleep"}
`)
	pid := h.start("old")[0].PID
	// Where the record lived before projects: directly under the home.
	if err := h.sup.legacy.Init(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(h.sup.home.RecordPath("old"), filepath.Join(h.home, "pids", "old.json")); err != nil {
		t.Fatal(err)
	}
	h.load(sleeperYAML) // the YAML no longer has it
	sts, err := h.sup.Status(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(sts, func(st ProcessStatus) bool { return st.Name == "old" })
	if i < 0 || !sts[i].Legacy || sts[i].State != StateRunning || sts[i].PID != pid {
		t.Fatalf("status = %+v, want old reported as a running legacy record", sts)
	}
	if names, _ := h.sup.Names(); slices.Contains(names, "old") {
		t.Fatal("--all would reach a record outside the project")
	}
	if res, err := h.sup.Stop(context.Background(), []string{"old"}, StopOptions{}); err != nil || res[0].Outcome != StopStopped || alive(pid) {
		t.Fatalf("stop old = %+v, %v", res, err)
	}
}
