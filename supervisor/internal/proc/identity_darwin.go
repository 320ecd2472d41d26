package proc

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Lookup asks sysctl kern.proc.pid. macOS start times are wall-clock
// timestamps, so they identify a process across reboots on their own.
func Lookup(pid int) (Info, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return Info{}, ErrNotFound
		}
		return Info{}, fmt.Errorf("proc: sysctl kern.proc.pid %d: %w", pid, err)
	}
	if int(kp.Proc.P_pid) != pid || kp.Proc.P_stat == 5 { // SZOMB
		return Info{}, ErrNotFound
	}
	start := kp.Proc.P_starttime
	sid, _ := unix.Getsid(pid) // a process gone meanwhile keeps sid 0, matching no session
	return Info{
		Identity: Identity{PID: pid, StartTime: strconv.FormatInt(start.Sec, 10) + "." + strconv.FormatInt(int64(start.Usec), 10)},
		PPID:     int(kp.Eproc.Ppid),
		PGID:     int(kp.Eproc.Pgid),
		Session:  sid,
		Comm:     unix.ByteSliceToString(kp.Proc.P_comm[:]),
	}, nil
}

// BootID returns the boot time, which changes on every boot.
func BootID() (string, error) {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return "", fmt.Errorf("proc: sysctl kern.boottime: %w", err)
	}
	return strconv.FormatInt(tv.Sec, 10), nil
}
