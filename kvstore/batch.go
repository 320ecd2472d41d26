package kvstore

import (
	"fmt"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Batch collects sets and deletes that Write applies atomically with respect
// to crashes: they are logged as one checksummed record, so after a crash
// either all of them are there or none is. Operations apply in batch order;
// a concurrent reader may see some keys of a batch changed before others.
// The zero value is an empty batch. Keys and values are copied when added,
// into one buffer of the batch's that Reset keeps: a batch reused for a
// run of writes (a server's connection) allocates nothing per write once
// the buffer has grown to its usual size.
type Batch struct {
	ops  []wal.Op
	sets int
	dels int
	// data holds the bytes of every op's key and value. Growing it moves
	// it, but the ops keep pointing into the old array, whose bytes never
	// change; only Reset lets later writes reuse the bytes.
	data []byte
}

// Set adds a set of key to value (clearing a TTL the key had).
func (b *Batch) Set(key, value []byte) { b.SetWithTTL(key, value, time.Time{}) }

// keep copies p into the batch's buffer.
func (b *Batch) keep(p []byte) []byte {
	if len(p) > maxBatchInline {
		return clone(p) // a large value gets its own allocation; the buffer stays small
	}
	if cap(b.data)-len(b.data) < len(p) {
		b.data = make([]byte, 0, max(2*cap(b.data), len(p), 4<<10))
	}
	start := len(b.data)
	b.data = append(b.data, p...)
	return b.data[start:len(b.data):len(b.data)]
}

// maxBatchInline is the largest key or value copied into a batch's buffer.
const maxBatchInline = 16 << 10

// SetWithTTL adds a set of key to value that expires at expireAt (no TTL
// when zero).
func (b *Batch) SetWithTTL(key, value []byte, expireAt time.Time) {
	op := wal.Op{Type: wal.TypeSet, Key: b.keep(key), Value: b.keep(value)}
	if at := unixNanos(expireAt); at != 0 {
		op.Type, op.ExpireAt = wal.TypeSetTTL, at
	}
	b.ops = append(b.ops, op)
	b.sets++
}

// Delete adds a delete of key.
func (b *Batch) Delete(key []byte) {
	b.ops = append(b.ops, wal.Op{Type: wal.TypeDelete, Key: b.keep(key)})
	b.dels++
}

// Len is the number of operations in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Reset empties the batch for reuse, keeping its buffers (the largest
// ones are let go, so one huge batch does not pin its memory).
func (b *Batch) Reset() {
	clear(b.ops) // drop the references to keys and values
	data := b.data[:0]
	if cap(data) > maxKeptBatchBytes {
		data = nil
	}
	ops := b.ops[:0]
	if cap(ops) > maxKeptBatchOps {
		ops = nil
	}
	*b = Batch{ops: ops, data: data}
}

// Bounds on what Reset keeps.
const (
	maxKeptBatchBytes = 1 << 20
	maxKeptBatchOps   = 1 << 14
)

func clone(p []byte) []byte { return append([]byte(nil), p...) }

// Write applies the batch atomically and returns once it is acknowledged
// under the sync policy. Every key and value is checked against the size
// bounds before anything touches the disk.
func (db *DB) Write(b *Batch) error {
	_, err := db.Apply(b, WriteOptions{})
	return err
}

// WriteOptions control one write.
type WriteOptions struct {
	// NoSyncWait makes Apply return once the batch has its place in the log
	// order, before it is durable: batches applied one after another by one
	// goroutine are logged (and recovered) in call order. The caller waits
	// for durability with the returned function, once for a whole burst:
	// waiting for the last batch waits for every earlier one. Until then
	// the batch is not acknowledged and readers may not see it yet.
	NoSyncWait bool
}

// noWait is the wait function of a write that is already acknowledged.
func noWait() error { return nil }

// Apply commits b as one record. Without NoSyncWait it returns once the
// batch is acknowledged, and wait is a no-op; with it, wait blocks until
// the batch is acknowledged (or failed) and returns the outcome. wait must
// be called: until some writer waits, the batch may not reach the log.
func (db *DB) Apply(b *Batch, o WriteOptions) (wait func() error, err error) {
	if b == nil || len(b.ops) == 0 {
		return noWait, nil
	}
	if err := db.checkOps(b.ops); err != nil {
		return noWait, err
	}
	g, err := db.pipe.enqueue(func(g *group, seq uint64) error {
		g.addBatch(seq, b.ops, nil)
		return nil
	})
	if err != nil {
		return noWait, err
	}
	db.stats.sets.Add(uint64(b.sets))
	db.stats.deletes.Add(uint64(b.dels))
	if o.NoSyncWait {
		return g.waitFor, nil
	}
	return noWait, db.pipe.wait(g)
}

// checkOps checks every operation against the size bounds and the batch
// against the record bound.
func (db *DB) checkOps(ops []wal.Op) error {
	for _, op := range ops {
		if err := db.checkSizes(op.Key, op.Value); err != nil {
			return err
		}
	}
	if n, limit := wal.BatchPayloadSize(ops), wal.MaxPayload(MaxKeySizeLimit, MaxValueSizeLimit); n > limit {
		return fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrBatchTooLarge, n, limit)
	}
	return nil
}
