//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// With no MonitorCommand the running executable (this test binary, which
// imports the package) is each process's monitor, and the supervised
// process does not inherit the variable that made it one.
func TestStart_MonitorDefaultsToTheRunningExecutable(t *testing.T) {
	h := newHarness(t, `
processes:
  app:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "env=`+MonitorEnvVar+`,sleep"}
`)
	sup, err := New(h.home, h.sup.cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.sup = sup
	h.start("app")
	rec, err := sup.home.ReadRecord("app")
	if err != nil || rec == nil || rec.Monitor == nil {
		t.Fatalf("record = %+v, %v; want one naming its monitor", rec, err)
	}
	// Where the kernel names a process's executable (/proc/N/exe), it is this test binary.
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(rec.Monitor.PID) + "/exe"); !errors.Is(err, fs.ErrNotExist) {
		if want := testExe(t); err != nil || exe != want {
			t.Fatalf("monitor pid %d runs %q (%v), want %q", rec.Monitor.PID, exe, err, want)
		}
	}
	log, err := sup.LogPath("app")
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	eventually(t, 5*time.Second, "the supervised process printed "+MonitorEnvVar, func() bool {
		data, _ = os.ReadFile(log)
		return strings.Contains(string(data), MonitorEnvVar+"=")
	})
	if !strings.Contains(string(data), MonitorEnvVar+"=\n") {
		t.Fatalf("the supervised process saw %s:\n%s", MonitorEnvVar, data)
	}
	if _, err := sup.Stop(context.Background(), []string{"app"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A variable not set by the parent (left in a shell, inherited from
// further up) does not turn a program into a monitor, and is dropped.
func TestMonitorEnvVar_FromAnyoneButTheParentChangesNothing(t *testing.T) {
	for _, v := range []string{"1", strconv.Itoa(os.Getpid() + 1), ""} {
		cmd := exec.Command(testExe(t))
		cmd.Env = append(os.Environ(), MonitorEnvVar+"="+v, roleEnv+"=child", childEnv+"=env="+MonitorEnvVar+",exit=0")
		cmd.Stdin = strings.NewReader(`{"home":"/nonexistent","spec":{"Name":"x","Command":"true"}}`)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), MonitorEnvVar+"=\n") || !strings.Contains(string(out), "exiting with 0") {
			t.Errorf("%s=%q: %v\n%s", MonitorEnvVar, v, err, out)
		}
	}
}

// A program that imports the package without calling MonitorMain is not
// turned into a monitor, even when its parent asked for one: the package
// has no init that takes over main (the test binary plays such a program).
func TestMonitorMain_ImportingThePackageAloneMakesNoMonitor(t *testing.T) {
	cmd := exec.Command(testExe(t))
	cmd.Env = append(os.Environ(), MonitorEnvVar+"="+strconv.Itoa(os.Getpid()), "SUP_TEST_NO_MONITOR_MAIN=1",
		roleEnv+"=child", childEnv+"=exit=0")
	cmd.Stdin = strings.NewReader(`{"home":"/nonexistent","spec":{"Name":"x","Command":"true"}}`)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "exiting with 0") {
		t.Fatalf("the program's own main did not run: %v\n%s", err, out)
	}
}

// With no MonitorCommand, a program that does not call MonitorMain is not
// re-executed (its own main would run instead of a monitor): Start fails
// with ErrNoMonitor and starts nothing.
func TestStart_WithoutMonitorMainFailsWithErrNoMonitor(t *testing.T) {
	h := newHarness(t, `
processes:
  app:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: sleep}
`)
	sup, err := New(h.home, h.sup.cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.sup = sup
	monitorMainCalled.Store(false) // as in a program whose main does not call it
	defer monitorMainCalled.Store(true)
	_, err = sup.Start(context.Background(), []string{"app"})
	if !errors.Is(err, ErrNoMonitor) || !strings.Contains(err.Error(), "supervisor.MonitorMain") {
		t.Fatalf("Start = %v, want ErrNoMonitor naming supervisor.MonitorMain", err)
	}
	if rec, err := sup.home.ReadRecord("app"); err != nil || rec != nil {
		t.Fatalf("record after a refused start: %+v, %v; want none", rec, err)
	}
}

// Options.MonitorCommandFunc chooses the monitor of each process as it
// starts, and is never called by a run that starts nothing.
func TestStart_MonitorCommandFuncChoosesEachMonitorOnlyToStart(t *testing.T) {
	h := newHarness(t, "processes:\n  a:\n    command: sleep\n    args: [\"60\"]\n  b:\n    command: sleep\n    args: [\"60\"]\n")
	var mu sync.Mutex
	var asked []string
	sup, err := New(h.home, h.sup.cfg, Options{
		MonitorCommand: []string{"/nonexistent/monitor"},
		MonitorCommandFunc: func(spec *Process) []string {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, spec.Name)
			return []string{testExe(t)}
		},
		MonitorEnv: []string{roleEnv + "=monitor"},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.sup = sup
	if _, err := sup.Status(context.Background(), nil); err != nil || len(asked) != 0 {
		t.Fatalf("status: %v, MonitorCommandFunc asked for %v", err, asked)
	}
	res := h.start("a", "b")
	slices.Sort(asked)
	if len(res) != 2 || !slices.Equal(asked, []string{"a", "b"}) {
		t.Fatalf("start = %+v, MonitorCommandFunc asked for %v, want a and b", res, asked)
	}
}
