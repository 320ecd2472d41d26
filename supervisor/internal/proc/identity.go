package proc

import "errors"

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
