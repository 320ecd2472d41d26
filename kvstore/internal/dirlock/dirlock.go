// Package dirlock makes one process the owner of a data directory: an
// exclusive, non-blocking lock on <dir>/LOCK that the kernel drops when the
// process dies, so a crash never leaves a stale lock behind.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/devkit-go/devkit/internal/filelock"
)

// ErrLocked is returned when another process (or another open handle in
// this one) owns the directory.
var ErrLocked = errors.New("data directory is locked by another process")

// Lock is a held directory lock.
type Lock struct{ f *os.File }

// Acquire takes the lock on dir or fails at once. Contention (another owner)
// is an error wrapping ErrLocked that names the holder's PID when it is
// known; any other failure to lock is returned as itself.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockError(path, filelock.TryLock(f)); err != nil {
		f.Close()
		return nil, err
	}
	filelock.WriteHolder(f) // for the error message of the next would-be owner
	return &Lock{f: f}, nil
}

// lockError turns filelock.TryLock's answer into Acquire's error: ErrLocked, with
// the holder, only for contention.
func lockError(path string, err error) error {
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, filelock.ErrWouldBlock):
		return fmt.Errorf("lock %s: %w", path, err)
	}
	holder := "unknown PID"
	if pid := filelock.Holder(path); pid != 0 {
		holder = fmt.Sprintf("PID %d", pid)
	}
	return fmt.Errorf("%w: %s is held by %s", ErrLocked, path, holder)
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := filelock.Unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
