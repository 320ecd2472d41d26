// Package backend is what the KV servers (HTTP, TCP JSON, RESP) need from the
// engine, and the one mapping from engine errors to the codes every transport
// reports, so that all front doors name a failure the same way.
package backend

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/devkit-go/devkit/kvstore"
)

// Store is the part of *kvstore.DB the servers use. *kvstore.DB implements
// it; tests wrap a real engine in it to inject faults.
type Store interface {
	Get(key []byte) ([]byte, error)
	// GetAppend appends key's value to dst (no allocation when dst has room).
	GetAppend(dst, key []byte) ([]byte, error)
	Has(key []byte) (bool, error)
	// Kind is the kind of value key holds (KindNone when it is missing).
	Kind(key []byte) (kvstore.Kind, error)
	Set(key, value []byte) error
	Delete(key []byte) error
	// Write applies a batch atomically: after a crash all of it or none.
	Write(b *kvstore.Batch) error
	// Apply is Write that, with NoSyncWait, returns once the batch has its
	// place in the log and leaves the wait for durability to the caller.
	Apply(b *kvstore.Batch, o kvstore.WriteOptions) (wait func() error, err error)
	// Update runs an atomic read-modify-write (see kvstore.DB.Update).
	Update(fn func(tx *kvstore.Tx) error) error
	UpdateWith(o kvstore.WriteOptions, fn func(tx *kvstore.Tx) error) (wait func() error, err error)
	// View runs reads on what is acknowledged, without the write lock or
	// the disk (see kvstore.DB.View).
	View(fn func(tx *kvstore.Tx) error) error
	// Version is a key's version for WATCH.
	Version(key []byte) uint64
	// Expiry reads existence and expiry in one lookup (TTL, PTTL):
	// ErrNotFound for a missing key, hasTTL false for one without.
	Expiry(key []byte) (at time.Time, hasTTL bool, err error)
	// FlushAll deletes every key with one record.
	FlushAll() error
	// Checkpoint writes a consistent copy of the store into dst.
	Checkpoint(ctx context.Context, dst string) (kvstore.SnapshotInfo, error)
	// StreamCheckpoint writes a consistent copy of the store to w.
	StreamCheckpoint(ctx context.Context, w io.Writer) (kvstore.SnapshotInfo, error)
	Limits() kvstore.Limits
	// Dir is the data directory.
	Dir() string
	SyncPolicy() kvstore.SyncPolicy
	// MemoryOnly: the store keeps nothing on disk (no Dir).
	MemoryOnly() bool
	Scan(opts kvstore.ScanOptions) (kvstore.ScanPage, error)
	// ScanCursor is a stateless scan in the engine's scan order (SCAN).
	ScanCursor(cursor uint64, count int) (keys [][]byte, next uint64, err error)
	Len() int
	Stats() kvstore.Stats
	// Snapshot writes a snapshot now and compacts the log (SAVE).
	Snapshot(ctx context.Context) (kvstore.SnapshotInfo, error)
}

var _ Store = (*kvstore.DB)(nil)

// Error codes, stable for clients: they appear in HTTP and TCP JSON error
// bodies and in RESP error replies.
const (
	CodeNotFound      = "not_found"
	CodeWrongType     = "wrong_type"
	CodeEmptyKey      = "empty_key"
	CodeKeyTooLarge   = "key_too_large"
	CodeValueTooLarge = "value_too_large"
	CodeReadOnly      = "read_only"
	CodeClosed        = "closed"
	CodeBadRequest    = "bad_request"
	CodeInternal      = "internal"
)

// Code names an engine error for clients.
func Code(err error) string {
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		return CodeNotFound
	case errors.Is(err, kvstore.ErrWrongType):
		return CodeWrongType
	case errors.Is(err, kvstore.ErrEmptyKey):
		return CodeEmptyKey
	case errors.Is(err, kvstore.ErrKeyTooLarge):
		return CodeKeyTooLarge
	case errors.Is(err, kvstore.ErrValueTooLarge):
		return CodeValueTooLarge
	case errors.Is(err, kvstore.ErrReadOnly):
		return CodeReadOnly
	case errors.Is(err, kvstore.ErrClosed):
		return CodeClosed
	default:
		return CodeInternal
	}
}

// IsClientError reports whether err is the client's fault (a bad key or
// value) rather than the server's.
func IsClientError(err error) bool {
	switch Code(err) {
	case CodeEmptyKey, CodeKeyTooLarge, CodeValueTooLarge, CodeBadRequest, CodeWrongType:
		return true
	}
	return false
}
