package proc

// A cgroup v2 subtree per process is the tightest tracking there is: every
// descendant is in it, whatever it does with sessions, groups or parents,
// and the kernel lists them. It is used where the caller's own cgroup is
// writable (delegated, as systemd user sessions and containers give);
// elsewhere the subreaper and the token do the job.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CgroupsAvailable reports whether this platform can put a process into a
// cgroup of its own at spawn.
const CgroupsAvailable = true

// OwnCgroupDir returns the directory of the calling process's cgroup v2,
// or an error when there is none (no unified hierarchy mounted).
func OwnCgroupDir() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var rel string
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
		}
	}
	if !found {
		return "", errors.New("proc: no cgroup v2 membership")
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(mounts))
	for sc.Scan() {
		// id parent maj:min root mountpoint opts ... - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		root, mount := f[3], f[4]
		inside, err := filepath.Rel(root, rel)
		if err != nil || strings.HasPrefix(inside, "..") {
			continue
		}
		return filepath.Join(mount, inside), nil
	}
	return "", errors.New("proc: no cgroup2 mount")
}

// MakeCgroup creates the cgroup dir (its parent must be writable) and
// returns an open descriptor for clone3's CLONE_INTO_CGROUP.
func MakeCgroup(dir string) (*os.File, error) {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("proc: create cgroup: %w", err)
	}
	f, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir) // an empty cgroup we just made
		return nil, fmt.Errorf("proc: open cgroup: %w", err)
	}
	return f, nil
}

// CgroupMembers lists the live processes of the cgroup at dir (and of
// its sub-cgroups); a cgroup that is gone has none.
func CgroupMembers(dir string) ([]Info, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		return nil, err
	}
	if fs.Type != unix.CGROUP2_SUPER_MAGIC {
		return nil, fmt.Errorf("proc: %s is not a cgroup v2 directory", dir)
	}
	var out []Info
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENODEV) {
			return nil // removed meanwhile
		}
		if err != nil {
			return fmt.Errorf("proc: %w", err)
		}
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("proc: %s/cgroup.procs: %q is not a pid: %w", path, f, err)
			}
			info, err := Lookup(pid)
			if errors.Is(err, ErrNotFound) {
				continue // exited meanwhile
			}
			if err != nil {
				return err
			}
			out = append(out, info)
		}
		return nil
	})
	return out, err
}

// RemoveCgroup removes an empty cgroup (and its empty sub-cgroups).
func RemoveCgroup(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error { // gone: nothing to remove
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	var first error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	return first
}
