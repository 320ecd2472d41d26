//go:build unix

package logfile

import (
	"io/fs"
	"strconv"
	"syscall"
)

// fileKey identifies a file across renames: its device and inode.
func fileKey(path string, fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev := uint64(st.Dev) //nolint:unconvert // Dev is int32 on darwin, uint64 on linux
		return strconv.FormatUint(dev, 10) + ":" + strconv.FormatUint(st.Ino, 10)
	}
	return "path:" + path
}
