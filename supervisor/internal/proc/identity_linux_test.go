package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// These tests run real processes: a sleep started here is looked up,
// verified, signalled through a pidfd and found in the process tree.

func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func TestLookup_OwnProcessMatchesProcfs(t *testing.T) {
	info, err := Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if info.PID != os.Getpid() || info.PPID != os.Getppid() || info.PGID != syscall.Getpgrp() {
		t.Errorf("Lookup(self) = %+v, want pid %d ppid %d pgid %d", info, os.Getpid(), os.Getppid(), syscall.Getpgrp())
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	if want := string(boot[:len(boot)-1]); info.BootID != want {
		t.Errorf("boot id %q, want %q", info.BootID, want)
	}
	if _, err := strconv.ParseUint(info.StartTime, 10, 64); err != nil {
		t.Errorf("start time %q is not clock ticks: %v", info.StartTime, err)
	}
}

func TestVerify_ARecordFromAnotherBootIsAnotherProcess(t *testing.T) {
	cmd := startSleep(t)
	info, err := Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(info.Identity); err != nil {
		t.Fatalf("Verify of the live sleep: %v", err)
	}
	stale := info.Identity
	stale.BootID = "00000000-0000-0000-0000-000000000000"
	if _, err := Verify(stale); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("Verify of the same PID and start time from another boot = %v, want ErrIdentityMismatch", err)
	}
	if _, err := Open(stale); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("Open of a record from another boot = %v, want ErrIdentityMismatch", err)
	}
}

func TestHandle_SignalsAndWaitsForTheVerifiedProcess(t *testing.T) {
	cmd := startSleep(t)
	info, err := Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Open(info.Identity)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.pidfd < 0 {
		t.Log("no pidfd_open on this kernel: the verify-then-kill fallback is tested")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	if err := h.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a live sleep = %v, want the context's deadline", err)
	}
	cancel()
	if err := h.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { _, err := cmd.Process.Wait(); waited <- err }()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Wait(ctx); err != nil {
		t.Fatalf("Wait after SIGTERM: %v", err)
	}
	<-waited
	// The process is reaped: a pidfd still names it, so the signal cannot
	// reach a process that reused the PID meanwhile.
	if err := h.Signal(syscall.SIGTERM); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Signal after the exit = %v, want ErrNotFound", err)
	}
	if _, err := Open(info.Identity); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open after the exit = %v, want ErrNotFound", err)
	}
}

func TestDescendantsOf_FindsAGrandchild(t *testing.T) {
	// sh starts a sleep in the background and waits: the sleep is a grandchild of this test.
	cmd := exec.Command("sh", "-c", "sleep 30 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var buf [32]byte
	n, _ := out.Read(buf[:])
	grandchild, err := strconv.Atoi(string(buf[:n-1]))
	if err != nil {
		t.Fatalf("sh printed %q", buf[:n])
	}
	t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ds, err := DescendantsOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	got := pids(ds)
	if !slices.Contains(got, cmd.Process.Pid) || !slices.Contains(got, grandchild) {
		t.Fatalf("descendants of the test %v lack sh %d or its sleep %d", got, cmd.Process.Pid, grandchild)
	}
	ds, err = DescendantsOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if got := pids(ds); !slices.Equal(got, []int{grandchild}) {
		t.Fatalf("descendants of sh = %v, want only its sleep %d", got, grandchild)
	}
}

func TestHasEnv_MatchesTheWholeVariable(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"DEVKIT_SUP_TOKEN=abc123"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Until the exec has set up the new environment, /proc shows the fork's
	// (this test's) or none at all: wait for it, for 10 s at most.
	found := false
	for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		found = HasEnv(cmd.Process.Pid, "DEVKIT_SUP_TOKEN=abc123")
	}
	if !found {
		t.Fatal("HasEnv misses the token the process was started with")
	}
	for _, kv := range []string{"DEVKIT_SUP_TOKEN=abc", "DEVKIT_SUP_TOKEN=abc1234", "TOKEN=abc123"} {
		if HasEnv(cmd.Process.Pid, kv) {
			t.Errorf("HasEnv(%q) is true for a process with DEVKIT_SUP_TOKEN=abc123", kv)
		}
	}
}

func TestCgroupMembers_NotACgroupIsAnErrorAndAMissingOneIsEmpty(t *testing.T) {
	dir := t.TempDir()
	if _, err := CgroupMembers(dir); err == nil {
		t.Error("CgroupMembers of a plain directory: no error, want 'not a cgroup v2 directory'")
	}
	got, err := CgroupMembers(filepath.Join(dir, "gone"))
	if err != nil || len(got) != 0 {
		t.Errorf("CgroupMembers of a missing cgroup = %v, %v; want none", got, err)
	}
}

func TestCgroupMembers_OwnCgroupHoldsThisProcess(t *testing.T) {
	dir, err := OwnCgroupDir()
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	members, err := CgroupMembers(dir)
	if err != nil {
		t.Skipf("cgroup %s not readable: %v", dir, err)
	}
	if !slices.Contains(pids(members), os.Getpid()) {
		t.Fatalf("the members of our own cgroup %s %v lack this process %d", dir, pids(members), os.Getpid())
	}
}
