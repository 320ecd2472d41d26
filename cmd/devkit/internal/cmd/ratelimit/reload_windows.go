//go:build windows

package ratelimit

import "context"

// notifyReload: Windows has no SIGHUP; the policy file is still watched.
func notifyReload(ctx context.Context) <-chan struct{} { return nil }
