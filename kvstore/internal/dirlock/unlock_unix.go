//go:build unix

package dirlock

import (
	"os"

	"golang.org/x/sys/unix"
)

func unlockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
