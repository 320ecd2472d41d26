package kvstore

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Preallocated log segments.
//
// Invariant: a file under a segment name holds a valid header, then records,
// then possibly zeros to its end (the zero tail, read by recovery as the
// clean end of the log), and only the newest segment has a zero tail: a
// rotation cuts the old segment back to its last record, durably, before
// the next segment's name appears. A segment being prepared lives under a
// temp name (preparedSegmentName), which recovery deletes and never reads
// as log; it gets its header, synced, before it is renamed into place, and
// its name is the sequence number of its first record, known only then.
// Preparation never blocks a writer: when no prepared segment is ready at a
// rotation, the leader creates one to append to, as without preallocation.
//
// Why: under SyncAlways every group ends in fdatasync. Appending grows the
// file, so each fdatasync also commits the new size (on ext4 a journal
// commit); writing over zeros that are already on disk changes no metadata,
// and the same fdatasync costs about half as much. Redis's AOF appends.
//
// The preparer zero-fills SegmentSize bytes in the background (written in
// chunks, synced every few MiB) once the engine has synced
// preallocAfterGroups groups since it was opened — a strict write load, not
// a program that writes a few keys — for the segment after an appended one
// at once, for the one after a preallocated one once that is half full. A prepared segment that is ready while the current
// one still appends is switched to at the next write (an early rotation), so
// a fresh directory gets its first preallocated segment within a second of
// sustained strict writes. Only SyncAlways prepares segments; a zero tail
// found at open is written over under every policy.

// preparedSegmentName is the temp file a segment is prepared under. It ends
// in tmpSuffix, so recovery removes one left by a crash.
const preparedSegmentName = "prepared-segment.wal" + tmpSuffix

// preallocAfterGroups is how many groups the engine syncs before it
// prepares segments (Options.preallocAfter in tests).
const preallocAfterGroups = 64

// preparer zero-fills the next log segment in the background, one at a
// time.
type preparer struct {
	db    *DB
	ready atomic.Bool // a prepared file waits at path
	mu    sync.Mutex
	// running: a goroutine is preparing the file (ready is false then).
	running bool
}

func (p *preparer) path() string { return filepath.Join(p.db.dir, preparedSegmentName) }

// start begins preparing a segment unless one is being prepared or is
// ready, or the engine is closing.
func (p *preparer) start() {
	db := p.db
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running || p.ready.Load() {
		return
	}
	db.mu.Lock()
	closing := db.closing
	if !closing {
		db.bg.Add(1) // Close waits for us and cancels bgCtx
	}
	db.mu.Unlock()
	if closing {
		return
	}
	p.running = true
	go func() {
		defer db.bg.Done()
		err := wal.PrepareSegment(db.bgCtx, db.opts.fs, p.path(), db.opts.SegmentSize)
		p.mu.Lock()
		p.running = false
		p.ready.Store(err == nil)
		p.mu.Unlock()
		if err != nil && db.bgCtx.Err() == nil {
			db.opts.Logger.Warn("kvstore: cannot prepare the next log segment; the log appends instead",
				"dir", db.dir, "err", err)
		}
	}()
}

// take hands over the prepared file's path, or "" when none is ready.
func (p *preparer) take() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ready.Load() {
		return ""
	}
	p.ready.Store(false)
	return p.path()
}

// discard removes a prepared file nobody will use (Close, after every
// background goroutine stopped).
func (p *preparer) discard() error {
	path := p.take()
	if path == "" {
		return nil
	}
	if err := p.db.opts.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// newSegment starts the segment for firstSeq: the prepared one when ready,
// else a fresh one to append to. Called by the leader.
func (db *DB) newSegment(firstSeq uint64) (*wal.Writer, error) {
	if tmp := db.prep.take(); tmp != "" {
		w, err := wal.InstallPrepared(db.opts.fs, db.dir, tmp, firstSeq)
		if err == nil {
			db.stats.preallocated.Add(1)
			return w, nil
		}
		db.opts.Logger.Warn("kvstore: cannot install the prepared log segment; appending to a new one",
			"dir", db.dir, "err", err)
		if rerr := db.opts.fs.Remove(tmp); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			db.opts.Logger.Warn("kvstore: cannot remove the prepared log segment; the next open removes it",
				"file", tmp, "err", rerr)
		}
	}
	return wal.CreateSegment(db.opts.fs, db.dir, firstSeq, true)
}

// notePreallocation counts a synced group and asks for the next segment to
// be prepared when it is time. Called by the leader.
func (db *DB) notePreallocation() {
	if db.opts.noPrealloc {
		return
	}
	after := db.opts.preallocAfter
	if db.syncedGroups < after {
		db.syncedGroups++
	}
	if db.prepAsked || db.syncedGroups < after {
		return
	}
	if db.seg.Preallocated() && db.seg.Size() < db.opts.SegmentSize/2 {
		return
	}
	db.prepAsked = true
	db.prep.start()
}

// rotateEarly reports whether the leader should move to a prepared segment
// now although the current one is not full: it still appends, holds records
// (a new segment named after the next record must not replace an empty
// one) and a prepared segment is ready.
func (db *DB) rotateEarly() bool {
	return !db.seg.Preallocated() && db.seg.HasRecords() && db.prep.ready.Load()
}
