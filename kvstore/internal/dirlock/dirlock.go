// Package dirlock makes one process the owner of a data directory: an
// exclusive, non-blocking lock on <dir>/LOCK that the kernel drops when the
// process dies, so a crash never leaves a stale lock behind.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrLocked is returned when another process (or another open handle in
// this one) owns the directory.
var ErrLocked = errors.New("data directory is locked by another process")

// Lock is a held directory lock.
type Lock struct{ f *os.File }

// Acquire takes the lock on dir or fails at once with an error wrapping
// ErrLocked that names the holder's PID when it is known.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		holder := "unknown PID"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = "PID " + strconv.Itoa(pid)
			}
		}
		return nil, fmt.Errorf("%w: %s is held by %s (%w)", ErrLocked, path, holder, err)
	}
	// Record who holds it, for the error message of the next would-be owner.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlockFile(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
