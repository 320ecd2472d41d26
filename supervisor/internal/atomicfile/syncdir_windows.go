package atomicfile

// This file is a deliberate copy: one rule for making a rename durable (sync
// the directory that holds the new name), shared by the KV engine and the
// supervisor while the modules never import each other. Its copies
// (kvstore/internal/vfs, supervisor/internal/atomicfile) are identical below
// the package clause, and tools/copies fails when they drift.

// syncDir is a no-op on Windows: NTFS journals directory entries itself and
// directories cannot be opened for FlushFileBuffers without extra rights.
func syncDir(string) error { return nil }
