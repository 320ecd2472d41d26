package proc

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/windows"
)

// stillActive is the exit code Windows reports for a running process.
const stillActive = 259

// Lookup opens the process and reads its creation time, an absolute
// timestamp that identifies the process across PID reuse and reboots.
func Lookup(pid int) (Info, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			return Info{}, ErrNotFound
		}
		return Info{}, fmt.Errorf("proc: open process %d: %w", pid, err)
	}
	defer func() { _ = windows.CloseHandle(h) }() // releasing a handle: nothing to act on
	return infoFromHandle(pid, h)
}

func infoFromHandle(pid int, h windows.Handle) (Info, error) {
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return Info{}, fmt.Errorf("proc: exit code of %d: %w", pid, err)
	}
	if code != stillActive {
		return Info{}, ErrNotFound
	}
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return Info{}, fmt.Errorf("proc: process times of %d: %w", pid, err)
	}
	return Info{
		Identity: Identity{PID: pid, StartTime: strconv.FormatInt(created.Nanoseconds(), 10)},
		PGID:     pid,
		Session:  pid,
	}, nil
}

// BootID is empty on Windows: creation times are absolute.
func BootID() (string, error) { return "", nil }
