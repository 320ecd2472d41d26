package proc

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// Snapshot lists every process from a toolhelp snapshot, with creation
// times read per process.
func Snapshot() (Table, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = windows.CloseHandle(snap) }() // releasing a snapshot: nothing to act on
	t := Table{}
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		info, lerr := Lookup(int(e.ProcessID))
		if lerr != nil {
			continue // exited meanwhile, or not ours to open
		}
		info.PPID = int(e.ParentProcessID)
		info.Comm = windows.UTF16ToString(e.ExeFile[:])
		t[info.PID] = info
	}
	return t, nil
}

// HasEnv is not implemented on Windows.
func HasEnv(pid int, kv string) bool { return false }
