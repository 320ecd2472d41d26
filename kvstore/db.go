package kvstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/dirlock"
	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// DB is an open engine. It is safe for concurrent use.
type DB struct {
	dir  string
	opts Options
	lock *dirlock.Lock
	mem  *memtable

	// The commit pipeline (see commit.go); mu guards the fields below it.
	mu      sync.Mutex
	cond    *sync.Cond
	open    *group
	leading bool
	closing bool
	nextSeq uint64

	// Owned by the current leader.
	seg         *wal.Writer
	lastWritten uint64
	// curSeg is seg for the periodic syncer, which is not a leader.
	curSeg atomic.Pointer[wal.Writer]

	failed atomic.Pointer[error] // sticky: set once, the engine is read-only after
	closed atomic.Bool

	snapMu     sync.Mutex // one snapshot at a time
	compacting atomic.Bool
	bg         sync.WaitGroup
	bgCtx      context.Context
	bgCancel   context.CancelFunc

	stats counters

	// Set only while Open or Verify recovers.
	verifyOnly bool
	progress   recoveryProgress
}

// Open opens (creating if needed) the engine in dir, recovering its state
// from the newest valid snapshot and the log after it.
func Open(dir string, opts Options) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := o.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kvstore: create data directory: %w", err)
	}
	lock, err := dirlock.Acquire(dir)
	if err != nil {
		return nil, fmt.Errorf("kvstore: open %s: %w", dir, err)
	}
	db := &DB{dir: dir, opts: o, lock: lock}
	db.cond = sync.NewCond(&db.mu)
	db.bgCtx, db.bgCancel = context.WithCancel(context.Background())
	if err := db.recover(); err != nil {
		if lerr := lock.Release(); lerr != nil {
			err = errors.Join(err, fmt.Errorf("kvstore: release lock: %w", lerr))
		}
		return nil, err
	}
	if o.Sync == SyncPeriodic {
		db.bg.Add(1)
		go db.syncPeriodically()
	}
	return db, nil
}

// Get returns the value of key, or ErrNotFound. The returned slice is shared
// with the engine and must not be modified; it stays valid after later writes.
// Get never waits for disk I/O.
func (db *DB) Get(key []byte) ([]byte, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	v, ok := db.mem.get(key)
	if !ok {
		return nil, ErrNotFound
	}
	return v, nil
}

// Has reports whether key exists.
func (db *DB) Has(key []byte) (bool, error) {
	_, err := db.Get(key)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Set stores value under key. It returns once the write is acknowledged
// under the sync policy. Key and value are copied.
func (db *DB) Set(key, value []byte) error {
	if err := db.checkSizes(key, value); err != nil {
		return err
	}
	if err := db.commit(func(g *group, seq uint64) { g.addRecord(wal.TypeSet, seq, key, value) }); err != nil {
		return err
	}
	db.stats.sets.Add(1)
	return nil
}

// Delete removes key. Deleting a missing key is not an error.
func (db *DB) Delete(key []byte) error {
	if err := db.checkSizes(key, nil); err != nil {
		return err
	}
	if err := db.commit(func(g *group, seq uint64) { g.addRecord(wal.TypeDelete, seq, key, nil) }); err != nil {
		return err
	}
	db.stats.deletes.Add(1)
	return nil
}

func (db *DB) checkSizes(key, value []byte) error {
	switch {
	case len(key) == 0:
		return ErrEmptyKey
	case len(key) > db.opts.MaxKeySize:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrKeyTooLarge, len(key), db.opts.MaxKeySize)
	case len(value) > db.opts.MaxValueSize:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrValueTooLarge, len(value), db.opts.MaxValueSize)
	}
	return nil
}

// Entry is a key and its value, as returned by Scan. Value is shared with
// the engine and must not be modified.
type Entry struct {
	Key   []byte
	Value []byte
}

// DefaultScanLimit is the page size of a Scan whose Limit is zero.
const DefaultScanLimit = 1000

// ScanOptions select a page of keys.
type ScanOptions struct {
	Prefix []byte // only keys that start with Prefix
	After  []byte // only keys greater than After: the cursor of the previous page
	Limit  int    // at most Limit entries; DefaultScanLimit when zero
}

// ScanPage is one page of a scan.
type ScanPage struct {
	Entries []Entry
	// Next is the cursor for the next page (pass it as After), or nil when
	// this page is the last.
	Next []byte
}

// Scan returns keys in byte order, filtered by prefix, starting after a cursor.
func (db *DB) Scan(o ScanOptions) (ScanPage, error) {
	if db.closed.Load() {
		return ScanPage{}, ErrClosed
	}
	if o.Limit < 0 {
		return ScanPage{}, fmt.Errorf("kvstore: negative scan limit %d", o.Limit)
	}
	if o.Limit == 0 {
		o.Limit = DefaultScanLimit
	}
	entries, more := db.mem.scan(o.Prefix, o.After, o.Limit)
	page := ScanPage{Entries: entries}
	if more {
		page.Next = entries[len(entries)-1].Key
	}
	return page, nil
}

// Len is the number of keys.
func (db *DB) Len() int { return int(db.mem.keys.Load()) }

// Dir is the data directory.
func (db *DB) Dir() string { return db.dir }

// failure is the sticky error that made the engine read-only, or nil.
func (db *DB) failure() error {
	if p := db.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fail makes the engine read-only for good because of cause, and returns the
// error the failing writer gets: it matches ErrReadOnly and cause.
func (db *DB) fail(cause error) error {
	err := fmt.Errorf("%w: %w", ErrReadOnly, cause)
	if db.failed.CompareAndSwap(nil, &err) {
		db.opts.Logger.Error("kvstore: write failed, the engine is read-only until reopened", "dir", db.dir, "err", cause)
	}
	return *db.failed.Load()
}

// syncPeriodically fsyncs the current segment every SyncInterval.
func (db *DB) syncPeriodically() {
	defer db.bg.Done()
	t := time.NewTicker(db.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-db.bgCtx.Done():
			return
		case <-t.C:
		}
		if db.failure() != nil {
			continue
		}
		w := db.curSeg.Load()
		// A rotation syncs the old segment before closing it, so a segment
		// closed under us has nothing left to sync.
		if err := w.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
			_ = db.fail(fmt.Errorf("periodic fdatasync %s: %w", w.Path(), err)) // writers see it
			continue
		}
		db.stats.fsyncs.Add(1)
	}
}

// Close waits for in-flight writes, stops background work (an unfinished
// snapshot is abandoned; the log still holds everything), syncs the log and
// releases the directory. Further calls return ErrClosed.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closing {
		db.mu.Unlock()
		return ErrClosed
	}
	db.closing = true
	db.mu.Unlock()

	db.bgCancel()
	db.bg.Wait()

	// Let every writer already admitted finish, then take the log for good.
	db.mu.Lock()
	for db.leading || db.open != nil {
		db.cond.Wait()
	}
	db.leading = true
	db.mu.Unlock()
	db.closed.Store(true)

	var err error
	if db.failure() == nil {
		if serr := db.seg.Sync(); serr != nil {
			err = fmt.Errorf("kvstore: close: fdatasync %s: %w", db.seg.Path(), serr)
		}
	}
	if cerr := db.seg.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("kvstore: close: %w", cerr)
	}
	if lerr := db.lock.Release(); lerr != nil && err == nil {
		err = fmt.Errorf("kvstore: close: release lock: %w", lerr)
	}
	return err
}
