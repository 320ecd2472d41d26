package proc

import (
	"context"
	"time"
)

// pollInterval is how often a process without a waitable handle is
// re-checked: short enough that stop returns within milliseconds of an exit.
const pollInterval = 5 * time.Millisecond

// PollEvery checks cond at once and then every interval until it holds
// (nil) or ctx ends (ctx.Err()). It is the one poll loop of the supervisor,
// for what the kernel cannot notify: waits for an exit without a waitable
// handle, for a tree to empty, for a ready probe, for a stop during a
// backoff. A cond with more to say than "done" records it in its closure.
func PollEvery(ctx context.Context, interval time.Duration, cond func() bool) error {
	if cond() {
		return nil
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if cond() {
			return nil
		}
	}
}

// PollUntil is PollEvery at pollInterval for at most within.
func PollUntil(ctx context.Context, within time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return PollEvery(ctx, pollInterval, cond)
}
