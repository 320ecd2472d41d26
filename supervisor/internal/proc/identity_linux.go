package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Lookup reads /proc/<pid>/stat. Start times on Linux are clock ticks since
// boot, so the identity carries the boot id too.
func Lookup(pid int) (Info, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		// ESRCH: the process exited between open and read; gone all the same.
		if os.IsNotExist(err) || errors.Is(err, syscall.ESRCH) {
			return Info{}, ErrNotFound
		}
		return Info{}, fmt.Errorf("proc: read stat of %d: %w", pid, err)
	}
	info, state, err := parseStat(pid, data)
	if err != nil {
		return Info{}, err
	}
	if state == "Z" || state == "X" {
		return Info{}, ErrNotFound
	}
	boot, err := BootID()
	if err != nil {
		return Info{}, err
	}
	info.BootID = boot
	return info, nil
}

// parseStat parses one /proc/<pid>/stat line. The command name sits in
// parentheses and may itself contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(pid int, data []byte) (Info, string, error) {
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return Info{}, "", fmt.Errorf("proc: malformed stat for %d", pid)
	}
	fields := strings.Fields(string(data[closing+1:]))
	// fields[0] is field 3 of proc(5): state, ppid, pgrp, session, ..., starttime (22).
	if len(fields) < 20 {
		return Info{}, "", fmt.Errorf("proc: short stat for %d", pid)
	}
	ppid, _ := strconv.Atoi(fields[1])
	pgid, _ := strconv.Atoi(fields[2])
	sid, _ := strconv.Atoi(fields[3])
	return Info{
		Identity: Identity{PID: pid, StartTime: fields[19]},
		PPID:     ppid,
		PGID:     pgid,
		Session:  sid,
		Comm:     string(data[open+1 : closing]),
	}, fields[0], nil
}

// BootID returns the kernel's id for the current boot.
func BootID() (string, error) { return bootID() }

// bootID reads the boot id once per process: it cannot change while we
// run, and every identity check needs it (a computed constant, not state).
var bootID = sync.OnceValues(func() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("proc: read boot id: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
})
