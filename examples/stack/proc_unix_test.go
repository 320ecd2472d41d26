//go:build unix

package stack_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// killPID sends SIGKILL to pid: kill -9.
func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// alive reports whether pid names a live process (a zombie counts as gone only once reaped).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// processesOf lists the PIDs of live processes whose environment holds
// DEVKIT_HOME=home (or a directory whose path starts with home): everything the stack started (monitors, servers, their
// children) carries it. Linux only (/proc); elsewhere it finds nothing.
func processesOf(home string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	needle := []byte("\x00DEVKIT_HOME=" + home)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), needle) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue // a zombie waiting for its parent is not running anything
		}
		pids = append(pids, pid)
	}
	return pids
}
