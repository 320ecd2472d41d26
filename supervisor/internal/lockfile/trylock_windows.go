package lockfile

// This file is a deliberate copy: one rule for what counts as contention on
// a lock file, shared by the KV engine's directory lock and the supervisor's
// per-name locks while the modules never import each other. Its copies
// (kvstore/internal/dirlock, supervisor/internal/lockfile) are identical below
// the package clause, and tools/copies fails when they drift.
//
// tryLock takes an exclusive lock on f without waiting. It returns
// errWouldBlock only when another holder has the lock; any other failure
// (a file system without locks, a bad handle) is returned as itself, so it is
// never reported as "locked by another process".

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// errWouldBlock is returned by tryLock when another holder has the lock.
var errWouldBlock = errors.New("lock held elsewhere")

// lockOffset is where the one locked byte lies: 1 GiB into the file, far
// past the holder's PID written at its start (as SQLite places its lock
// bytes). Windows locks are mandatory, so a lock on byte 0 would keep the
// next would-be owner from reading who holds it.
const lockOffset = 1 << 30

func tryLock(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errWouldBlock
	}
	return err
}
