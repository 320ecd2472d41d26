//go:build !linux

package vfs

import "os"

// datasync falls back to a full fsync; on darwin os.File.Sync issues
// F_FULLFSYNC, which is what durability there requires.
func datasync(f *os.File) error { return f.Sync() }
