//go:build linux

package supervisor

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tmpfsHome mounts a small tmpfs for a supervisor home and returns the
// home's path. It skips where mounting is not allowed (not root, no
// CAP_SYS_ADMIN, no unshare). The mount is undone at cleanup, after the
// harness registered later has stopped its processes.
func tmpfsHome(t *testing.T) (mountDir, home string) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("unshare is required under CI=true (CI installs util-linux)")
		}
		t.Skip("unshare (util-linux) is not installed")
	}
	dir := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" { // CI runs as root
			t.Fatalf("cannot mount a tmpfs for the home under CI=true: %v %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs for the home (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v %s; detaching it", dir, err, out)
			_ = exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir, filepath.Join(dir, "sup")
}

// stopReadOnly runs a stop of name in a private mount namespace where the
// home's tmpfs is read-only (the monitors, outside it, keep theirs as is),
// and returns its results and output.
func stopReadOnly(t *testing.T, h *harness, mountDir, name string) ([]StopResult, string, error) {
	t.Helper()
	script := `mount -o remount,bind,ro "$1" && ! touch "$1/probe" 2>/dev/null && exec "$2"`
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", mountDir, testExe(t))
	cmd.Env = append(os.Environ(), roleEnv+"=stop", "SUP_TEST_HOME="+h.home, "SUP_TEST_CONFIG="+filepath.Join(h.dir, "ops.yaml"), "SUP_TEST_NAME="+name)
	out, err := cmd.CombinedOutput()
	var res []StopResult
	line, _, _ := bytes.Cut(out, []byte("\n"))
	if jerr := json.Unmarshal(line, &res); jerr != nil {
		t.Fatalf("stop in a read-only namespace: %v\n%s", err, out)
	}
	return res, string(out), err
}

func TestStop_WithAReadOnlyHomeStillStopsAndTheMonitorDoesNotRestart(t *testing.T) {
	mountDir, home := tmpfsHome(t)
	h := newHarnessAt(t, home, `
processes:
  svc:
    command: sh
    args: ["-c", "echo up; exec sleep 300"]
    restart: {policy: always, backoff: 100ms}
`)
	pid := h.start("svc")[0].PID
	rec, err := h.sup.home.ReadRecord("svc")
	if err != nil || rec == nil || rec.Monitor == nil {
		t.Fatalf("record %+v: %v", rec, err)
	}
	res, out, err := stopReadOnly(t, h, mountDir, "svc")
	if err != nil || len(res) != 1 || res[0].Outcome != StopStopped {
		t.Fatalf("stop with a read-only home: %v\n%s", err, out)
	}
	if !strings.Contains(strings.Join(res[0].Unrecorded, "; "), "no stop marker") {
		t.Fatalf("stop does not say what it could not record: %q", res[0].Unrecorded)
	}
	if alive(pid) {
		t.Fatal("the process still runs")
	}
	// The monitor must let it go, not restart it (its backoff is 100ms).
	eventually(t, 20*time.Second, "the monitor exits", func() bool { return !alive(rec.Monitor.PID) })
	if st := h.status("svc"); st.State == StateRunning || st.State == StateRestarting {
		t.Fatalf("after stop: %s (pid %d)", st.State, st.PID)
	}
}

func TestLogs_AFullDiskDropsOutputVisiblyAndRecovers(t *testing.T) {
	mountDir, _ := tmpfsHome(t)
	// A small file system for the log only: the home stays writable.
	if out, err := exec.Command("mount", "-o", "remount,size=256k", mountDir).CombinedOutput(); err != nil {
		t.Skipf("cannot resize the tmpfs: %v %s", err, out)
	}
	filler := filepath.Join(mountDir, "filler")
	h := newHarness(t, `
processes:
  chatty:
    command: sh
    args: ["-c", "i=0; while :; do i=$((i+1)); echo line $i ......................................................; echo $i > count.tmp; mv count.tmp count; sleep 0.005; done"]
    log_max_size: 32KB
    log_backups: 0
`)
	h.sup.cfg.Processes["chatty"].Cwd = h.dir
	h.sup.cfg.Processes["chatty"].LogFile = filepath.Join(mountDir, "chatty.log")
	// Fill the file system but for a little room.
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=4k", "count=62").CombinedOutput(); err != nil {
		t.Fatalf("dd: %v %s", err, out)
	}
	h.start("chatty")
	count := func() int {
		data, _ := os.ReadFile(filepath.Join(h.dir, "count"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return n
	}
	eventually(t, 30*time.Second, "status says output is dropped", func() bool {
		return strings.Contains(h.status("chatty").LogWarning, "no space left on device")
	})
	c0 := count()
	eventually(t, 20*time.Second, "the process goes on, not blocked on its output", func() bool { return count() > c0+20 })
	// Room again: output reaches the log and the warning goes.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the warning clears", func() bool { return h.status("chatty").LogWarning == "" })
	size := func() int64 { fi, _ := os.Stat(filepath.Join(mountDir, "chatty.log")); return fi.Size() }
	s0 := size()
	eventually(t, 20*time.Second, "the log grows again", func() bool { return size() > s0 })
}
