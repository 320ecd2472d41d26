package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// SessionMembers lists the live processes whose session id is sid. Because
// the kernel does not reuse a PID that still names a session, every member
// found belongs to the session the supervisor created.
func SessionMembers(sid int) ([]Info, error) {
	if sid <= 1 {
		return nil, nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var members []Info
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process: /proc/self, /proc/meminfo...
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if gone(err) || errors.Is(err, fs.ErrPermission) {
			continue // exited meanwhile, or another user's under hidepid: not ours either way
		}
		if err != nil {
			return nil, fmt.Errorf("proc: read stat of %d: %w", pid, err)
		}
		info, state, err := parseStat(pid, data)
		if err != nil {
			return nil, err
		}
		if info.Session != sid || state == "Z" || state == "X" {
			continue
		}
		members = append(members, info)
	}
	if len(members) > 0 {
		boot, err := BootID()
		if err != nil {
			return nil, err
		}
		for i := range members {
			members[i].BootID = boot
		}
	}
	return members, nil
}
