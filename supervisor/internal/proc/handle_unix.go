//go:build unix && !linux

package proc

import (
	"context"
	"syscall"

	"golang.org/x/sys/unix"
)

// Handle is a verified reference to one process. Without pidfds the
// identity is re-verified right before every signal.
type Handle struct {
	id Identity
}

// Open verifies id and returns a handle to it.
func Open(id Identity) (*Handle, error) {
	if _, err := Verify(id); err != nil {
		return nil, err
	}
	return &Handle{id: id}, nil
}

// Identity returns the process the handle refers to.
func (h *Handle) Identity() Identity { return h.id }

// Signal re-verifies the process and delivers sig to it.
func (h *Handle) Signal(sig syscall.Signal) error {
	if _, err := Verify(h.id); err != nil {
		return err
	}
	return unix.Kill(h.id.PID, sig)
}

// Wait blocks until the process exits or ctx ends.
func (h *Handle) Wait(ctx context.Context) error { return pollUntilGone(ctx, h.id) }

// Close releases the handle.
func (h *Handle) Close() error { return nil }
