package proc

import (
	"bytes"
	"os"
	"strconv"
)

// Snapshot reads every /proc/<pid>/stat once. A process that exits while
// the scan runs is simply missing; zombies are left out.
func Snapshot() (Table, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
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
			continue
		}
		buf, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // ESRCH/ENOENT: it exited meanwhile, which is what gone means
		}
		info, state, err := parseStat(pid, buf)
		if err != nil || state == "Z" || state == "X" {
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
		return false
	}
	for entry := range bytes.SplitSeq(data, []byte{0}) {
		if string(entry) == kv {
			return true
		}
	}
	return false
}
