package kvstore

import (
	"fmt"
	"slices"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// logEnv is the commit pipeline's environment in the engine: the log
// segments, the sync policy and the memtable. Its methods run on the
// pipeline's leader, one group at a time, in log order.
//
// Invariant: apply runs only after write (and, under SyncAlways, sync)
// succeeded for the same group; a failed write or sync makes the engine
// read-only, so no later group reaches the log.
type logEnv struct{ db *DB }

// write rotates when the segment is full and appends the group with one write.
func (e logEnv) write(g *group) error {
	db := e.db
	if err := db.failure(); err != nil {
		return err
	}
	if db.seg.Size() >= db.opts.SegmentSize || db.rotateEarly() {
		if err := db.rotate(); err != nil {
			return db.fail(fmt.Errorf("start a new log segment: %w", err))
		}
	}
	w := db.seg
	before := w.Size()
	if _, err := w.Write(g.buf); err != nil {
		if rerr := w.Rollback(before); rerr != nil {
			err = fmt.Errorf("%w (and cutting the segment back failed: %w)", err, rerr)
		}
		return db.fail(fmt.Errorf("append to %s: %w", w.Path(), err))
	}
	db.lastWritten = g.last
	db.stats.logBytes.Add(int64(len(g.buf)))
	db.stats.sinceSnapshot.Add(int64(len(g.buf)))
	return nil
}

// sync fdatasyncs the segment under SyncAlways; the other policies
// acknowledge once the write is handed to the OS.
func (e logEnv) sync(g *group) error {
	db := e.db
	if db.opts.Sync != SyncAlways {
		return nil
	}
	if err := db.seg.Sync(); err != nil {
		return db.fail(fmt.Errorf("fdatasync %s: %w", db.seg.Path(), err))
	}
	db.stats.fsyncs.Add(1)
	db.stats.syncedRecords.Add(uint64(g.count))
	db.notePreallocation()
	return nil
}

// apply points the mutations at the sealed group buffer and applies them
// (the memtable copies keys and values into its arena).
func (e logEnv) apply(g *group) {
	for i := range g.muts {
		r := g.refs[i]
		mu := &g.muts[i]
		if mu.flush {
			continue
		}
		mu.key = g.buf[r.keyOff : r.keyOff+r.keyLen]
		if !mu.del && r.valLen >= 0 {
			mu.value = g.buf[r.valOff : r.valOff+r.valLen]
		}
	}
	e.db.mem.apply(g.muts, g.last)
	e.db.stats.batches.Add(1) // commit groups
	if ws := e.db.appliedWatchers.load(); ws != nil {
		e.db.tellApplied(ws, g.muts)
	}
}

// afterCommit starts a compaction when the log has grown enough.
func (e logEnv) afterCommit() { e.db.maybeCompact() }

// addSet encodes a set (with a TTL when expireAt is not 0).
func (g *group) addSet(seq uint64, key, value []byte, expireAt int64) {
	typ, extra := wal.TypeSet, 0
	if expireAt != 0 {
		typ, extra = wal.TypeSetTTL, 8
	}
	g.buf = slices.Grow(g.buf, wal.EncodedSize(key, value)+extra)
	g.buf = wal.AppendRecord(g.buf, wal.Record{Type: typ, Seq: seq, Key: key, Value: value, ExpireAt: expireAt})
	end := len(g.buf)
	g.ref(mutation{expireAt: expireAt, seq: seq}, end-len(value)-extra-len(key), len(key), end-len(value), len(value))
}

// addDelete encodes a delete.
func (g *group) addDelete(seq uint64, key []byte) {
	g.buf = slices.Grow(g.buf, wal.EncodedSize(key, nil))
	g.buf = wal.AppendRecord(g.buf, wal.Record{Type: wal.TypeDelete, Seq: seq, Key: key})
	end := len(g.buf)
	g.ref(mutation{del: true, seq: seq}, end-len(key), len(key), end, 0)
}

// addFlush encodes the removal of every key.
func (g *group) addFlush(seq uint64) {
	g.buf = wal.AppendRecord(g.buf, wal.Record{Type: wal.TypeFlush, Seq: seq})
	g.ref(mutation{flush: true, seq: seq}, 0, 0, 0, 0)
}

// addBatch encodes a batch as one record: after a crash all of it is there
// or none of it. writes (nil for a Batch) say what the memtable gets of a
// collection's op: its whole value, held by the mutation itself (valLen -1).
func (g *group) addBatch(seq uint64, ops []wal.Op, writes []txWrite) {
	g.buf = wal.AppendBatchRecord(g.buf, seq, ops, func(i, keyOff, keyLen, valOff, valLen int) {
		op := &ops[i]
		mu := mutation{del: op.Type == wal.TypeDelete, expireAt: op.ExpireAt, seq: seq}
		if writes != nil && writes[i].set {
			w := writes[i]
			mu.kind, mu.value, mu.big, mu.expireAt = w.kind, w.value, w.big, w.expireAt
			valOff, valLen = 0, -1
		}
		g.ref(mu, keyOff, keyLen, valOff, valLen)
	})
}

func (g *group) ref(mu mutation, keyOff, keyLen, valOff, valLen int) {
	g.refs = append(g.refs, bufRef{keyOff: keyOff, keyLen: keyLen, valOff: valOff, valLen: valLen})
	g.muts = append(g.muts, mu)
}

// rotate closes the current segment durably, cut back to its last record,
// and starts the next one at the next sequence number: a prepared one when
// ready (see prealloc.go). Called by the leader.
func (db *DB) rotate() error {
	old := db.seg
	if err := old.TrimTail(); err != nil {
		return err
	}
	if err := old.Sync(); err != nil { // the records and the cut at once
		return err
	}
	w, err := db.newSegment(db.lastWritten + 1)
	if err != nil {
		return err
	}
	db.prepAsked = false
	db.seg = w
	db.curSeg.Store(w)
	db.stats.segments.Add(1)
	return old.Close()
}
