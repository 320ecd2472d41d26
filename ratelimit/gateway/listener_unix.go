//go:build unix

package gateway

import (
	"net"

	"golang.org/x/sys/unix"
)

// unreadPending says whether the client's bytes wait unread in the kernel
// (or the socket cannot tell): closing then would reset the connection.
// nginx's lingering_close on asks the same (its read event is ready).
func unreadPending(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return true
	}
	pending := true
	var buf [1]byte
	if err := rc.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		// EAGAIN: nothing waits; 0 bytes: the client closed its side.
		pending = !(err == unix.EAGAIN || err == nil && n == 0)
		return true // never wait for readiness
	}); err != nil {
		return true
	}
	return pending
}
