//go:build linux

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/state"
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

// trackingModes are the two ways a monitor tracks a tree on Linux: its own
// cgroup v2 where the caller's cgroup is writable, else the subreaper
// alone. The second is forced with DEVKIT_SUP_CGROUP=off, so it is tested
// even on a machine that offers the first.
var trackingModes = []struct {
	name   string
	env    []string
	cgroup bool
}{
	{"cgroup", nil, true},
	{"subreaper", []string{state.CgroupEnv + "=off"}, false},
}

// withMonitorEnv points h's supervisor at monitors with env added.
func withMonitorEnv(t *testing.T, h *harness, env []string) {
	t.Helper()
	opts := h.sup.opts
	opts.MonitorEnv = append(append([]string(nil), opts.MonitorEnv...), env...)
	sup, err := New(h.home, h.sup.cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.sup = sup
}

func TestStop_DoubleForkedDaemonStaysTrackedAndIsEnded(t *testing.T) {
	for _, mode := range trackingModes {
		t.Run(mode.name, func(t *testing.T) {
			if mode.cgroup && !cgroupWritable() {
				t.Skip("this machine gives no writable cgroup v2; the subreaper case covers it")
			}
			h := newHarness(t, fmt.Sprintf(daemonYAML, ""))
			withMonitorEnv(t, h, mode.env)
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
			if (rec.Cgroup != "") != mode.cgroup {
				t.Fatalf("record cgroup = %q, want one: %v", rec.Cgroup, mode.cgroup)
			}
			if mode.cgroup {
				members, err := proc.CgroupMembers(rec.Cgroup)
				if err != nil || !slices.ContainsFunc(members, func(m proc.Info) bool { return m.PID == daemon }) {
					t.Fatalf("daemon %d not in the process's cgroup %s: %+v %v", daemon, rec.Cgroup, members, err)
				}
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
			if mode.cgroup {
				if _, err := os.Stat(rec.Cgroup); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("cgroup %s left behind: %v", rec.Cgroup, err)
				}
			}
		})
	}
}

// cgroupWritable reports whether a monitor here can make a cgroup.
func cgroupWritable() bool {
	dir, err := proc.OwnCgroupDir()
	if err != nil {
		return false
	}
	probe := filepath.Join(dir, state.CgroupPrefix+"probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return false
	}
	return os.Remove(probe) == nil
}

func TestCgroup_ARecordNamingAForeignCgroupIsNotFollowed(t *testing.T) {
	if !cgroupWritable() {
		t.Skip("this machine gives no writable cgroup v2")
	}
	h := newHarness(t, sleeperYAML)
	h.start("app")
	// Someone else's cgroup, holding an unrelated process.
	parent, _ := proc.OwnCgroupDir()
	foreign := filepath.Join(parent, "victim-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := startUnrelated(t)
	if err := os.WriteFile(filepath.Join(foreign, "cgroup.procs"), []byte(strconv.Itoa(victim.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		victim.Process.Kill()
		victim.Wait()
		os.Remove(foreign)
	})
	rec := h.mustRecord("app")
	good := rec.Cgroup
	rec.Cgroup = foreign
	h.sup.home.WriteRecord(rec)
	if _, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{Force: true}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("stop over a record naming a foreign cgroup: %v, want ErrCorrupt", err)
	}
	time.Sleep(50 * time.Millisecond)
	if !alive(victim.Process.Pid) {
		t.Fatal("a process of a foreign cgroup was killed")
	}
	rec.Cgroup = good
	h.sup.home.WriteRecord(rec) // so that cleanup stops app
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
