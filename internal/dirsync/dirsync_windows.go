// Package dirsync is devkit's one rule for making a rename durable: sync
// the directory that holds the new name. The KV engine's file system and
// the supervisor's atomic file writes both use it.
package dirsync

// Sync is a no-op on Windows: NTFS journals directory entries itself and
// directories cannot be opened for FlushFileBuffers without extra rights.
func Sync(string) error { return nil }
