//go:build unix

package redistest

import "syscall"

// Pause stops the server's process (SIGSTOP) until Resume: a replica that
// acknowledges nothing, without a closed connection.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }
