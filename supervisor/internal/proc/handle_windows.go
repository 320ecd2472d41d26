package proc

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/windows"
)

// Handle is a verified reference to one process: an open process handle,
// which keeps the PID from being reused while it is held.
type Handle struct {
	id Identity
	h  windows.Handle
}

// Open verifies id and returns a handle to it.
func Open(id Identity) (*Handle, error) {
	access := uint32(windows.SYNCHRONIZE | windows.PROCESS_TERMINATE | windows.PROCESS_QUERY_LIMITED_INFORMATION)
	h, err := windows.OpenProcess(access, false, uint32(id.PID))
	if err != nil {
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("proc: open process %d: %w", id.PID, err)
	}
	info, err := infoFromHandle(id.PID, h)
	if err == nil && !info.Identity.Same(id) {
		err = ErrIdentityMismatch
	}
	if err != nil {
		_ = windows.CloseHandle(h) // the open error is the one to report
		return nil, err
	}
	return &Handle{id: id, h: h}, nil
}

// Identity returns the process the handle refers to.
func (h *Handle) Identity() Identity { return h.id }

// Signal terminates the process: Windows has no catchable stop signal for a
// detached process, so every signal is a termination.
func (h *Handle) Signal(sig syscall.Signal) error {
	return windows.TerminateProcess(h.h, 1)
}

// Wait blocks until the process exits or ctx ends.
func (h *Handle) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ev, err := windows.WaitForSingleObject(h.h, 100)
		if err != nil {
			return fmt.Errorf("proc: wait: %w", err)
		}
		if ev == windows.WAIT_OBJECT_0 {
			return nil
		}
	}
}

// Close releases the handle.
func (h *Handle) Close() error { return windows.CloseHandle(h.h) }
