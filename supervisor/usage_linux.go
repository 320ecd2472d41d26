package supervisor

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, fixed
// at 100 by the kernel's ABI whatever the kernel's own tick rate.
const userHZ = 100

// cgroupUsage reads the CPU time and memory of the cgroup at dir: exact
// for the whole tree. ok is false when dir is empty or unreadable, or the
// memory controller is not enabled for it (no memory.current), so that
// the caller sums the tree instead.
func cgroupUsage(dir string) (usage, bool) {
	if dir == "" {
		return usage{}, false
	}
	stat, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return usage{}, false
	}
	usec, ok := cpuStatUsage(stat)
	if !ok {
		return usage{}, false
	}
	mem, err := os.ReadFile(filepath.Join(dir, "memory.current"))
	if err != nil {
		return usage{}, false
	}
	bytes, err := strconv.ParseInt(strings.TrimSpace(string(mem)), 10, 64)
	if err != nil {
		return usage{}, false
	}
	return usage{cpuSeconds: float64(usec) / 1e6, rssBytes: bytes, source: UsageCgroup}, true
}

// cpuStatUsage finds usage_usec in a cgroup v2 cpu.stat.
func cpuStatUsage(stat []byte) (int64, bool) {
	for line := range bytes.SplitSeq(stat, []byte("\n")) {
		v, ok := bytes.CutPrefix(line, []byte("usage_usec "))
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// treeUsage sums the usage of members. A member is counted only while its
// stat still names the start time it was verified with: a PID reused by
// another process since is not ours.
func treeUsage(members []proc.Info, files *procFiles) usage {
	u := usage{source: UsageTree}
	page := int64(os.Getpagesize())
	for _, m := range members {
		read := processUsage
		if files != nil {
			read = files.usage
		}
		cpu, rssPages, ok := read(m.Identity)
		if !ok {
			continue
		}
		u.cpuSeconds += cpu
		u.rssBytes += rssPages * page
	}
	return u
}

// processUsage reads one process's CPU time (its own, and that of the
// children it has reaped) and resident pages.
func processUsage(id proc.Identity) (cpuSeconds float64, rssPages int64, ok bool) {
	dir := "/proc/" + strconv.Itoa(id.PID)
	data, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0, 0, false
	}
	ticks, start, ok := statTimes(data)
	if !ok || (id.StartTime != "" && start != id.StartTime) {
		return 0, 0, false
	}
	statm, err := os.ReadFile(dir + "/statm")
	if err != nil {
		return 0, 0, false
	}
	rss, ok := statmRSS(statm)
	return float64(ticks) / userHZ, rss, ok
}

// statmRSS parses /proc/<pid>/statm for the resident set, in pages.
func statmRSS(statm []byte) (int64, bool) {
	f := strings.Fields(string(statm))
	if len(f) < 2 {
		return 0, false
	}
	rss, err := strconv.ParseInt(f[1], 10, 64)
	return rss, err == nil
}

// statTimes parses /proc/<pid>/stat for utime+stime+cutime+cstime (fields
// 14-17 of proc(5)) and the start time (field 22). The command name may
// hold spaces and parentheses, so fields are counted from the last ')'.
func statTimes(data []byte) (ticks int64, start string, ok bool) {
	closing := bytes.LastIndexByte(data, ')')
	if closing < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(data[closing+1:]))
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 20 {
		return 0, "", false
	}
	for _, s := range f[11:15] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, "", false
		}
		ticks += v
	}
	return ticks, f[19], true
}
