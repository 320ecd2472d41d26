package proc

// Limits are written into the process's own cgroup before the process is
// cloned into it, so it never runs a moment without them. They need the
// memory and cpu controllers passed on by the cgroup that holds the
// process's cgroup: a cgroup v2 other than the root can pass controllers
// on only while it holds no process of its own, so when the monitor's own
// cgroup cannot, its parent (delegated subtrees are writable as a whole)
// is tried.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LimitControllers are the cgroup v2 controllers resource limits use.
var LimitControllers = []string{"memory", "cpu"}

// LimitsParent returns the cgroup under which a cgroup with resource
// limits can be made: own (the caller's cgroup) or its parent, whichever
// passes the memory and cpu controllers on to its children (enabling them
// in its cgroup.subtree_control when they are not yet). The error says
// why neither can.
func LimitsParent(own string) (string, error) {
	first := enableControllers(own)
	if first == nil {
		return own, nil
	}
	parent := filepath.Dir(own)
	var fs unix.Statfs_t
	if parent != own && unix.Statfs(parent, &fs) == nil && fs.Type == unix.CGROUP2_SUPER_MAGIC {
		if err := enableControllers(parent); err == nil {
			return parent, nil
		}
	}
	return "", first
}

// enableControllers makes the limit controllers available to the children
// of the cgroup at dir.
func enableControllers(dir string) error {
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup v2 %s: %w", dir, err)
	}
	have := strings.Fields(string(avail))
	var missing []string
	for _, c := range LimitControllers {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		offered := strings.Join(have, " ")
		if offered == "" {
			offered = "none"
		}
		return fmt.Errorf("the cgroup v2 %s offers the controllers %s, not %s (a controller bound to a cgroup v1 hierarchy is not in cgroup v2)", dir, offered, strings.Join(missing, " and "))
	}
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("cgroup v2 %s: %w", dir, err)
	}
	enabled := strings.Fields(string(sub))
	var enable []string
	for _, c := range LimitControllers {
		if !slices.Contains(enabled, c) {
			enable = append(enable, "+"+c)
		}
	}
	if len(enable) == 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("cannot pass %s on from the cgroup v2 %s: it holds processes of its own, and only the root cgroup may then", strings.Join(enable, " "), dir)
		}
		return fmt.Errorf("cannot pass %s on from the cgroup v2 %s: %w", strings.Join(enable, " "), dir, err)
	}
	return nil
}

// SetCgroupLimits writes memory.max (and memory.swap.max 0, where swap is
// accounted, so the limit is not met by swapping) and cpu.max (a quota of
// cpuMax CPUs per 100 ms period) into the cgroup at dir; zero leaves a
// limit out.
func SetCgroupLimits(dir string, memoryMax int64, cpuMax float64) error {
	write := func(file, value string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
			return fmt.Errorf("proc: set %s: %w", file, err)
		}
		return nil
	}
	if memoryMax > 0 {
		if err := write("memory.max", strconv.FormatInt(memoryMax, 10)); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(dir, "memory.swap.max")); err == nil {
			if err := write("memory.swap.max", "0"); err != nil {
				return err
			}
		}
	}
	if cpuMax > 0 {
		const period = 100000 // µs
		if err := write("cpu.max", fmt.Sprintf("%d %d", int64(cpuMax*period+0.5), period)); err != nil {
			return err
		}
	}
	return nil
}

// CgroupOOMKills reads oom_kill from the memory.events of the cgroup at
// dir: how many of its processes the kernel killed for the memory limit.
func CgroupOOMKills(dir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dir, "memory.events"))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}
