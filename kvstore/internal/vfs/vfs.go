// Package vfs is the narrow file-system seam of the engine: everything the
// engine does to disk goes through FS and File, so tests can inject ENOSPC,
// failed fsyncs and short writes without touching the real disk's health.
package vfs

import (
	"io"
	"os"
	"path/filepath"

	"github.com/devkit-go/devkit/internal/dirsync"
)

// File is an open log segment or snapshot file.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's data durable (fdatasync where the OS has it).
	Sync() error
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
	Stat() (os.FileInfo, error)
	Name() string
}

// FS is the set of file-system operations the engine uses.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	// SyncDir makes directory entries (creates, renames, removes) durable.
	SyncDir(path string) error
}

// OS is the real file system.
type OS struct{}

type osFile struct{ *os.File }

func (f osFile) Sync() error { return datasync(f.File) }

// OpenFile opens name with os.OpenFile.
func (OS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Rename renames with os.Rename.
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove removes with os.Remove.
func (OS) Remove(name string) error { return os.Remove(name) }

// MkdirAll creates path with os.MkdirAll.
func (OS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }

// ReadDir lists name with os.ReadDir.
func (OS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

// SyncDir fsyncs the directory itself so that entries in it survive a crash.
func (OS) SyncDir(path string) error { return dirsync.Sync(filepath.Clean(path)) }
