//go:build unix

// Package dirsync is devkit's one rule for making a rename durable: sync
// the directory that holds the new name. The KV engine's file system and
// the supervisor's atomic file writes both use it.
package dirsync

import "os"

// Sync fsyncs the directory at path, so that a file created or renamed in
// it survives a crash under its new name.
func Sync(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
