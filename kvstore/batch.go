package kvstore

import (
	"fmt"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Batch collects sets and deletes that Write applies atomically with respect
// to crashes: they are logged as one checksummed record, so after a crash
// either all of them are there or none is. Operations apply in batch order;
// a concurrent reader may see some keys of a batch changed before others.
// The zero value is an empty batch. Keys and values are copied when added.
type Batch struct {
	ops  []wal.Op
	sets int
	dels int
}

// Set adds a set of key to value.
func (b *Batch) Set(key, value []byte) {
	b.ops = append(b.ops, wal.Op{Type: wal.TypeSet, Key: clone(key), Value: clone(value)})
	b.sets++
}

// Delete adds a delete of key.
func (b *Batch) Delete(key []byte) {
	b.ops = append(b.ops, wal.Op{Type: wal.TypeDelete, Key: clone(key)})
	b.dels++
}

// Len is the number of operations in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Reset empties the batch for reuse.
func (b *Batch) Reset() { *b = Batch{ops: b.ops[:0]} }

func clone(p []byte) []byte { return append([]byte(nil), p...) }

// Write applies the batch atomically and returns once it is acknowledged
// under the sync policy. Every key and value is checked against the size
// bounds before anything touches the disk.
func (db *DB) Write(b *Batch) error {
	if b == nil || len(b.ops) == 0 {
		return nil
	}
	for _, op := range b.ops {
		if err := db.checkSizes(op.Key, op.Value); err != nil {
			return err
		}
	}
	if n, limit := wal.BatchPayloadSize(b.ops), wal.MaxPayload(MaxKeySizeLimit, MaxValueSizeLimit); n > limit {
		return fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrBatchTooLarge, n, limit)
	}
	if err := db.commit(func(g *group, seq uint64) { g.addBatch(seq, b.ops) }); err != nil {
		return err
	}
	db.stats.sets.Add(uint64(b.sets))
	db.stats.deletes.Add(uint64(b.dels))
	return nil
}
