package proc

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// DetachedAttr starts a process in a new process group without a console
// window, detached from the console of the CLI that started it.
func DetachedAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS}
}

// StopSignalsCatchable reports whether a process can catch (and ignore) a
// stop signal; where it cannot, every stop is a termination.
const StopSignalsCatchable = false

// IntoCgroupAttr is DetachedAttr: Windows has no cgroups.
func IntoCgroupAttr(fd int) *syscall.SysProcAttr { return DetachedAttr() }

// ShellCommand returns the system shell invocation that runs a command line.
func ShellCommand(line string) (name string, args []string) { return "cmd", []string{"/C", line} }

// WithCredential returns attr unchanged: Windows has no setuid (user: is
// refused there when the config is read).
func WithCredential(attr *syscall.SysProcAttr, uid, gid uint32, groups []uint32) *syscall.SysProcAttr {
	return attr
}
