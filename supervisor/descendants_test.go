//go:build linux

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

// daemonYAML starts a shell that double-forks a daemon into a session of
// its own (setsid), which then logs its PID; the shell itself stays.
const daemonYAML = `
processes:
  app:
    command: sh
    args: ["-c", "(setsid sh -c '%s echo daemon $$; exec sleep 301' &); echo ready; exec sleep 300"]
    ready: {log: "daemon [0-9]+", timeout: 5s}
    stop_timeout: 500ms
`

// daemonPID reads the daemon's PID from app's log.
func daemonPID(t *testing.T, h *harness) int {
	t.Helper()
	path, _ := h.sup.LogPath("app")
	data, _ := os.ReadFile(path)
	m := regexp.MustCompile(`daemon ([0-9]+)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("no daemon line in %q", data)
	}
	pid, _ := strconv.Atoi(string(m[1]))
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

func TestStop_DoubleForkedDaemonStaysTrackedAndIsEnded(t *testing.T) {
	h := newHarness(t, fmt.Sprintf(daemonYAML, ""))
	leader := h.start("app")[0].PID
	daemon := daemonPID(t, h)
	info, err := proc.Lookup(daemon)
	if err != nil || info.Session == leader {
		t.Fatalf("daemon %+v (%v) did not leave the session of %d", info, err, leader)
	}
	rec := h.mustRecord("app")
	if info.PPID != rec.Monitor.PID {
		t.Fatalf("daemon's parent is %d, want the monitor %d (a subreaper)", info.PPID, rec.Monitor.PID)
	}
	if st := h.status("app"); st.State != StateRunning || st.Descendants != 1 {
		t.Fatalf("status = %+v, want running with 1 descendant", st)
	}
	if _, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
	if alive(daemon) {
		t.Fatal("the daemon survived stop")
	}
}

func TestStop_EscapedDaemonIsFoundByItsTokenWhenTheMonitorIsGone(t *testing.T) {
	// No subreaper once the monitor is killed: the daemon is reparented
	// away, and only the token it inherited says it is ours.
	h := newHarness(t, fmt.Sprintf(daemonYAML, ""))
	h.start("app")
	daemon := daemonPID(t, h)
	rec := h.mustRecord("app")
	syscall.Kill(rec.Monitor.PID, syscall.SIGKILL)
	eventually(t, 5*time.Second, "the daemon is reparented away from the dead monitor", func() bool {
		info, err := proc.Lookup(daemon)
		return err == nil && info.PPID != rec.Monitor.PID
	})
	if st := h.status("app"); st.State != StateUnsupervised || st.Descendants != 1 {
		t.Fatalf("status = %+v, want unsupervised with 1 descendant", st)
	}
	if _, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
	if alive(daemon) {
		t.Fatal("the daemon survived stop")
	}
}

func TestStop_DescendantThatCannotBeEndedIsNamedAndFails(t *testing.T) {
	h := newHarness(t, fmt.Sprintf(daemonYAML, `trap \"\" TERM;`))
	h.start("app")
	daemon := daemonPID(t, h)
	res, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{})
	if !errors.Is(err, ErrSurvivors) || res[0].Outcome != StopTimeout || !strings.Contains(err.Error(), fmt.Sprintf("pid %d (", daemon)) {
		t.Fatalf("stop = %+v, %v; want a timeout naming pid %d", res, err, daemon)
	}
	if st := h.status("app"); st.State != StateOrphaned || len(st.Orphans) != 1 || st.Orphans[0].PID != daemon {
		t.Fatalf("status after the failed stop = %+v", st)
	}
	res, err = h.sup.Stop(context.Background(), []string{"app"}, StopOptions{Force: true})
	if err != nil || res[0].Outcome != StopKilled || alive(daemon) {
		t.Fatalf("stop --force = %+v, %v (daemon alive %v)", res, err, alive(daemon))
	}
}
