package proc

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParseStat_CommWithSpacesAndParens(t *testing.T) {
	line := []byte("42 (my (odd) name) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 98765 0 0")
	info, state, err := parseStat(42, line)
	if err != nil || state != "S" || info.Comm != "my (odd) name" || info.PGID != 42 || info.Session != 42 || info.StartTime != "98765" {
		t.Fatalf("parseStat = %+v %q %v", info, state, err)
	}
}

func TestVerify_AnExitedProcessIsGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(Identity{PID: cmd.Process.Pid, StartTime: "1"}); !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("Verify(exited) = %v", err)
	}
}

func TestSessionMembersAndPortHolder(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & exec sleep 30")
	cmd.SysProcAttr = DetachedAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		SignalGroup(cmd.Process.Pid, Kill)
		cmd.Wait()
	}()
	var members []Info
	var err error
	if PollUntil(context.Background(), 5*time.Second, func() bool {
		members, err = SessionMembers(cmd.Process.Pid)
		return err != nil || len(members) == 2
	}) != nil || err != nil {
		t.Fatalf("session members = %+v, %v; want the shell's two sleeps", members, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	holder, ok := PortHolder(ln.Addr().(*net.TCPAddr).Port)
	if !ok || holder.PID != os.Getpid() {
		t.Fatalf("PortHolder = %+v, %v; want this test process", holder, ok)
	}
}

func TestGone_ENOENTAndESRCHFromProcMeanGone(t *testing.T) {
	for _, tc := range []struct {
		err  error
		gone bool
	}{
		{&fs.PathError{Op: "open", Path: "/proc/1/stat", Err: syscall.ENOENT}, true},
		{&fs.PathError{Op: "read", Path: "/proc/1/stat", Err: syscall.ESRCH}, true}, // exited between open and read
		{&fs.PathError{Op: "read", Path: "/proc/1/stat", Err: syscall.EIO}, false},
		{&fs.PathError{Op: "open", Path: "/proc/1/stat", Err: syscall.EACCES}, false},
	} {
		if got := gone(tc.err); got != tc.gone {
			t.Errorf("gone(%v) = %v, want %v", tc.err, got, tc.gone)
		}
	}
	if _, err := parseStatErr("42 (x) S 1 zz 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 98765 0 0"); err == nil {
		t.Error("a stat line whose pgrp is no number parsed")
	}
}

func parseStatErr(line string) (Info, error) {
	info, _, err := parseStat(42, []byte(line))
	return info, err
}

// Processes that exit while the /proc readers look at them read as gone
// (skipped, or ErrNotFound), never as an error: the race that once showed
// as "read /proc/N/stat: no such process".
func TestProcReaders_ProcessesExitingMeanwhileAreGoneNotErrors(t *testing.T) {
	deadline := time.Now().Add(2 * time.Second)
	for round := 0; time.Now().Before(deadline); round++ {
		var cmds []*exec.Cmd
		for range 8 {
			cmd := exec.Command("/bin/sh", "-c", "true")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, cmd)
		}
		for _, cmd := range cmds {
			if _, err := Lookup(cmd.Process.Pid); err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatalf("round %d: Lookup of an exiting process: %v", round, err)
			}
		}
		if _, err := Snapshot(); err != nil {
			t.Fatalf("round %d: Snapshot: %v", round, err)
		}
		if _, err := DescendantsOf(os.Getpid()); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("round %d: DescendantsOf(self): %v", round, err)
		}
		if _, err := SessionMembers(os.Getpid()); err != nil {
			t.Fatalf("round %d: SessionMembers: %v", round, err)
		}
		for _, cmd := range cmds {
			_ = cmd.Wait() // true exits 0; only the reaping matters
		}
	}
}
