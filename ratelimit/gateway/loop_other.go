//go:build !linux

package gateway

import "net"

// eventLoops exist on Linux only (loop_linux.go): elsewhere every
// connection is served by the goroutine front.
type eventLoops struct{}

func newEventLoops(*front, bool, int) *eventLoops { return nil }

func (*eventLoops) adopt(net.Conn) bool { return false }
func (*eventLoops) count() int          { return 0 }
func (*eventLoops) inFlight() int       { return 0 }
func (*eventLoops) drain()              {}
func (*eventLoops) closeAll()           {}
func (*eventLoops) stop()               {}
