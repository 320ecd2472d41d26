package proc

import (
	"errors"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// SignalGroup terminates the process tree rooted at pgid (Windows has no
// process-group signals). Descendants are found through a process snapshot
// and only those created after the root are terminated, so a reused parent
// PID never drags an unrelated process along.
func SignalGroup(pgid int, sig syscall.Signal) error {
	root, err := Lookup(pgid)
	if err != nil {
		return err
	}
	for _, pid := range descendants(pgid) {
		child, err := Lookup(pid)
		if err != nil || !StartedNotBefore(child.Identity, root.Identity) {
			continue
		}
		if h, err := Open(child.Identity); err == nil {
			_ = h.Signal(sig) // a descendant that exited meanwhile is fine; the root's error is returned
			_ = h.Close()     // releasing a handle: nothing to act on
		}
	}
	h, err := Open(root.Identity)
	if err != nil {
		return err
	}
	defer func() { _ = h.Close() }() // releasing a handle: nothing to act on
	return h.Signal(sig)
}

// descendants returns every process below root in the parent tree.
func descendants(root int) []int {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil
	}
	defer func() { _ = windows.CloseHandle(snap) }() // releasing a snapshot: nothing to act on
	children := map[int][]int{}
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		children[int(e.ParentProcessID)] = append(children[int(e.ParentProcessID)], int(e.ProcessID))
	}
	var out []int
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// SignalNumber maps a signal name to a number; on Windows every stop is a
// termination, so the name is only validated.
func SignalNumber(name string) (syscall.Signal, error) {
	switch strings.TrimPrefix(name, "SIG") {
	case "TERM", "INT", "HUP", "QUIT", "KILL", "USR1", "USR2":
		return syscall.SIGTERM, nil
	}
	return 0, errors.New("proc: unknown signal " + name)
}

// Kill is the signal that cannot be caught.
const Kill = syscall.SIGKILL

// SignalName returns a readable name of sig.
func SignalName(sig syscall.Signal) string { return sig.String() }
