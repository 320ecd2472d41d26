package kvstore

import (
	"errors"
	"fmt"

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
	// ErrLocked: another process owns the data directory.
	ErrLocked = dirlock.ErrLocked
	// ErrKeyTooLarge, ErrValueTooLarge, ErrEmptyKey: a write that breaks the
	// size bounds; nothing touched the disk.
	ErrKeyTooLarge   = errors.New("kvstore: key too large")
	ErrValueTooLarge = errors.New("kvstore: value too large")
	ErrEmptyKey      = errors.New("kvstore: empty key")
	// ErrBatchTooLarge: a batch whose encoding passes the format's record bound.
	ErrBatchTooLarge = errors.New("kvstore: batch too large")
)

// CorruptionError names where the damage is. It matches ErrCorrupt.
type CorruptionError struct {
	File   string
	Offset int64
	Err    error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("kvstore: corrupt data in %s at offset %d: %v; "+
		"copy the directory aside, then open with RecoverTruncate to keep the records before this offset", e.File, e.Offset, e.Err)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the decoder's error.
func (e *CorruptionError) Unwrap() error { return e.Err }
