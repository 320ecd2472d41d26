package proc

import (
	"context"
	"errors"
	"time"
)

// pollInterval is how often a process without a waitable handle is
// re-checked: short enough that stop returns within milliseconds of an exit.
const pollInterval = 5 * time.Millisecond

// pollUntilGone re-verifies id until it no longer names a live process.
func pollUntilGone(ctx context.Context, id Identity) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if _, err := Verify(id); errors.Is(err, ErrNotFound) || errors.Is(err, ErrIdentityMismatch) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// PollUntil checks cond every pollInterval until it holds (nil), within
// passes or ctx ends (an error). It is the one poll loop of the supervisor
// for what the kernel cannot notify.
func PollUntil(ctx context.Context, within time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
