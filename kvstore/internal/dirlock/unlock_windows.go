package dirlock

import (
	"os"

	"golang.org/x/sys/windows"
)

func unlockFile(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset} // the byte tryLock locked
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
