//go:build linux

package supervisor

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// leaderlessSession makes what a reused PID looks like after a reboot or a
// lost monitor: an unrelated session whose leader has exited, leaving one
// member (which ignores SIGTERM) alive. It returns the old leader's
// identity and the member's PID.
func leaderlessSession(t *testing.T) (proc.Identity, int) {
	t.Helper()
	cmd := exec.Command(testExe(t))
	cmd.Env = []string{roleEnv + "=child", childEnv + "=orphan"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe() // the leader lives until this is closed
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	leader, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	stdin.Close()
	cmd.Wait()
	member, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "grandchild")))
	if err != nil {
		t.Fatalf("helper said %q", line)
	}
	t.Cleanup(func() { syscall.Kill(member, syscall.SIGKILL) })
	if info, err := proc.Lookup(member); err != nil || info.Session != leader.PID {
		t.Fatalf("member %d: %+v %v, want a live member of session %d", member, info, err, leader.PID)
	}
	return leader.Identity, member
}

func TestStaleRecord_MembersOfALeaderlessSessionAreNotOurs(t *testing.T) {
	for _, tc := range []struct {
		name string
		boot func(string) string
	}{
		{"same boot, lost monitor", func(b string) string { return b }},
		{"another boot", func(string) string { return "0f0f0f0f-another-boot" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, sleeperYAML)
			leader, member := leaderlessSession(t)
			old := leader
			old.BootID = tc.boot(leader.BootID)
			// The record of a process that started before the unrelated
			// session, with the PID its leader later got.
			old.StartTime = strconv.Itoa(mustAtoi(t, leader.StartTime) - 100)
			rec := &state.ProcessRecord{Name: "app", Process: old, Monitor: &proc.Identity{PID: 1 << 22, StartTime: "1"}, StopSignal: "KILL", StopTimeout: time.Second}
			if err := h.sup.home.WriteRecord(rec); err != nil {
				t.Fatal(err)
			}
			st := h.status("app")
			if st.State == StateOrphaned || len(st.Orphans) > 0 {
				t.Fatalf("status = %+v: an unrelated session member shown as ours", st)
			}
			h.sup.home.WriteRecord(rec)
			app := h.start("app")[0].PID // cleans up over the record as stop --force would
			if res, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{}); err != nil || res[0].Outcome != StopStopped || alive(app) {
				t.Fatalf("stop of the app started over the stale record = %+v, %v (alive %v)", res, err, alive(app))
			}
			h.sup.home.WriteRecord(rec)
			h.sup.Stop(context.Background(), []string{"app"}, StopOptions{Force: true})
			time.Sleep(50 * time.Millisecond)
			if !alive(member) {
				t.Fatal("start/stop over a stale record killed an unrelated process")
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// homeFiles lists every file under root (relative path to size).
func homeFiles(t *testing.T, root string) map[string]int64 {
	t.Helper()
	files := map[string]int64{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				rel, _ := filepath.Rel(root, path)
				files[rel] = fi.Size()
			}
		}
		return nil
	})
	return files
}

func TestNames_HostileNamesAreRefusedBeforeAnyFileIsTouched(t *testing.T) {
	h := newHarness(t, sleeperYAML)
	pid := h.start("app")[0].PID
	// The home sits one level below the temp dir; a lock created outside
	// would land beside it.
	outside := filepath.Dir(h.home)
	before, beforeOut := homeFiles(t, h.home), homeFiles(t, outside)
	ctx := context.Background()
	for _, name := range []string{"../pids/app", "../exits/app", "a/../app", "..", ".", "/etc/passwd", "a/b", `a\b`, "../../victim", ".hidden", "-rf", ""} {
		if _, err := h.sup.Stop(ctx, []string{name}, StopOptions{Force: true}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Stop(%q) = %v, want ErrInvalidName", name, err)
		}
		if _, err := h.sup.Status(ctx, []string{name}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Status(%q) = %v, want ErrInvalidName", name, err)
		}
		if _, err := h.sup.Start(ctx, []string{name}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Start(%q) = %v, want ErrInvalidName", name, err)
		}
		if _, err := h.sup.Restart(ctx, []string{name}, StopOptions{}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Restart(%q) = %v, want ErrInvalidName", name, err)
		}
		if _, err := h.sup.LogPath(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("LogPath(%q) = %v, want ErrInvalidName", name, err)
		}
	}
	after := homeFiles(t, h.home)
	for f := range before {
		if _, ok := after[f]; !ok {
			t.Errorf("%s was removed", f)
		}
	}
	for f := range after {
		if _, ok := before[f]; !ok {
			t.Errorf("%s was created", f)
		}
	}
	for f := range homeFiles(t, outside) {
		if _, ok := beforeOut[f]; !ok {
			t.Errorf("%s was created outside the home", f)
		}
	}
	if st := h.status("app"); st.State != StateRunning || st.PID != pid {
		t.Fatalf("app after the hostile names: %+v", st)
	}
}

func TestRecord_NameInsideMustMatchItsFile(t *testing.T) {
	h := newHarness(t, sleeperYAML)
	pid := h.start("app")[0].PID
	rec, _ := h.sup.home.ReadRecord("app")
	data, _ := os.ReadFile(h.sup.home.RecordPath("app"))
	forged := strings.Replace(string(data), `"name": "app"`, `"name": "../exits/app"`, 1)
	os.WriteFile(filepath.Join(h.sup.home.Root, "pids", "other.json"), []byte(forged), 0o600)
	sts, err := h.sup.Status(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]State{}
	for _, st := range sts {
		states[st.Name] = st.State
	}
	if states["app"] != StateRunning || states["other"] != StateCorrupt {
		t.Fatalf("states = %v, want app running and other corrupt", states)
	}
	if _, err := h.sup.Stop(context.Background(), []string{"other"}, StopOptions{Force: true}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("stop of a forged record: %v, want ErrCorrupt", err)
	}
	if !alive(pid) || !rec.Process.Same(h.mustRecord("app").Process) {
		t.Fatal("a forged record reached the process of another name")
	}
}

func (h *harness) mustRecord(name string) *state.ProcessRecord {
	h.t.Helper()
	r, err := h.sup.home.ReadRecord(name)
	if err != nil || r == nil {
		h.t.Fatalf("record %s: %v %v", name, r, err)
	}
	return r
}

func TestStop_FailedStopIsATimeoutAndSupervisionStaysOn(t *testing.T) {
	h := newHarness(t, stubbornYAML+"    restart: {policy: always, backoff: 50ms}\n")
	pid := h.start("stubborn")[0].PID
	res, err := h.sup.Stop(context.Background(), []string{"stubborn"}, StopOptions{})
	if !errors.Is(err, ErrStopTimeout) || len(res) != 1 || res[0].Outcome != StopTimeout {
		t.Fatalf("stop = %+v, %v; want outcome timeout and ErrStopTimeout", res, err)
	}
	if _, err := os.Stat(h.sup.home.StopMarkerPath("stubborn")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stop marker left after a failed stop: %v", err)
	}
	// A later crash is still restarted by the monitor.
	syscall.Kill(pid, syscall.SIGKILL)
	eventually(t, 10*time.Second, "the monitor restarts the process", func() bool {
		st := h.status("stubborn")
		return st.State == StateRunning && st.PID != pid && st.Restarts == 1
	})
}

func TestStopAll_GoesOnPastFailuresAndACorruptRecordHidesNothing(t *testing.T) {
	h := newHarness(t, stubbornYAML+`  zeta:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=ready,sleep"}
    ready: {log: ready, timeout: 5s}
`)
	res := h.start("stubborn", "zeta")
	zeta := res[1].PID
	os.WriteFile(filepath.Join(h.sup.home.Root, "pids", "broken.json"), []byte("{not json"), 0o600)
	sts, err := h.sup.Status(context.Background(), nil)
	if err != nil || len(sts) != 3 {
		t.Fatalf("status with a corrupt record = %+v, %v; want all three", sts, err)
	}
	names, _ := h.sup.Names()
	out, err := h.sup.Stop(context.Background(), names, StopOptions{})
	if err == nil {
		t.Fatal("stop --all with failures exited 0")
	}
	outcomes := map[string]StopOutcome{}
	for _, r := range out {
		outcomes[r.Name] = r.Outcome
	}
	if outcomes["zeta"] != StopStopped || outcomes["stubborn"] != StopTimeout || outcomes["broken"] != StopFailed {
		t.Fatalf("outcomes = %v", outcomes)
	}
	if alive(zeta) {
		t.Fatal("zeta still runs: stop gave up at the first failure")
	}
	if !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), "stubborn") {
		t.Fatalf("error does not name each failure: %v", err)
	}
}

func TestStop_DuringAStartSaysWhoHoldsTheLock(t *testing.T) {
	h := newHarness(t, `
processes:
  slow:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "sleepfor=700ms,print=ready,sleep"}
    ready: {log: ready, timeout: 5s}
`)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h.sup.Start(context.Background(), []string{"slow"}) }()
	eventually(t, 5*time.Second, "the start holds the lock", func() bool {
		_, err := os.Stat(h.sup.home.RecordPath("slow"))
		return err == nil
	})
	var mu sync.Mutex
	var waits []int
	opts := h.sup.opts
	opts.OnLockWait = func(name string, holder int) {
		mu.Lock()
		defer mu.Unlock()
		if name == "slow" {
			waits = append(waits, holder)
		}
	}
	other, err := New(h.home, h.sup.cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Stop(context.Background(), []string{"slow"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 1 || waits[0] != os.Getpid() {
		t.Fatalf("lock waits reported %v, want once with holder %d", waits, os.Getpid())
	}
}

func TestConfig_LogFileThatIsNoRegularFileOrLeavesTheProjectIsRefused(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "adir"), 0o700)
	outside := filepath.Join(t.TempDir(), "elsewhere.log")
	os.WriteFile(outside, nil, 0o600)
	os.Symlink(outside, filepath.Join(dir, "out.log"))
	os.WriteFile(filepath.Join(dir, "in-target.log"), nil, 0o600)
	os.Symlink(filepath.Join(dir, "in-target.log"), filepath.Join(dir, "in.log"))
	for _, tc := range []struct{ logFile, want string }{
		{"adir", "is a directory"},
		{"/dev/null", "not a regular file"},
		{"out.log", "symbolic link out of the project"},
	} {
		yaml := "processes:\n  app:\n    command: sleep\n    log_file: " + tc.logFile + "\n"
		_, err := ParseConfig(filepath.Join(dir, "ops.yaml"), []byte(yaml), os.LookupEnv)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Line != 4 || ce.Field != "processes.app.log_file" || !strings.Contains(ce.Msg, tc.want) {
			t.Errorf("log_file %s: %v, want ops.yaml:4: processes.app.log_file: ...%s", tc.logFile, err, tc.want)
		}
	}
	yaml := "processes:\n  app:\n    command: sleep\n    log_file: in.log\n"
	if _, err := ParseConfig(filepath.Join(dir, "ops.yaml"), []byte(yaml), os.LookupEnv); err != nil {
		t.Errorf("a symlink inside the project: %v", err)
	}
}

func TestStart_LogFileThatWeDidNotCreateIsNeverRotatedAway(t *testing.T) {
	h := newHarness(t, `
processes:
  app:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=hello,sleep"}
    log_file: data/app.db
    log_max_size: 10B
`)
	db := filepath.Join(h.dir, "data", "app.db")
	os.MkdirAll(filepath.Dir(db), 0o700)
	precious := strings.Repeat("row\n", 100)
	os.WriteFile(db, []byte(precious), 0o600)
	_, err := h.sup.Start(context.Background(), []string{"app"})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Line != 6 || ce.Field != "processes.app.log_file" || !strings.Contains(ce.Msg, "not created by devkit sup") {
		t.Fatalf("start over a foreign log_file: %v, want ops.yaml:6: processes.app.log_file: ... not created by devkit sup", err)
	}
	if data, _ := os.ReadFile(db); string(data) != precious {
		t.Fatal("the database changed")
	}
	if _, err := os.Stat(db + ".1"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the database was rotated away")
	}
	// A log the supervisor created rotates as configured.
	os.Remove(db)
	h.start("app")
	h.sup.Stop(context.Background(), []string{"app"}, StopOptions{})
	f, _ := os.OpenFile(db, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(precious)
	f.Close()
	h.start("app")
	if _, err := os.Stat(db + ".1"); err != nil {
		t.Fatalf("our own log was not rotated: %v", err)
	}
}

func TestInterpolatedValuesAreDataInShellSnippets(t *testing.T) {
	t.Setenv("SUP_TEST_EVIL", "$(touch PWNED); `touch PWNED2`")
	h := newHarness(t, `
processes:
  app:
    command: sh
    args: ["-c", "echo got ${SUP_TEST_EVIL}; echo ready; exec sleep 300"]
    ready: {exec: "test -n \"${SUP_TEST_EVIL}\" && grep -q ready \"$LOG\"", timeout: 10s}
`)
	h.sup.cfg.Processes["app"].Cwd = h.dir
	path, _ := h.sup.LogPath("app")
	h.sup.cfg.Processes["app"].Env["LOG"] = path
	h.start("app")
	for _, f := range []string{"PWNED", "PWNED2"} {
		if _, err := os.Stat(filepath.Join(h.dir, f)); err == nil {
			t.Fatalf("an interpolated value ran as a command (%s exists)", f)
		}
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "got $(touch PWNED); `touch PWNED2`") {
		t.Fatalf("the value did not reach the script as text:\n%s", data)
	}
}
