//go:build !unix

package gateway

import "net"

// unreadPending cannot look at the socket here: the connection lingers.
func unreadPending(*net.TCPConn) bool { return true }
