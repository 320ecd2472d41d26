package kvstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/devkit-go/devkit/kvstore/internal/dirlock"
)

// Sentinel errors; test for them with errors.Is.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("kvstore: key not found")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("kvstore: engine closed")
	// ErrReadOnly: an earlier write or fsync failed; the engine refuses
	// writes until it is reopened. Stats().ReadOnlyReason says why.
	ErrReadOnly = errors.New("kvstore: engine is read-only after a failed write")
	// ErrCorrupt: the log or snapshots are damaged beyond a torn tail.
	ErrCorrupt = errors.New("kvstore: data is corrupt")
	// ErrNewerFormat: a log segment or snapshot was written by a newer
	// devkit, in a format this build does not read; nothing was changed.
	ErrNewerFormat = errors.New("kvstore: data written by a newer devkit")
	// ErrLocked: another process owns the data directory.
	ErrLocked = dirlock.ErrLocked
	// ErrKeyTooLarge, ErrValueTooLarge, ErrEmptyKey: a write that breaks the
	// size bounds; nothing touched the disk.
	ErrKeyTooLarge   = errors.New("kvstore: key too large")
	ErrValueTooLarge = errors.New("kvstore: value too large")
	ErrEmptyKey      = errors.New("kvstore: empty key")
	// ErrReadOnlyView: a write inside DB.View.
	ErrReadOnlyView = errors.New("kvstore: write in a read-only view")
	// ErrBatchTooLarge: a batch whose encoding passes the format's record bound.
	ErrBatchTooLarge = errors.New("kvstore: batch too large")
	// ErrMemoryOnly: an operation that writes into the data directory
	// (Snapshot) on a store opened with Options.MemoryOnly, which has none.
	ErrMemoryOnly = errors.New("kvstore: the store is memory-only: it has no data directory to write to")
)

// RepairCommand is what a user runs to repair the data directory dir: the
// hint every corruption error carries.
func RepairCommand(dir string) string { return "devkit kv repair --data " + dir }

// CorruptionError names where the damage is. It matches ErrCorrupt. Repair
// cuts the log at File and Offset; the message says how to run it.
type CorruptionError struct {
	File   string
	Offset int64
	Err    error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("kvstore: corrupt data in %s at offset %d: %v; "+
		"to keep the records before this offset, stop the server and run: %s "+
		"(it saves a copy of each file it changes first)", e.File, e.Offset, e.Err, RepairCommand(filepath.Dir(e.File)))
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the decoder's error.
func (e *CorruptionError) Unwrap() error { return e.Err }

// UnrecoverableError says that no repair can rebuild the directory: every
// snapshot is damaged and the log no longer holds what they covered. It
// matches ErrCorrupt.
type UnrecoverableError struct {
	Dir     string
	Damaged []DamagedFile
}

func (e *UnrecoverableError) Error() string {
	names := make([]string, len(e.Damaged))
	for i, d := range e.Damaged {
		names[i] = fmt.Sprintf("%s (%s)", filepath.Base(d.Path), d.Err)
	}
	return fmt.Sprintf("kvstore: every snapshot in %s is damaged: %s; the log no longer starts at the first record, "+
		"so the keys those snapshots held exist nowhere else and repair cannot rebuild them: "+
		"restore the directory from a backup or checkpoint", e.Dir, strings.Join(names, ", "))
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *UnrecoverableError) Is(target error) bool { return target == ErrCorrupt }
