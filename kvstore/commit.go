package kvstore

import (
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Group commit.
//
// Invariant: a write is acknowledged only after the batch holding its record
// has been written to the log (and, under SyncAlways, fdatasynced) and then
// applied to the memtable; batches reach the log, the disk and the memtable
// in sequence-number order, one leader at a time.
//
// The first writer to find no open batch opens one and owns it. While an
// earlier batch is being written and synced, later writers join the open
// batch; when the leader is done, the owner seals its batch and becomes the
// leader. A lone writer never waits for anyone, so batching costs it nothing.

type batch struct {
	buf   []byte     // encoded records
	muts  []mutation // what to apply, in order
	refs  []bufRef   // where each record's key and value sit in buf
	last  uint64     // sequence number of the last record
	done  chan struct{}
	err   error
	count int
}

// bufRef locates a record's key and value in the batch buffer. The memtable
// keeps them there instead of copying: buf is never written again once the
// batch is sealed, so a key string over it stays immutable.
type bufRef struct{ keyOff, keyLen, valOff, valLen int }

var batchPool = sync.Pool{New: func() any { return &batch{} }}

// commit logs one mutation and returns once it is acknowledged under the
// sync policy.
func (db *DB) commit(typ wal.RecordType, key, value []byte) error {
	db.mu.Lock()
	if db.closing {
		db.mu.Unlock()
		return ErrClosed
	}
	if err := db.failure(); err != nil {
		db.mu.Unlock()
		return err
	}
	b := db.open
	owner := b == nil
	if owner {
		b = batchPool.Get().(*batch)
		db.open = b
	} else if b.done == nil {
		b.done = make(chan struct{}) // made only once a second writer joins
	}
	seq := db.nextSeq
	db.nextSeq++
	b.add(typ, seq, key, value)

	if !owner {
		db.mu.Unlock()
		<-b.done
		return b.err
	}
	for db.leading {
		db.cond.Wait()
	}
	db.leading = true
	db.open = nil // sealed: later writers open the next batch
	db.mu.Unlock()

	err := db.writeBatch(b)

	db.mu.Lock()
	db.leading = false
	db.cond.Broadcast()
	db.mu.Unlock()
	if b.count > 1 {
		b.err = err
		close(b.done)
		return err
	}
	// Nobody else holds b: recycle it. Values alias buf, which now belongs
	// to the memtable, so buf itself is never reused.
	clear(b.muts)
	*b = batch{muts: b.muts[:0], refs: b.refs[:0]}
	batchPool.Put(b)
	return err
}

func (b *batch) add(typ wal.RecordType, seq uint64, key, value []byte) {
	b.buf = slices.Grow(b.buf, wal.EncodedSize(key, value))
	b.buf = wal.AppendRecord(b.buf, wal.Record{Type: typ, Seq: seq, Key: key, Value: value})
	end := len(b.buf)
	b.refs = append(b.refs, bufRef{keyOff: end - len(value) - len(key), keyLen: len(key), valOff: end - len(value), valLen: len(value)})
	b.muts = append(b.muts, mutation{del: typ == wal.TypeDelete})
	b.last = seq
	b.count++
}

// writeBatch runs on the leader: rotate if the segment is full, append the
// batch with one write, sync per policy, then apply it.
func (db *DB) writeBatch(b *batch) error {
	if err := db.failure(); err != nil {
		return err
	}
	if db.seg.Size() >= db.opts.SegmentSize {
		if err := db.rotate(); err != nil {
			return db.fail(fmt.Errorf("start a new log segment: %w", err))
		}
	}
	w := db.seg
	before := w.Size()
	if _, err := w.Write(b.buf); err != nil {
		if rerr := w.Rollback(before); rerr != nil {
			err = fmt.Errorf("%w (and cutting the segment back failed: %v)", err, rerr)
		}
		return db.fail(fmt.Errorf("append to %s: %w", w.Path(), err))
	}
	db.lastWritten = b.last
	db.stats.logBytes.Add(int64(len(b.buf)))
	db.stats.sinceSnapshot.Add(int64(len(b.buf)))
	if db.opts.Sync == SyncAlways {
		if err := w.Sync(); err != nil {
			return db.fail(fmt.Errorf("fdatasync %s: %w", w.Path(), err))
		}
		db.stats.fsyncs.Add(1)
		db.stats.syncedRecords.Add(uint64(b.count))
	}
	for i := range b.muts {
		r := b.refs[i]
		b.muts[i].key = unsafe.String(&b.buf[r.keyOff], r.keyLen)
		if !b.muts[i].del {
			b.muts[i].value = b.buf[r.valOff : r.valOff+r.valLen : r.valOff+r.valLen]
		}
	}
	db.mem.apply(b.muts, b.last)
	db.stats.batches.Add(1)
	db.maybeCompact()
	return nil
}

// lead makes the caller the only one touching the log until unlead: the
// current leader finishes its batch first. Batches keep gathering meanwhile.
func (db *DB) lead() {
	db.mu.Lock()
	for db.leading {
		db.cond.Wait()
	}
	db.leading = true
	db.mu.Unlock()
}

func (db *DB) unlead() {
	db.mu.Lock()
	db.leading = false
	db.cond.Broadcast()
	db.mu.Unlock()
}

// rotate closes the current segment durably and starts the next one at the
// next sequence number. Called by the leader.
func (db *DB) rotate() error {
	old := db.seg
	if err := old.Sync(); err != nil {
		return err
	}
	w, err := wal.CreateSegment(db.opts.fs, db.dir, db.lastWritten+1, true)
	if err != nil {
		return err
	}
	db.seg = w
	db.curSeg.Store(w)
	db.stats.segments.Add(1)
	return old.Close()
}
