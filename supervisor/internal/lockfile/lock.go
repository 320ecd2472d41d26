// Package lockfile serialises CLI runs that touch the same process: a
// record is read, acted on and rewritten only while its lock is held, so two
// concurrent starts of one name yield exactly one process.
package lockfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/devkit-go/devkit/internal/filelock"
)

// retryInterval is how often a waiting Acquire tries again.
const retryInterval = 10 * time.Millisecond

// Lock is an exclusive advisory lock on a file. The kernel releases it when
// the holder exits, so a crashed CLI never leaves a lock behind.
type Lock struct{ f *os.File }

// Acquire waits until it holds the lock at path or ctx ends. The holder's
// PID is written into the file, so that a run that has to wait can say for
// whom: onWait, when not nil, is called once, on the first failed attempt,
// with the holder's PID (0 when it cannot be read).
func Acquire(ctx context.Context, path string, onWait func(holder int)) (*Lock, error) {
	f, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	t := time.NewTicker(retryInterval)
	defer t.Stop()
	for {
		err := filelock.TryLock(f)
		if err == nil {
			filelock.WriteHolder(f)
			return &Lock{f: f}, nil
		}
		if !errors.Is(err, filelock.ErrWouldBlock) {
			_ = f.Close() // the lock error is the one to report
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if onWait != nil {
			onWait(filelock.Holder(path))
			onWait = nil
		}
		select {
		case <-ctx.Done():
			_ = f.Close() // the lock error is the one to report
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
	}
}

// TryAcquire takes the lock at path if it is free; ok is false otherwise.
func TryAcquire(path string) (l *Lock, ok bool, err error) {
	f, err := open(path)
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := filelock.TryLock(f); err != nil {
		_ = f.Close() // the lock error is the one to report
		if errors.Is(err, filelock.ErrWouldBlock) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	filelock.WriteHolder(f)
	return &Lock{f: f}, true, nil
}

// open opens the lock file at path, creating it; on a read-only or full
// file system an existing lock file is opened read-only, which locks just
// as well (only the holder's PID goes unwritten).
func open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		return f, nil
	}
	if ro, rerr := os.Open(path); rerr == nil {
		return ro, nil
	}
	return nil, err
}

// Release gives the lock up.
func (l *Lock) Release() error { return l.f.Close() }
