// Package filelock is devkit's one rule for what counts as contention on a
// lock file: only EWOULDBLOCK (Unix) or ERROR_LOCK_VIOLATION (Windows) is
// "held elsewhere"; any other failure to lock (a file system without locks,
// a bad handle) is returned as itself, so it is never reported as "locked by
// another process". The KV engine's directory lock and the supervisor's
// per-name locks both take their locks here.
//
// The lock is the kernel's: it is released when the holder exits, so a
// crashed process never leaves a lock behind. The holder's PID written into
// the file is informational only, for the message of the next would-be
// owner.
package filelock

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// ErrWouldBlock is returned by TryLock when another holder has the lock.
var ErrWouldBlock = errors.New("lock held elsewhere")

// WriteHolder records this process's PID in the lock file f. A failure to
// write it is ignored: the next would-be owner then reports an unknown
// holder.
func WriteHolder(f *os.File) {
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0) // informational: see above
	}
}

// Holder returns the PID written by the current (or last) holder of the
// lock file at path, or 0 when none can be read.
func Holder(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0
	}
	return pid
}
