package kvstore

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Transactions.
//
// Invariant: fn runs under the commit pipeline's lock, where every write
// gets its place in the log, so no write is ordered between a transaction's
// reads and its writes; it reads the memtable under the writes
// enqueued before it but not yet applied, so it sees every write ordered
// before it without waiting for the disk; its writes are one batch record,
// acknowledged (like every write) only after its group is synced, and
// groups after a failed one fail too, so a transaction that read an
// unacknowledged write is never acknowledged without it.

// Tx is a read-modify-write transaction: see DB.Update. It is only valid
// inside the function Update runs.
type Tx struct {
	db  *DB
	p   *commitPipeline
	seq uint64 // the sequence number the transaction's record gets
	now int64

	ops []wal.Op
	// writes[i] is what the memtable gets of ops[i] when that is not the
	// op itself (a collection's delta: the whole new value).
	writes []txWrite
	own    map[string]int // key -> index in ops of the transaction's last write of it
	block  []byte         // where the ops' keys and values are copied (copyIn)
	sets   int
	dels   int
	// readOnly: a View, which reads the memtable alone and refuses writes.
	readOnly bool
	// group is the id of the open group the transaction's record joins
	// (0: a View); big collections it owns are changed in place (bigColl),
	// journalling in undo the inverse of each change, and inPlace are the
	// collections being so changed, not yet saved.
	group   uint64
	undo    []bigUndo
	inPlace []*coll
}

// Update runs fn atomically with respect to every other write (Set, Delete,
// Write, Apply, Update, FlushAll and the expiry sweep): no write is ordered
// between fn's reads and its writes. fn's writes are committed as one batch
// record, sharing its fsync with the other writers of its group; Update
// returns once they are acknowledged. When fn returns an error nothing is
// written and Update returns that error. fn must be fast and must not block
// or call the DB: every writer waits while it runs. A transaction without
// writes still waits until what it read is acknowledged.
func (db *DB) Update(fn func(tx *Tx) error) error {
	_, err := db.UpdateWith(WriteOptions{}, fn)
	return err
}

// View runs fn on a read-only view of the keyspace: what the reads in fn
// see is what Get sees, the writes acknowledged so far (applied to the
// memtable). It takes no lock of the commit pipeline and never waits for
// a write or the disk, so reads scale with the cores and are never held
// behind an fsync. Each key is read as of the moment fn reads it: a view
// of several keys is not one point in time (use Update for that). A write
// in fn fails with ErrReadOnlyView.
func (db *DB) View(fn func(tx *Tx) error) error {
	if db.closed.Load() {
		return ErrClosed
	}
	return fn(&Tx{db: db, now: db.opts.now().UnixNano(), readOnly: true})
}

// errNoWrites stops enqueue for a transaction that wrote nothing.
var errNoWrites = errors.New("kvstore: transaction wrote nothing")

// UpdateWith is Update with write options: under NoSyncWait it returns once
// the transaction has its place in the log order, and wait returns once it
// is acknowledged.
func (db *DB) UpdateWith(o WriteOptions, fn func(tx *Tx) error) (wait func() error, err error) {
	var readFrom *group // what a transaction without writes waits for
	var sets, dels int
	tx := getTx()
	defer putTx(tx)
	g, err := db.pipe.enqueue(func(g *group, seq uint64) (err error) {
		tx.db, tx.p, tx.seq, tx.now, tx.group = db, db.pipe, seq, db.opts.now().UnixNano(), g.id
		defer func() { tx.finish(err == nil || errors.Is(err, errNoWrites)) }()
		if err := fn(tx); err != nil {
			return err
		}
		if len(tx.ops) == 0 {
			readFrom = db.pipe.lastPending()
			return errNoWrites
		}
		if n, limit := wal.BatchPayloadSize(tx.ops), wal.MaxPayload(MaxKeySizeLimit, MaxValueSizeLimit); n > limit {
			return fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrBatchTooLarge, n, limit)
		}
		g.addBatch(seq, tx.ops, tx.writes)
		sets, dels = tx.sets, tx.dels
		return nil
	})
	if errors.Is(err, errNoWrites) {
		g, err = readFrom, nil
	}
	if err != nil {
		return noWait, err
	}
	if g == nil {
		return noWait, nil
	}
	db.stats.sets.Add(uint64(sets))
	db.stats.deletes.Add(uint64(dels))
	if o.NoSyncWait {
		return g.waitFor, nil
	}
	return noWait, db.pipe.wait(g)
}

// finish ends the changes in place of a transaction: kept when it commits
// (but those of a collection never saved), else undone, newest first.
func (tx *Tx) finish(commit bool) {
	for _, c := range tx.inPlace {
		if commit {
			tx.undoFrom(c.mark, c.owned)
		}
		c.owned.journal, c.owned.owner = nil, tx.group
	}
	if !commit {
		for i := len(tx.undo) - 1; i >= 0; i-- {
			tx.undo[i].undo()
			tx.undo[i].b.owner = tx.group
		}
	}
	clear(tx.undo)
	clear(tx.inPlace)
	tx.undo, tx.inPlace = tx.undo[:0], tx.inPlace[:0]
}

// undoFrom undoes b's changes journalled from mark on, newest first, and
// drops them from the journal.
func (tx *Tx) undoFrom(mark int, b *bigColl) {
	b.journal = nil
	for i := len(tx.undo) - 1; i >= mark; i-- {
		if tx.undo[i].b == b {
			tx.undo[i].undo()
		}
	}
	kept := slices.DeleteFunc(tx.undo[mark:], func(u bigUndo) bool { return u.b == b })
	tx.undo = tx.undo[:mark+len(kept)]
}

// txWrite is what the memtable gets of an op of a collection (set): the
// kind, the whole packed value and the expiry, where the op logs a delta
// or an expiry alone.
type txWrite struct {
	kind     Kind
	value    []byte
	big      *bigColl // a big collection (value nil), published: never changed
	expireAt int64
	set      bool
}

// view is a key's state as the transaction sees it.
type view struct {
	kind     Kind
	value    []byte
	big      *bigColl // a big collection (value nil): read it, clone it to change it
	expireAt int64
	seq      uint64
	ok       bool // exists (possibly expired)
}

func (v view) live(now int64) bool { return v.ok && (v.expireAt == 0 || v.expireAt > now) }

// lookup reads key through the transaction's own writes, the pending ones and
// the memtable, expired entries included. The value may alias a group
// buffer: valid only while fn runs (no group finishes meanwhile).
func (tx *Tx) lookup(key []byte) view {
	if i, ok := tx.own[string(key)]; ok {
		if w := tx.writes[i]; w.set {
			return view{kind: w.kind, value: w.value, big: w.big, expireAt: w.expireAt, seq: tx.seq, ok: true}
		}
		op := tx.ops[i]
		return view{value: op.Value, expireAt: op.ExpireAt, seq: tx.seq, ok: op.Type != wal.TypeDelete}
	}
	if tx.readOnly {
		// nothing pending: a view reads what is applied
	} else if w, ok := tx.p.pendingWrite(key); ok {
		return view{kind: w.kind, value: w.value, big: w.big, expireAt: w.expireAt, seq: w.seq, ok: !w.del}
	}
	e, ok := tx.db.mem.get(nil, key)
	if !ok {
		return view{seq: tx.db.mem.version(key)}
	}
	return view{kind: e.kind, value: e.value, big: e.big, expireAt: e.expireAt, seq: e.seq, ok: true}
}

// Get returns a copy of key's value as of the transaction, or ErrNotFound
// when it is missing or expired, or ErrWrongType when it holds a collection.
func (tx *Tx) Get(key []byte) ([]byte, error) {
	v := tx.lookup(key)
	switch {
	case !v.live(tx.now):
		return nil, ErrNotFound
	case v.kind != KindString:
		return nil, ErrWrongType
	}
	return append([]byte{}, v.value...), nil
}

// ExpiresAt returns when key expires; ok is false when it has no TTL or is
// missing (Expiry, which tells the two apart).
func (tx *Tx) ExpiresAt(key []byte) (t time.Time, ok bool) {
	t, ok, err := tx.Expiry(key)
	return t, ok && err == nil
}

// Version is key's version as of the transaction (see DB.Version); a key
// the transaction wrote has the transaction's own version.
//
// A live key's version is its last write's sequence number (even); every
// other state — missing, deleted, expired, flushed — shares one odd
// version, the newest write among the records deleted from the key's
// bucket (and the expired record's own, which deleting it will add): so
// deleting or flushing a live key, or a write of the key since, changes
// it, while a flush or an expiry sweep that finds the key already gone
// does not, as Redis's WATCH ignores a flush of a key that does not exist.
func (tx *Tx) Version(key []byte) uint64 {
	v := tx.lookup(key)
	if v.live(tx.now) {
		return v.seq << 1
	}
	d := tx.db.mem.deletedVersion(key)
	if v.ok {
		d = max(d, v.seq) // an expired record
	} else if e, ok := tx.db.mem.meta(key); ok {
		d = max(d, e.seq) // a record a pending delete or flush removes
	}
	return d<<1 | 1
}

// Now is the time the transaction judges expiry by.
func (tx *Tx) Now() time.Time { return time.Unix(0, tx.now) }

// Set stores value under key and clears its TTL, as Redis SET does.
func (tx *Tx) Set(key, value []byte) error { return tx.put(wal.TypeSet, key, value, 0) }

// SetWithTTL stores value under key until expireAt (no TTL when zero).
func (tx *Tx) SetWithTTL(key, value []byte, expireAt time.Time) error {
	at := unixNanos(expireAt)
	if at == 0 {
		return tx.Set(key, value)
	}
	return tx.put(wal.TypeSetTTL, key, value, at)
}

// SetKeepTTL stores value under key and keeps the TTL the key has.
func (tx *Tx) SetKeepTTL(key, value []byte) error {
	v := tx.lookup(key)
	if v.live(tx.now) && v.expireAt != 0 {
		return tx.put(wal.TypeSetTTL, key, value, v.expireAt)
	}
	return tx.Set(key, value)
}

// Delete removes key and reports whether it existed (and was not expired).
func (tx *Tx) Delete(key []byte) (existed bool, err error) {
	v := tx.lookup(key)
	if !v.ok {
		return false, nil
	}
	// An expired key is removed too, but did not exist for the caller.
	return v.live(tx.now), tx.put(wal.TypeDelete, key, nil, 0)
}

// Expire sets key's expiry to at; at not after the transaction's time
// deletes the key. existed is false (and nothing is written) for a
// missing key.
func (tx *Tx) Expire(key []byte, at time.Time) (existed bool, err error) {
	v := tx.lookup(key)
	if !v.live(tx.now) {
		return false, nil
	}
	n := unixNanos(at)
	switch {
	case n <= tx.now:
		return true, tx.put(wal.TypeDelete, key, nil, 0)
	case v.kind != KindString:
		return true, tx.setExpiry(key, v, n)
	}
	return true, tx.put(wal.TypeSetTTL, key, v.value, n)
}

// setExpiry logs a collection's new expiry alone (0: none); the memtable
// gets the whole value with it.
func (tx *Tx) setExpiry(key []byte, v view, expireAt int64) error {
	return tx.putWrite(wal.Op{Type: wal.TypeExpire, Key: key, ExpireAt: expireAt},
		txWrite{kind: v.kind, value: clone(v.value), big: v.big, expireAt: expireAt, set: true})
}

// Persist removes key's TTL and reports whether it had one.
func (tx *Tx) Persist(key []byte) (hadTTL bool, err error) {
	v := tx.lookup(key)
	if !v.live(tx.now) || v.expireAt == 0 {
		return false, nil
	}
	if v.kind != KindString {
		return true, tx.setExpiry(key, v, 0)
	}
	return true, tx.put(wal.TypeSet, key, v.value, 0)
}

// Transactions are pooled with their buffers: the ops, the writes, the
// index of the keys written, and the block their keys and values are
// copied into. None of them is looked at once the transaction's batch is
// encoded into its group (addBatch copies every byte it logs; a
// collection's whole value, which the group keeps, is never in the block),
// so the next transaction may reuse them.
var txPool = sync.Pool{New: func() any { return new(Tx) }}

// Bounds on what a pooled transaction keeps (a huge one's buffers go).
const (
	maxPooledTxOps   = 1024
	maxPooledTxBytes = 64 << 10
)

func getTx() *Tx { return txPool.Get().(*Tx) }

func putTx(tx *Tx) {
	if len(tx.ops) > maxPooledTxOps || cap(tx.block) > maxPooledTxBytes {
		return
	}
	clear(tx.ops)
	clear(tx.writes)
	clear(tx.own)
	*tx = Tx{ops: tx.ops[:0], writes: tx.writes[:0], own: tx.own, block: tx.block[:0], undo: tx.undo[:0], inPlace: tx.inPlace[:0]}
	txPool.Put(tx)
}

// copyIn copies p into the transaction's block (nil stays nil, as clone
// keeps it). The copy is the transaction's until its batch is encoded.
func (tx *Tx) copyIn(p []byte) []byte {
	if p == nil {
		return nil
	}
	if cap(tx.block)-len(tx.block) < len(p) {
		if len(p) > maxPooledTxBytes/4 {
			return clone(p) // a large value gets its own
		}
		// A full block is left to the ops that point into it; a new one
		// takes its place.
		tx.block = make([]byte, 0, max(4<<10, 2*cap(tx.block), len(p)))
	}
	at := len(tx.block)
	tx.block = append(tx.block, p...)
	return tx.block[at:len(tx.block):len(tx.block)]
}

// put adds one write to the transaction's batch. Key and value are copied.
// A write that breaks the size bounds is refused and leaves the batch as it
// was; fn decides whether the transaction goes on.
func (tx *Tx) put(typ wal.RecordType, key, value []byte, expireAt int64) error {
	if err := tx.db.checkSizes(key, value); err != nil {
		return err
	}
	return tx.add(wal.Op{Type: typ, Key: tx.copyIn(key), Value: tx.copyIn(value), ExpireAt: expireAt}, txWrite{})
}

// putWrite adds an op of a collection (a delta, a typed value or an
// expiry) and what the memtable gets of it. The op's bytes are copied; the
// write's value must be the transaction's own.
func (tx *Tx) putWrite(op wal.Op, w txWrite) error {
	switch {
	case len(op.Key) == 0:
		return ErrEmptyKey
	case len(op.Key) > tx.db.opts.MaxKeySize:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrKeyTooLarge, len(op.Key), tx.db.opts.MaxKeySize)
	case len(op.Value) > MaxValueSizeLimit || len(w.value) > MaxValueSizeLimit:
		return fmt.Errorf("%w: a collection of %d bytes, the limit is %d", ErrValueTooLarge, max(len(op.Value), len(w.value)), MaxValueSizeLimit)
	}
	op.Key, op.Value = tx.copyIn(op.Key), tx.copyIn(op.Value)
	return tx.add(op, w)
}

func (tx *Tx) add(op wal.Op, w txWrite) error {
	if tx.readOnly {
		return ErrReadOnlyView
	}
	if tx.own == nil {
		tx.own = make(map[string]int)
	}
	tx.ops = append(tx.ops, op)
	tx.writes = append(tx.writes, w)
	// The key is the transaction's own copy (put, putWrite), unchanged
	// while the map holds it: no second copy for the map.
	tx.own[unsafe.String(unsafe.SliceData(op.Key), len(op.Key))] = len(tx.ops) - 1
	if op.Type == wal.TypeDelete {
		tx.dels++
	} else {
		tx.sets++
	}
	return nil
}
