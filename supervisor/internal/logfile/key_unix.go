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
		return strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(uint64(st.Ino), 10)
	}
	return "path:" + path
}
