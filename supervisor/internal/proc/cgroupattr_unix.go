//go:build unix && !linux

package proc

import "syscall"

func setCgroupFD(attr *syscall.SysProcAttr, fd int) {}
