package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is where the one locked byte lies: 1 GiB into the file, far
// past the holder's PID written at its start (as SQLite places its lock
// bytes). Windows locks are mandatory, so a lock on byte 0 would keep the
// next would-be owner from reading who holds it.
const lockOffset = 1 << 30

// TryLock takes an exclusive lock on f without waiting. It returns
// ErrWouldBlock only when another holder has the lock.
func TryLock(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return ErrWouldBlock
	}
	return err
}

// Unlock drops the lock TryLock took on f; closing f drops it too.
func Unlock(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset} // the byte TryLock locked
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
