package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
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
		if gone(err) {
			return Info{}, ErrNotFound
		}
		return Info{}, fmt.Errorf("proc: read stat of %d: %w", pid, err)
	}
	return FromStat(pid, data)
}

// FromStat is Lookup from the content of /proc/<pid>/stat, read by the
// caller (from a file it keeps open, say).
func FromStat(pid int, data []byte) (Info, error) {
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

// gone reports whether an error reading /proc/<pid>/... means the process
// is gone: ENOENT when it exited before the open, ESRCH when it exited
// between the open and the read. Every /proc reader goes through it.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
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
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return Info{}, "", fmt.Errorf("proc: stat of %d: ppid %q: %w", pid, fields[1], err)
	}
	pgid, err := strconv.Atoi(fields[2])
	if err != nil {
		return Info{}, "", fmt.Errorf("proc: stat of %d: pgrp %q: %w", pid, fields[2], err)
	}
	sid, err := strconv.Atoi(fields[3])
	if err != nil {
		return Info{}, "", fmt.Errorf("proc: stat of %d: session %q: %w", pid, fields[3], err)
	}
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
