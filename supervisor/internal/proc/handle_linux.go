package proc

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Handle is a verified reference to one process. On Linux it holds a pidfd,
// so signals reach the process that was verified even if the PID is reused
// after the check.
type Handle struct {
	id    Identity
	pidfd int // -1 where the kernel has no pidfd_open
}

// Open verifies id and returns a handle to it.
func Open(id Identity) (*Handle, error) {
	fd, err := unix.PidfdOpen(id.PID, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, ErrNotFound
		}
		fd = -1 // ENOSYS on old kernels: fall back to verify-then-kill
	}
	// Verify after opening: the pidfd pins the process we then check.
	if _, err := Verify(id); err != nil {
		if fd >= 0 {
			_ = unix.Close(fd) // the verify error is the one to report
		}
		return nil, err
	}
	return &Handle{id: id, pidfd: fd}, nil
}

// Identity returns the process the handle refers to.
func (h *Handle) Identity() Identity { return h.id }

// Signal delivers sig to the process itself.
func (h *Handle) Signal(sig syscall.Signal) error {
	if h.pidfd >= 0 {
		err := unix.PidfdSendSignal(h.pidfd, sig, nil, 0)
		if errors.Is(err, unix.ESRCH) {
			return ErrNotFound
		}
		return err
	}
	if _, err := Verify(h.id); err != nil {
		return err
	}
	return unix.Kill(h.id.PID, sig)
}

// Wait blocks until the process exits or ctx ends. It returns nil once the
// process is gone, ctx.Err() otherwise. With a pidfd the exit is noticed
// as it happens, not on a poll tick.
func (h *Handle) Wait(ctx context.Context) error {
	if h.pidfd < 0 {
		return pollUntilGone(ctx, h.id)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		wait := 100 * time.Millisecond
		if dl, ok := ctx.Deadline(); ok {
			if left := time.Until(dl); left < wait {
				wait = max(left, time.Millisecond)
			}
		}
		fds := []unix.PollFd{{Fd: int32(h.pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(wait.Milliseconds()))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("proc: poll pidfd: %w", err)
		}
		if n > 0 {
			return nil
		}
	}
}

// Close releases the handle.
func (h *Handle) Close() error {
	if h.pidfd >= 0 {
		err := unix.Close(h.pidfd)
		h.pidfd = -1
		return err
	}
	return nil
}
