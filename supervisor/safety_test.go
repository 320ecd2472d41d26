//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// startUnrelated starts a process the supervisor knows nothing about.
func startUnrelated(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(testExe(t))
	cmd.Env = []string{roleEnv + "=child", childEnv + "=sleep"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func TestStaleRecord_UnrelatedProcessIsNeverSignalled(t *testing.T) {
	h := newHarness(t, sleeperYAML)
	victim := startUnrelated(t)
	info, err := proc.Lookup(victim.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// A record with the victim's PID but another start time: what a PID
	// file looks like after the recorded process died and the PID was reused.
	forged := info.Identity
	forged.StartTime = "1"
	if err := h.sup.home.WriteRecord(&state.ProcessRecord{Name: "app", Process: forged, StopSignal: "KILL", StopTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	// A live view's reader reports it and leaves the home as it was.
	sts, err := h.sup.NewStatusReader(0).Status(context.Background(), []string{"app"})
	if err != nil || sts[0].State != StateStale {
		t.Fatalf("status reader = %+v, %v; want stale", sts, err)
	}
	if r, _ := h.sup.home.ReadRecord("app"); r == nil {
		t.Fatal("a status reader removed the stale record: a view must only read")
	}
	if st := h.status("app"); st.State != StateStale || !strings.Contains(st.Reason, "another process") {
		t.Fatalf("status = %+v, want stale", st)
	}
	if r, _ := h.sup.home.ReadRecord("app"); r != nil {
		t.Fatal("stale record was not cleaned by status")
	}
	// Again through stop, which must not signal it either.
	h.sup.home.WriteRecord(&state.ProcessRecord{Name: "app", Process: forged, StopSignal: "KILL", StopTimeout: time.Second})
	res, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{Force: true})
	if err != nil || res[0].Outcome != StopStale {
		t.Fatalf("stop = %+v, %v; want stale", res, err)
	}
	time.Sleep(50 * time.Millisecond)
	if !alive(victim.Process.Pid) {
		t.Fatal("the unrelated process was killed")
	}
	// And start replaces the stale record with a real process.
	h.sup.home.WriteRecord(&state.ProcessRecord{Name: "app", Process: forged, StopSignal: "KILL", StopTimeout: time.Second})
	started := h.start("app")
	if started[0].PID == victim.Process.Pid || !alive(victim.Process.Pid) {
		t.Fatalf("start over a stale record: %+v; victim alive=%v", started, alive(victim.Process.Pid))
	}
}

func TestStart_ConcurrentStartsYieldOneProcess(t *testing.T) {
	h := newHarness(t, sleeperYAML)
	const runs = 4
	var wg sync.WaitGroup
	results := make([][]StartResult, runs)
	errs := make([]error, runs)
	for i := range runs {
		// Separate Supervisors over one home: separate CLI runs.
		sup, err := New(h.home, h.sup.cfg, h.sup.opts)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = sup.Start(context.Background(), []string{"app"})
		}()
	}
	wg.Wait()
	started, pids := 0, map[int]bool{}
	for i := range runs {
		if errs[i] != nil {
			t.Fatalf("start %d: %v", i, errs[i])
		}
		pids[results[i][0].PID] = true
		if !results[i][0].AlreadyRunning {
			started++
		}
	}
	if started != 1 || len(pids) != 1 {
		t.Fatalf("%d starts spawned, pids %v; want exactly one process", started, pids)
	}
	rec, _ := h.sup.home.ReadRecord("app")
	if members, _ := proc.SessionMembers(rec.Process.PID); len(members) != 1 {
		t.Fatalf("session has %d processes, want 1", len(members))
	}
}

func TestStop_GrandchildrenOfTheGroupAreGone(t *testing.T) {
	h := newHarness(t, `
processes:
  tree:
    command: sh
    args: ["-c", "sleep 300 & sleep 300 & echo started; wait"]
    ready: {log: started, timeout: 5s}
`)
	res := h.start("tree")
	members, _ := proc.SessionMembers(res[0].PID)
	if len(members) != 3 {
		t.Fatalf("session members = %d, want sh and two sleeps", len(members))
	}
	if _, err := h.sup.Stop(context.Background(), []string{"tree"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if alive(m.PID) {
			t.Errorf("pid %d (%s) survived stop", m.PID, m.Comm)
		}
	}
}

func TestStop_OrphanInOwnGroupIsReportedThenKilledWithForce(t *testing.T) {
	h := newHarness(t, `
processes:
  parent:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "orphan,print=ready,sleep"}
    ready: {log: ready, timeout: 5s}
    stop_timeout: 2s
`)
	res := h.start("parent")
	leader := res[0].PID
	_, err := h.sup.Stop(context.Background(), []string{"parent"}, StopOptions{})
	if !errors.Is(err, ErrSurvivors) {
		t.Fatalf("stop without force: err = %v, want ErrSurvivors", err)
	}
	if alive(leader) {
		t.Fatal("leader survived its stop signal")
	}
	st := h.status("parent")
	if st.State != StateOrphaned || len(st.Orphans) != 1 {
		t.Fatalf("status = %+v, want orphaned with one survivor", st)
	}
	orphan := st.Orphans[0].PID
	out, err := h.sup.Stop(context.Background(), []string{"parent"}, StopOptions{Force: true})
	if err != nil || out[0].Outcome != StopKilled || len(out[0].Survivors) != 0 {
		t.Fatalf("stop --force = %+v, %v; want killed, nothing surviving", out, err)
	}
	if alive(orphan) {
		t.Fatalf("orphan %d survived stop --force", orphan)
	}
	if r, _ := h.sup.home.ReadRecord("parent"); r != nil {
		t.Fatal("record kept after everything was stopped")
	}
}

// stubbornYAML declares "stubborn", which ignores SIGTERM: a stop without
// --force times out after 300ms.
const stubbornYAML = `
processes:
  stubborn:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "ignore-term,print=ready,sleep"}
    ready: {log: ready, timeout: 5s}
    stop_timeout: 300ms
`

func TestStop_IgnoredTermFailsWithoutForceAndKillsWithForce(t *testing.T) {
	h := newHarness(t, stubbornYAML)
	pid := h.start("stubborn")[0].PID
	_, err := h.sup.Stop(context.Background(), []string{"stubborn"}, StopOptions{})
	if !errors.Is(err, ErrStopTimeout) {
		t.Fatalf("stop without force: err = %v, want ErrStopTimeout", err)
	}
	if !alive(pid) || h.status("stubborn").State != StateRunning {
		t.Fatal("process should still run (and be recorded) after a failed stop")
	}
	res, err := h.sup.Stop(context.Background(), []string{"stubborn"}, StopOptions{Force: true})
	if err != nil || res[0].Outcome != StopKilled {
		t.Fatalf("stop --force = %+v, %v", res, err)
	}
	if alive(pid) {
		t.Fatal("still alive after stop --force")
	}
}
