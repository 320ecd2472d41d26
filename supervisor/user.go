package supervisor

import (
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"
)

// RunAs is the account a process runs as (user:): resolved when the
// config is read, so that the monitor needs no user database.
type RunAs struct {
	User   string   `json:"user"`
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"` // supplementary groups
}

// geteuid is os.Geteuid; a variable so a test can play a user who is not root.
var geteuid = os.Geteuid

// resolveUser looks name (a user name or a numeric UID) up and checks that
// devkit may switch to it: only root may, and only on Unix.
func resolveUser(name string) (*RunAs, error) {
	if runtime.GOOS == "windows" {
		return nil, fmt.Errorf("not supported on Windows")
	}
	u, err := user.Lookup(name)
	if err != nil {
		if _, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
			u, err = user.LookupId(name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("no such user %q", name)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q has UID %q: not a number", name, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q has GID %q: not a number", name, u.Gid)
	}
	if euid := geteuid(); euid != 0 {
		if uint32(euid) == uint32(uid) {
			return nil, nil // already that user: nothing to switch
		}
		return nil, fmt.Errorf("devkit runs as UID %d, not root: only root can run a process as %s; run devkit as root or remove the user field", euid, name)
	}
	r := &RunAs{User: u.Username, UID: uint32(uid), GID: uint32(gid)}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("groups of %q: %w", name, err)
	}
	for _, g := range ids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("user %q is in group %q: not a number", name, g)
		}
		r.Groups = append(r.Groups, uint32(n))
	}
	return r, nil
}
