package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync flushes the file's data and the metadata needed to read it back
// (its size), skipping timestamps: fdatasync(2).
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
