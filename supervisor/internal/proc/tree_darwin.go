package proc

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// Snapshot lists every process from kern.proc.all.
func Snapshot() (Table, error) {
	all, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	boot, err := BootID()
	if err != nil {
		return nil, err
	}
	t := make(Table, len(all))
	for _, kp := range all {
		if kp.Proc.P_stat == 5 { // SZOMB
			continue
		}
		pid := int(kp.Proc.P_pid)
		sid, _ := unix.Getsid(pid) // a process gone meanwhile keeps sid 0, matching nothing
		start := kp.Proc.P_starttime
		t[pid] = Info{
			Identity: Identity{PID: pid, StartTime: strconv.FormatInt(start.Sec, 10) + "." + strconv.FormatInt(int64(start.Usec), 10), BootID: boot},
			PPID:     int(kp.Eproc.Ppid),
			PGID:     int(kp.Eproc.Pgid),
			Session:  sid,
			Comm:     unix.ByteSliceToString(kp.Proc.P_comm[:]),
		}
	}
	return t, nil
}

// HasEnv is not implemented on macOS (reading another process's
// environment needs kern.procargs2 parsing); descent is proven there by
// the session and the monitor's tree only.
func HasEnv(pid int, kv string) bool { return false }
