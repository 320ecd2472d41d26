//go:build unix

package proc

import "syscall"

// DetachedAttr starts a process as the leader of a new session and process
// group, so that its whole tree can be signalled and found again.
func DetachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// StopSignalsCatchable reports whether a process can catch (and ignore) a
// stop signal; where it cannot, every stop is a termination.
const StopSignalsCatchable = true

// IntoCgroupAttr is DetachedAttr that also starts the process inside the
// cgroup open as fd (Linux clone3 CLONE_INTO_CGROUP; elsewhere unused).
func IntoCgroupAttr(fd int) *syscall.SysProcAttr {
	attr := DetachedAttr()
	setCgroupFD(attr, fd)
	return attr
}

// ShellCommand returns the system shell invocation that runs a command line.
func ShellCommand(line string) (name string, args []string) { return "sh", []string{"-c", line} }

// WithCredential makes attr start the process as uid and gid with the
// supplementary groups given (setgroups, setgid, setuid, in that order, by
// the runtime between fork and exec); the caller must be root.
func WithCredential(attr *syscall.SysProcAttr, uid, gid uint32, groups []uint32) *syscall.SysProcAttr {
	attr.Credential = &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}
	return attr
}
