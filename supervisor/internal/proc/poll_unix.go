//go:build unix

package proc

import (
	"context"
	"errors"
)

// pollUntilGone re-verifies id until it no longer names a live process.
func pollUntilGone(ctx context.Context, id Identity) error {
	return PollEvery(ctx, pollInterval, func() bool {
		_, err := Verify(id)
		return errors.Is(err, ErrNotFound) || errors.Is(err, ErrIdentityMismatch)
	})
}
