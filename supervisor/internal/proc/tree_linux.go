package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Snapshot reads every /proc/<pid>/stat once. A process that exits while
// the scan runs is simply missing; zombies are left out.
func Snapshot() (Table, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close() // read-only
	if err != nil {
		return nil, err
	}
	boot, err := BootID()
	if err != nil {
		return nil, err
	}
	t := make(Table, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue // not a process: /proc/self, /proc/meminfo...
		}
		buf, err := os.ReadFile("/proc/" + name + "/stat")
		if gone(err) || errors.Is(err, fs.ErrPermission) {
			continue // exited meanwhile, or another user's under hidepid: not ours either way
		}
		if err != nil {
			return nil, fmt.Errorf("proc: read stat of %d: %w", pid, err)
		}
		info, state, err := parseStat(pid, buf)
		if err != nil {
			return nil, err
		}
		if state == "Z" || state == "X" {
			continue
		}
		info.BootID = boot
		t[pid] = info
	}
	return t, nil
}

// HasEnv reports whether the environment of pid holds the entry kv
// ("NAME=value"). It is how a descendant that left the session and lost
// its parent is still recognised: the supervisor's token is inherited.
func HasEnv(pid int, kv string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false // gone, or another user's (EACCES): not ours either way
	}
	for entry := range bytes.SplitSeq(data, []byte{0}) {
		if string(entry) == kv {
			return true
		}
	}
	return false
}

// DescendantsOf walks the tree below root through the kernel's
// /proc/<pid>/task/<tid>/children lists: a few small reads for a process's
// own tree instead of a scan of every process. It fails with
// errors.ErrUnsupported where the kernel lacks those lists
// (CONFIG_PROC_CHILDREN), and with ErrNotFound when root is gone.
func DescendantsOf(root int) ([]Info, error) {
	var out []Info
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		kids, err := childrenOf(pid)
		if err != nil {
			if pid == root || !errors.Is(err, ErrNotFound) {
				return nil, err
			}
			continue // it exited meanwhile: its children moved to a subreaper we walk too
		}
		for _, k := range kids {
			if seen[k] {
				continue
			}
			seen[k] = true
			info, err := Lookup(k)
			if errors.Is(err, ErrNotFound) {
				continue // gone, or a zombie
			}
			if err != nil {
				return nil, err
			}
			out = append(out, info)
			queue = append(queue, k)
		}
	}
	return out, nil
}

// childrenOf lists the children of every thread of pid.
func childrenOf(pid int) ([]int, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		if gone(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("proc: %w", err)
	}
	var kids []int
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(dir + "/" + t.Name() + "/stat"); serr == nil {
				return nil, fmt.Errorf("proc: %s/children: %w", t.Name(), errors.ErrUnsupported)
			}
			continue // the thread ended meanwhile
		}
		if gone(err) {
			continue // the thread ended between the open and the read
		}
		if err != nil {
			return nil, fmt.Errorf("proc: %w", err)
		}
		for _, f := range strings.Fields(string(data)) {
			k, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("proc: %s/%s/children: %q is not a pid: %w", dir, t.Name(), f, err)
			}
			kids = append(kids, k)
		}
	}
	return kids, nil
}
