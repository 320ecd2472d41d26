//go:build unix

package proc

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// SignalGroup delivers sig to every process of group pgid. Callers verify
// the group leader first: while any member lives, the kernel keeps pgid
// from being handed to a new process.
func SignalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return errors.New("proc: refusing to signal process group <= 1")
	}
	err := unix.Kill(-pgid, sig)
	if errors.Is(err, unix.ESRCH) {
		return ErrNotFound
	}
	return err
}

// SignalNumber maps a signal name such as "TERM" or "SIGTERM" to its number.
func SignalNumber(name string) (syscall.Signal, error) {
	if len(name) < 3 || name[:3] != "SIG" {
		name = "SIG" + name
	}
	sig := unix.SignalNum(name)
	if sig == 0 {
		return 0, errors.New("proc: unknown signal " + name)
	}
	return sig, nil
}

// Kill is the signal that cannot be caught.
const Kill = unix.SIGKILL

// SignalName returns the conventional name of sig, such as "SIGTERM".
func SignalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return sig.String()
}
