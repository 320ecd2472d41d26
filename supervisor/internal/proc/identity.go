package proc

import (
	"errors"
	"strconv"
	"strings"
	"syscall"
)

// ErrNotFound reports that no live process has the PID (zombies count as gone).
var ErrNotFound = errors.New("no such process")

// ErrIdentityMismatch reports that the PID is alive but names another
// process than the one recorded: the PID was reused.
var ErrIdentityMismatch = errors.New("pid reused by another process")

// Identity names one process across PID reuse: its PID plus the kernel's
// start time for it, plus the boot it belongs to where start times are
// counted from boot.
type Identity struct {
	PID       int    `json:"pid"`
	StartTime string `json:"start_time"`
	BootID    string `json:"boot_id,omitempty"`
}

// Same reports whether id and other name the same process.
func (id Identity) Same(other Identity) bool {
	return id.PID == other.PID && id.StartTime == other.StartTime && id.BootID == other.BootID
}

// Info is what the kernel tells about a live process.
type Info struct {
	Identity
	PPID    int    // parent
	PGID    int    // process group
	Session int    // session id
	Comm    string // short command name
}

// Verify looks want.PID up and checks that it is still the recorded process.
// It returns ErrNotFound when the PID is gone and ErrIdentityMismatch when
// the PID now belongs to someone else.
func Verify(want Identity) (Info, error) {
	if want.PID <= 0 {
		return Info{}, ErrNotFound
	}
	info, err := Lookup(want.PID)
	if err != nil {
		return Info{}, err
	}
	if !info.Identity.Same(want) {
		return info, ErrIdentityMismatch
	}
	return info, nil
}

// StartedNotBefore reports whether a was started no earlier than b. Start
// times are integers (clock ticks since boot on Linux, 100 ns units on
// Windows) or "seconds.micros" with unpadded micros (macOS), so each part is
// compared as an integer. When either cannot be read the answer is false:
// descent is then not provable.
func StartedNotBefore(a, b Identity) bool {
	as, af, aok := startParts(a.StartTime)
	bs, bf, bok := startParts(b.StartTime)
	if !aok || !bok {
		return false
	}
	return as > bs || (as == bs && af >= bf)
}

func startParts(s string) (whole, frac int64, ok bool) {
	w, f, hasFrac := strings.Cut(s, ".")
	whole, err := strconv.ParseInt(w, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if hasFrac {
		if frac, err = strconv.ParseInt(f, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return whole, frac, true
}

// ExitStatus is how a child ended: its exit code, or the signal that
// killed it (Code is then -1).
type ExitStatus struct {
	Code   int
	Signal syscall.Signal
}
