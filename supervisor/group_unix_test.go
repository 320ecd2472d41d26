//go:build unix

package supervisor

import "syscall"

// ownGroupAttr puts a helper grandchild in a process group of its own,
// still inside its parent's session.
func ownGroupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
