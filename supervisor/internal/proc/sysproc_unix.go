//go:build unix

package proc

import "syscall"

// DetachedAttr starts a process as the leader of a new session and process
// group, so that its whole tree can be signalled and found again.
func DetachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// StopSignalsCatchable reports whether a process can catch (and ignore) a
// stop signal; where it cannot, every stop is a termination.
const StopSignalsCatchable = true
