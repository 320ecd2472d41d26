//go:build !windows

package ratelimit

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// notifyReload turns SIGHUP into policy reloads until ctx ends.
func notifyReload(ctx context.Context) <-chan struct{} {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGHUP)
	out := make(chan struct{}, 1)
	go func() {
		defer signal.Stop(sig)
		for {
			select {
			case <-ctx.Done():
				return
			case <-sig:
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}
