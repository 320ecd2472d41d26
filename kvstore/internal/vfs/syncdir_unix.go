//go:build unix

package vfs

// This file is a deliberate copy: one rule for making a rename durable (sync
// the directory that holds the new name), shared by the KV engine and the
// supervisor while the modules never import each other. Its copies
// (kvstore/internal/vfs, supervisor/internal/atomicfile) are identical below
// the package clause, and tools/copies fails when they drift.

import "os"

// syncDir fsyncs the directory at path, so that a file created or renamed
// in it survives a crash under its new name.
func syncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
