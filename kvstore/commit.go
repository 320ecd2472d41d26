package kvstore

import (
	"fmt"
	"slices"
	"sync"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Group commit.
//
// Invariant: a write is acknowledged only after the commit group holding its
// record has been written to the log (and, under SyncAlways, fdatasynced) and
// then applied to the memtable; groups reach the log, the disk and the
// memtable in sequence-number order, one leader at a time.
//
// The first writer to find no open group opens one and owns it. While an
// earlier group is being written and synced, later writers join the open
// group; when the leader is done, the owner seals its group and becomes the
// leader. A lone writer never waits for anyone, so grouping costs it nothing.

type group struct {
	buf   []byte     // encoded records
	muts  []mutation // what to apply, in order
	refs  []bufRef   // where each mutation's key and value sit in buf
	last  uint64     // sequence number of the last record
	done  chan struct{}
	err   error
	count int  // writers in the group
	taken bool // sealed by a leader; guarded by db.mu
}

// bufRef locates a mutation's key and value in the group buffer. The
// memtable keeps values there instead of copying them (buf is never written
// again once the group is sealed); keys are copied into compact strings,
// which keeps the hash maps' key comparisons cache-friendly and lets a
// buffer go once its values are overwritten.
type bufRef struct{ keyOff, keyLen, valOff, valLen int }

var groupPool = sync.Pool{New: func() any { return &group{} }}

// commit logs one record (made by encode, given the group and the record's
// sequence number) and returns once it is acknowledged under the sync policy.
func (db *DB) commit(encode func(g *group, seq uint64)) error {
	db.mu.Lock()
	if db.closing {
		db.mu.Unlock()
		return ErrClosed
	}
	if err := db.failure(); err != nil {
		db.mu.Unlock()
		return err
	}
	g := db.open
	owner := g == nil
	if owner {
		g = groupPool.Get().(*group)
		db.open = g
	} else if g.done == nil {
		g.done = make(chan struct{}) // made only once a second writer joins
	}
	seq := db.nextSeq
	db.nextSeq++
	encode(g, seq)
	g.last = seq
	g.count++

	if !owner {
		db.mu.Unlock()
		<-g.done
		return g.err
	}
	for db.leading && !g.taken {
		db.cond.Wait()
	}
	if g.taken { // the leader wrote our group along with its own
		db.mu.Unlock()
		<-g.done
		return g.err
	}
	db.leading = true
	var err error
	for round := 0; ; round++ {
		gerr := db.lead1(g, round == 0)
		if round == 0 {
			err = gerr
		}
		// Go on with the group that gathered meanwhile, while this goroutine
		// is running anyway: waking its owner to do it would leave the disk
		// idle for a scheduling delay. Bounded, so that this writer's own
		// wait stays short and lead() callers get their turn.
		next := db.open
		if next == nil || gerr != nil || round == maxExtraGroups {
			break
		}
		g = next
	}
	db.leading = false
	db.cond.Broadcast()
	db.mu.Unlock()
	return err
}

// maxExtraGroups is how many groups after its own a leader writes.
const maxExtraGroups = 2

// lead1 seals g, writes it and tells its writers; own says g is the
// leader's own group. Called and returns with db.mu held, by the leader.
func (db *DB) lead1(g *group, own bool) error {
	g.taken = true
	shared := g.count > 1 || !own // someone else waits on done
	if shared && g.done == nil {
		g.done = make(chan struct{})
	}
	if db.open == g {
		db.open = nil // sealed: later writers open the next group
	}
	db.mu.Unlock()
	err := db.writeGroup(g)
	if shared {
		g.err = err
		close(g.done)
		db.mu.Lock()
		db.cond.Broadcast() // wakes the owner of a taken group
		return err
	}
	// A lone writer's own group: nobody else holds g, recycle it. Values
	// alias buf, which now belongs to the memtable, so buf is never reused.
	clear(g.muts)
	*g = group{muts: g.muts[:0], refs: g.refs[:0]}
	groupPool.Put(g)
	db.mu.Lock()
	return err
}

// addRecord encodes a single set or delete.
func (g *group) addRecord(typ wal.RecordType, seq uint64, key, value []byte) {
	g.buf = slices.Grow(g.buf, wal.EncodedSize(key, value))
	g.buf = wal.AppendRecord(g.buf, wal.Record{Type: typ, Seq: seq, Key: key, Value: value})
	end := len(g.buf)
	g.ref(typ == wal.TypeDelete, end-len(value)-len(key), len(key), end-len(value), len(value))
}

// addBatch encodes a batch as one record: after a crash all of it is there
// or none of it.
func (g *group) addBatch(seq uint64, ops []wal.Op) {
	g.buf = wal.AppendBatchRecord(g.buf, seq, ops, func(i, keyOff, keyLen, valOff, valLen int) {
		g.ref(ops[i].Type == wal.TypeDelete, keyOff, keyLen, valOff, valLen)
	})
}

func (g *group) ref(del bool, keyOff, keyLen, valOff, valLen int) {
	g.refs = append(g.refs, bufRef{keyOff: keyOff, keyLen: keyLen, valOff: valOff, valLen: valLen})
	g.muts = append(g.muts, mutation{del: del})
}

// writeGroup runs on the leader: rotate if the segment is full, append the
// batch with one write, sync per policy, then apply it.
func (db *DB) writeGroup(g *group) error {
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
	if _, err := w.Write(g.buf); err != nil {
		if rerr := w.Rollback(before); rerr != nil {
			err = fmt.Errorf("%w (and cutting the segment back failed: %w)", err, rerr)
		}
		return db.fail(fmt.Errorf("append to %s: %w", w.Path(), err))
	}
	db.lastWritten = g.last
	db.stats.logBytes.Add(int64(len(g.buf)))
	db.stats.sinceSnapshot.Add(int64(len(g.buf)))
	if db.opts.Sync == SyncAlways {
		if err := w.Sync(); err != nil {
			return db.fail(fmt.Errorf("fdatasync %s: %w", w.Path(), err))
		}
		db.stats.fsyncs.Add(1)
		db.stats.syncedRecords.Add(uint64(g.count))
	}
	for i := range g.muts {
		r := g.refs[i]
		g.muts[i].key = string(g.buf[r.keyOff : r.keyOff+r.keyLen])
		if !g.muts[i].del {
			g.muts[i].value = g.buf[r.valOff : r.valOff+r.valLen : r.valOff+r.valLen]
		}
	}
	db.mem.apply(g.muts, g.last)
	db.stats.batches.Add(1) // commit groups
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
