package supervisor

import "syscall"

// ownGroupAttr has no session semantics to model on Windows.
func ownGroupAttr() *syscall.SysProcAttr { return nil }
