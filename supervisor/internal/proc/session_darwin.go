package proc

import "golang.org/x/sys/unix"

// SessionMembers lists the live processes whose session id is sid, from
// the kernel's process table (kern.proc.all) and getsid(2).
func SessionMembers(sid int) ([]Info, error) {
	if sid <= 1 {
		return nil, nil
	}
	all, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	var members []Info
	for _, kp := range all {
		pid := int(kp.Proc.P_pid)
		if s, err := unix.Getsid(pid); err != nil || s != sid {
			continue
		}
		if info, err := Lookup(pid); err == nil {
			members = append(members, info)
		}
	}
	return members, nil
}
