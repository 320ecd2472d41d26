package kvstore

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	pipe *commitPipeline // see commit.go; its environment is logEnv

	mu      sync.Mutex // guards closing
	closing bool

	// Owned by the current leader of the pipeline.
	seg         *wal.Writer
	lastWritten uint64
	// syncedGroups counts synced groups since Open, up to
	// preallocAfterGroups; prepAsked: the segment after seg is being (or
	// was) prepared. See prealloc.go.
	syncedGroups int
	prepAsked    bool
	prep         preparer
	// curSeg is seg for the periodic syncer, which is not a leader.
	curSeg atomic.Pointer[wal.Writer]

	failed atomic.Pointer[error] // sticky: set once, the engine is read-only after
	closed atomic.Bool

	snapMu     sync.Mutex // one snapshot at a time
	compacting atomic.Bool
	bg         sync.WaitGroup
	bgCtx      context.Context
	bgCancel   context.CancelFunc

	stats    counters
	recovery RecoveryReport // what Open found; set once

	// expiredSeen carries keys a reader found expired to the sweeper,
	// which deletes them with a logged delete.
	expiredSeen chan string
	// expiredWatchers are the OnExpired callbacks (nil: none); expiredMu
	// orders their changes.
	expiredWatchers watcherList[expiredWatcher]
	expiredMu       sync.Mutex
	// appliedWatchers are the OnApplied callbacks (nil: none), changed
	// under expiredMu.
	appliedWatchers watcherList[appliedWatcher]
}

// Open opens (creating if needed) the engine in dir, recovering its state
// from the newest valid snapshot and the log after it. With
// Options.MemoryOnly, dir must be "": the store starts empty and touches no
// file.
func Open(dir string, opts Options) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	switch {
	case o.MemoryOnly && dir != "":
		return nil, fmt.Errorf("kvstore: a memory-only store has no data directory; open it with \"\", not %q", dir)
	case o.MemoryOnly:
		return openMemoryOnly(o), nil
	case dir == "":
		return nil, errors.New("kvstore: no data directory given (Options.MemoryOnly keeps the store in memory, with no files)")
	}
	if err := o.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kvstore: create data directory: %w", err)
	}
	lock, err := dirlock.Acquire(dir)
	if err != nil {
		return nil, fmt.Errorf("kvstore: open %s: %w", dir, err)
	}
	return openLocked(dir, o, lock, diskActions{fs: o.fs, dir: dir, logger: o.Logger})
}

// openLocked opens the engine in dir, whose lock the caller holds (and
// which is released when the open fails), recovering with act.
func openLocked(dir string, o Options, lock *dirlock.Lock, act recoveryActions) (*DB, error) {
	db := &DB{dir: dir, opts: o, lock: lock, expiredSeen: make(chan string, expiredSeenQueue)}
	db.prep.db = db
	db.bgCtx, db.bgCancel = context.WithCancel(context.Background())
	if err := db.recoverForOpen(act); err != nil {
		if lerr := lock.Release(); lerr != nil {
			err = errors.Join(err, fmt.Errorf("kvstore: release lock: %w", lerr))
		}
		return nil, err
	}
	db.pipe = newCommitPipeline(logEnv{db}, db.lastWritten+1)
	if o.Sync == SyncPeriodic {
		db.every(o.SyncInterval, db.syncCurrentSegment)
	}
	db.startSweep()
	return db, nil
}

// startSweep starts the background deletion of expired keys.
func (db *DB) startSweep() {
	if db.opts.ExpirySweepInterval > 0 {
		db.every(db.opts.ExpirySweepInterval, db.sweepExpired)
	}
}

// Get returns a copy of the value of key, or ErrNotFound.
// Get never waits for disk I/O.
// A key past its TTL reads as missing.
func (db *DB) Get(key []byte) ([]byte, error) {
	e, err := db.lookup(key)
	return e.value, err
}

// ExpiresAt returns when key expires; ok is false when it has no TTL or
// does not exist (Expiry, which tells the two apart).
func (db *DB) ExpiresAt(key []byte) (t time.Time, ok bool) {
	t, ok, err := db.Expiry(key)
	return t, ok && err == nil
}

// lookup reads key's live entry, counting the hit or miss.
func (db *DB) lookup(key []byte) (entry, error) {
	return db.lookupAppend(nil, key)
}

// GetAppend appends key's value to dst and returns the result, or
// ErrNotFound: a read that allocates nothing when dst has room (for
// servers that reuse a reply buffer).
func (db *DB) GetAppend(dst, key []byte) ([]byte, error) {
	e, err := db.lookupAppend(dst, key)
	if err != nil {
		return dst, err
	}
	return e.value, nil
}

func (db *DB) lookupAppend(dst, key []byte) (entry, error) {
	if db.closed.Load() {
		return entry{}, ErrClosed
	}
	e, ok, s := db.mem.getIn(dst, key)
	if ok && e.expireAt != 0 && e.expired(db.opts.now().UnixNano()) {
		db.noteExpired(key)
		ok = false
	}
	s.countRead(ok)
	switch {
	case !ok:
		return entry{}, ErrNotFound
	case e.kind != KindString:
		return entry{}, ErrWrongType
	}
	return e, nil
}

// Version is key's version for optimistic transactions (WATCH): it changes
// with every write of key, a delete included; 0 for a key never written.
// Compare it with Tx.Version inside Update.
func (db *DB) Version(key []byte) uint64 {
	p := db.pipe
	p.mu.Lock()
	defer p.mu.Unlock()
	return (&Tx{db: db, p: p, now: db.opts.now().UnixNano()}).Version(key)
}

// Has reports whether key exists, whatever the kind of its value.
func (db *DB) Has(key []byte) (bool, error) {
	_, _, err := db.Expiry(key)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Set stores value under key, without a TTL (a TTL it had is cleared, as
// Redis SET does). It returns once the write is acknowledged under the sync
// policy. Key and value are copied.
func (db *DB) Set(key, value []byte) error {
	return db.set(key, value, time.Time{})
}

// SetWithTTL stores value under key until expireAt; from then on the key
// reads as missing and a logged delete removes it. A zero expireAt means no
// TTL, as Set.
func (db *DB) SetWithTTL(key, value []byte, expireAt time.Time) error {
	return db.set(key, value, expireAt)
}

func (db *DB) set(key, value []byte, expireAt time.Time) error {
	if err := db.checkSizes(key, value); err != nil {
		return err
	}
	at := unixNanos(expireAt)
	if err := db.commit(func(g *group, seq uint64) { g.addSet(seq, key, value, at) }); err != nil {
		return err
	}
	db.stats.sets.Add(1)
	return nil
}

// maxExpiry is the latest expiry the engine holds: the log, the snapshot and
// the memtable keep unix nanoseconds in an int64, which end in April 2262.
var maxExpiry = time.Unix(0, math.MaxInt64)

// unixNanos is t as the log stores an expiry: 0 for the zero time (no TTL),
// at least 1 otherwise, so a time before 1970 still means "expired", and at
// most maxExpiry's, so a far-future time (Redis takes millisecond deadlines
// up to 2^63-1) is held as that instant instead of wrapping into the past.
// time.UnixNano is undefined outside 1678–2262, hence the bounds first.
func unixNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.After(maxExpiry):
		return math.MaxInt64
	case t.Before(time.Unix(0, 1)):
		return 1
	}
	return t.UnixNano()
}

// ApplySet is Set (with a TTL when expireAt is not zero) under write
// options: with NoSyncWait it returns once the write has its place in the
// log order, and wait returns once it is acknowledged. It copies key and
// value once, into the log record, where a one-key Batch copies them twice.
func (db *DB) ApplySet(key, value []byte, expireAt time.Time, o WriteOptions) (wait func() error, err error) {
	if err := db.checkSizes(key, value); err != nil {
		return noWait, err
	}
	at := unixNanos(expireAt)
	g, err := db.pipe.enqueue(func(g *group, seq uint64) error {
		g.addSet(seq, key, value, at)
		return nil
	})
	if err != nil {
		return noWait, err
	}
	db.stats.sets.Add(1)
	if o.NoSyncWait {
		return g.waitFor, nil
	}
	return noWait, db.pipe.wait(g)
}

// Delete removes key. Deleting a missing key is not an error; to learn
// whether the key existed, delete it in Update (Tx.Delete).
func (db *DB) Delete(key []byte) error {
	if err := db.checkSizes(key, nil); err != nil {
		return err
	}
	if err := db.commit(func(g *group, seq uint64) { g.addDelete(seq, key) }); err != nil {
		return err
	}
	db.stats.deletes.Add(1)
	return nil
}

// FlushAll removes every key, with one log record.
func (db *DB) FlushAll() error {
	return db.commit(func(g *group, seq uint64) { g.addFlush(seq) })
}

// commit logs one record (made by encode) and returns once it is
// acknowledged under the sync policy.
func (db *DB) commit(encode func(g *group, seq uint64)) error {
	g, err := db.pipe.enqueue(func(g *group, seq uint64) error {
		encode(g, seq)
		return nil
	})
	if err != nil {
		return err
	}
	return db.pipe.wait(g)
}

// Limits are the resolved size bounds of an open engine.
type Limits struct {
	MaxKeySize   int
	MaxValueSize int
}

// Limits returns the size bounds writes are checked against.
func (db *DB) Limits() Limits {
	return Limits{MaxKeySize: db.opts.MaxKeySize, MaxValueSize: db.opts.MaxValueSize}
}

// SyncPolicy returns the engine's durability policy.
func (db *DB) SyncPolicy() SyncPolicy { return db.opts.Sync }

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
	// Kind is the kind of value: KindString, or a collection whose Value is
	// its packed encoding (read it with the Decode functions of kind.go).
	Kind Kind
	// ExpiresAt is when the key expires; zero when it has no TTL.
	ExpiresAt time.Time
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
	entries, more := db.mem.scan(o.Prefix, o.After, o.Limit, db.opts.now().UnixNano())
	page := ScanPage{Entries: entries}
	if more {
		page.Next = entries[len(entries)-1].Key
	}
	return page, nil
}

// Len is the number of keys.
func (db *DB) Len() int { return int(db.mem.keys.Load()) }

// Dir is the data directory; "" for a memory-only store.
func (db *DB) Dir() string { return db.dir }

// MemoryOnly reports whether the store was opened with Options.MemoryOnly:
// it keeps nothing on disk.
func (db *DB) MemoryOnly() bool { return db.opts.MemoryOnly }

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
	sticky := *db.failed.Load()
	if db.pipe != nil {
		db.pipe.setFailed(sticky)
	}
	return sticky
}

// every runs tick every interval in the background until Close (which
// waits for it).
func (db *DB) every(interval time.Duration, tick func()) {
	db.bg.Add(1)
	go func() {
		defer db.bg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-db.bgCtx.Done():
				return
			case <-t.C:
			}
			tick()
		}
	}()
}

// syncCurrentSegment fsyncs the current segment; with SyncPeriodic it runs
// every SyncInterval.
func (db *DB) syncCurrentSegment() {
	if db.failure() != nil {
		return
	}
	w := db.curSeg.Load()
	// A rotation syncs the old segment before closing it, so a segment
	// closed under us has nothing left to sync.
	if err := w.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		_ = db.fail(fmt.Errorf("periodic fdatasync %s: %w", w.Path(), err)) // writers see it
		return
	}
	db.stats.fsyncs.Add(1)
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

	// Write every record already enqueued, then take the log for good.
	_ = db.pipe.close() // a failure is db.failure() too
	db.closed.Store(true)
	if db.opts.MemoryOnly {
		return nil // no log, no lock
	}

	var err error
	if db.failure() == nil {
		if terr := db.seg.TrimTail(); terr != nil {
			// Harmless to leave: the next open reads the zeros as the end.
			db.opts.Logger.Warn("kvstore: close: cannot cut the log's zero tail", "file", db.seg.Path(), "err", terr)
		}
		// The records and the cut at once.
		if serr := db.seg.Sync(); serr != nil {
			err = fmt.Errorf("kvstore: close: fdatasync %s: %w", db.seg.Path(), serr)
		}
	}
	if derr := db.prep.discard(); derr != nil {
		db.opts.Logger.Warn("kvstore: close: cannot remove the prepared log segment; the next open removes it", "err", derr)
	}
	if cerr := db.seg.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("kvstore: close: %w", cerr)
	}
	if lerr := db.lock.Release(); lerr != nil && err == nil {
		err = fmt.Errorf("kvstore: close: release lock: %w", lerr)
	}
	return err
}
