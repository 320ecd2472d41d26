//go:build !linux

package resp

import "github.com/devkit-go/devkit/kvstore/server/internal/connserver"

// eventLoops exist on Linux only; elsewhere every connection gets a goroutine.
type eventLoops struct{}

func newEventLoops(*Server) *eventLoops { return nil }

func (*eventLoops) adopt(*connserver.Conn) bool { return false }

func (*eventLoops) stop() {}
