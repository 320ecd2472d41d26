package kvstore

import (
	"bytes"
	"encoding/binary"
	"iter"
	"slices"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Lists: elements in order under one key (Redis's LPUSH family), indexes
// as Redis reads them (negative ones count from the tail).

// LPush inserts values at the head, one after another (the last ends up
// first, as Redis's LPUSH), creating the list; it returns the new length.
func (tx *Tx) LPush(key []byte, values ...[]byte) (int, error) {
	if n, ok, err := tx.pushPacked(key, values, true); ok {
		return n, err
	}
	c, err := tx.edit(key, KindList, true)
	if err != nil {
		return 0, err
	}
	rev := make([][]byte, len(values))
	for i, v := range values {
		rev[len(values)-1-i] = v
	}
	c.linsert(0, rev...)
	return c.size(), tx.save(c)
}

// RPush appends values at the tail, creating the list; it returns the new length.
func (tx *Tx) RPush(key []byte, values ...[]byte) (int, error) {
	if n, ok, err := tx.pushPacked(key, values, false); ok {
		return n, err
	}
	c, err := tx.edit(key, KindList, true)
	if err != nil {
		return 0, err
	}
	c.linsert(c.size(), values...)
	return c.size(), tx.save(c)
}

// pushPacked is LPush (head) or RPush onto an existing list without
// decoding it: the new packed value is the new count, then the pushed
// elements spliced before or after the old ones, and the delta the same
// opLInsert that linsert records. ok false: the key is missing, expired or
// not a list, or nothing is pushed, or the list is big or turns big — the
// caller takes the general path.
func (tx *Tx) pushPacked(key []byte, values [][]byte, head bool) (n int, ok bool, err error) {
	v := tx.lookup(key)
	if len(values) == 0 || !v.live(tx.now) || v.kind != KindList || v.big != nil {
		return 0, false, nil
	}
	count, m := binary.Uvarint(v.value)
	if m <= 0 {
		return 0, true, errBadPacked
	}
	body := v.value[m:]
	var elems []byte // the pushed elements, in list order, packed
	if head {
		for i := len(values) - 1; i >= 0; i-- {
			elems = appendField(elems, values[i])
		}
	} else {
		for _, e := range values {
			elems = appendField(elems, e)
		}
	}
	at := uint64(0)
	if !head {
		at = count
	}
	delta := append(make([]byte, 0, 2+1+2*binary.MaxVarintLen64+len(elems)), byte(KindList), 0, opLInsert)
	delta = binary.AppendUvarint(delta, at)
	delta = binary.AppendUvarint(delta, uint64(len(values)))
	delta = append(delta, elems...)
	if wantBig(int(count)+len(values), len(body)+len(elems), false) {
		return 0, false, nil
	}
	packed := spliceList(count+uint64(len(values)), body, elems, head)
	return int(count) + len(values), true, tx.putWrite(wal.Op{Type: wal.TypeDelta, Key: key, Value: delta},
		txWrite{kind: KindList, value: packed, expireAt: v.expireAt, set: true})
}

// spliceList is a packed list of count elements: elems (packed) before or
// after body (the old list's packed elements).
func spliceList(count uint64, body, elems []byte, head bool) []byte {
	packed := make([]byte, 0, binary.MaxVarintLen64+len(body)+len(elems))
	packed = binary.AppendUvarint(packed, count)
	if head {
		return append(append(packed, elems...), body...)
	}
	return append(append(packed, body...), elems...)
}

// LPop removes and returns up to count elements from the head (nil for a
// missing key); the list goes with its last element.
func (tx *Tx) LPop(key []byte, count int) ([][]byte, error) { return tx.pop(key, count, true) }

// RPop is LPop from the tail: the last element first.
func (tx *Tx) RPop(key []byte, count int) ([][]byte, error) { return tx.pop(key, count, false) }

func (tx *Tx) pop(key []byte, count int, head bool) ([][]byte, error) {
	if head {
		if out, ok, err := tx.popHeadPacked(key, count); ok {
			return out, err
		}
	}
	c, err := tx.edit(key, KindList, false)
	if err != nil || c == nil || count <= 0 {
		return nil, err
	}
	size := c.size()
	n := min(count, size)
	var out [][]byte
	if head {
		out = c.lrange(0, n)
		c.ldelete(0, n)
	} else {
		out = c.lrange(size-n, size)
		slices.Reverse(out)
		c.ldelete(size-n, n)
	}
	return out, tx.save(c)
}

// popHeadPacked is LPop of fewer elements than the list holds without
// decoding it: the new packed value is the new count and the bytes after
// the popped elements, the delta the same opLDelete that ldelete records.
// ok false: the general path (a missing key, another kind, the list's last
// elements, a count <= 0).
func (tx *Tx) popHeadPacked(key []byte, count int) (out [][]byte, ok bool, err error) {
	v := tx.lookup(key)
	if count <= 0 || !v.live(tx.now) || v.kind != KindList || v.big != nil {
		return nil, false, nil
	}
	total, m := binary.Uvarint(v.value)
	if m <= 0 || uint64(count) >= total {
		return nil, false, nil
	}
	rest := v.value[m:]
	out = make([][]byte, count)
	for i := range out {
		var e []byte
		if e, rest, ok = lengthPrefixedField(rest); !ok {
			return nil, true, errBadPacked
		}
		out[i] = clone(e)
	}
	delta := append(make([]byte, 0, 3+2*binary.MaxVarintLen64), byte(KindList), 0, opLDelete)
	delta = binary.AppendUvarint(delta, 0)
	delta = binary.AppendUvarint(delta, uint64(count))
	packed := spliceList(total-uint64(count), rest, nil, false)
	return out, true, tx.putWrite(wal.Op{Type: wal.TypeDelta, Key: key, Value: delta},
		txWrite{kind: KindList, value: packed, expireAt: v.expireAt, set: true})
}

// LLen is the length of the list (0 for a missing key).
func (tx *Tx) LLen(key []byte) (int, error) {
	c, err := tx.read(key, KindList)
	if err != nil || c == nil {
		return 0, err
	}
	return c.size(), nil
}

// listRange is start..stop (inclusive, Redis's indexes) clipped to a list
// of n elements, as a half-open range; empty when lo >= hi.
func listRange(start, stop, n int) (lo, hi int) {
	if start < 0 {
		start = max(n+start, 0)
	}
	if stop < 0 {
		stop = n + stop
	}
	stop = min(stop, n-1)
	if start > stop || start >= n {
		return 0, 0
	}
	return start, stop + 1
}

// LRange returns the elements from start to stop, inclusive, as copies.
func (tx *Tx) LRange(key []byte, start, stop int) ([][]byte, error) {
	c, err := tx.read(key, KindList)
	if err != nil || c == nil {
		return nil, err
	}
	lo, hi := listRange(start, stop, c.size())
	return c.lrange(lo, hi), nil
}

// LRangeSeq is LRange without the copies: the number of elements from
// start to stop, inclusive, and the sequence of them, head first. The
// elements alias the list: range over them before the transaction writes
// again, and copy what must outlive the transaction.
func (tx *Tx) LRangeSeq(key []byte, start, stop int) (n int, elems iter.Seq[[]byte], err error) {
	c, err := tx.read(key, KindList)
	if err != nil || c == nil {
		return 0, func(func([]byte) bool) {}, err
	}
	lo, hi := listRange(start, stop, c.size())
	return hi - lo, func(yield func([]byte) bool) { c.lwalk(lo, hi, yield) }, nil
}

// LIndex returns the element at index, ErrNotFound past either end.
func (tx *Tx) LIndex(key []byte, index int) ([]byte, error) {
	c, err := tx.read(key, KindList)
	if err != nil {
		return nil, err
	}
	if c != nil {
		if index < 0 {
			index += c.size()
		}
		if index >= 0 && index < c.size() {
			return c.lindex(index), nil
		}
	}
	return nil, ErrNotFound
}

// LSet replaces the element at index: ErrNotFound for a missing key,
// ErrOutOfRange past either end.
func (tx *Tx) LSet(key []byte, index int, value []byte) error {
	c, err := tx.edit(key, KindList, false)
	switch {
	case err != nil:
		return err
	case c == nil:
		return ErrNotFound
	}
	if index < 0 {
		index += c.size()
	}
	if index < 0 || index >= c.size() {
		return ErrOutOfRange
	}
	c.lset(index, value)
	return tx.save(c)
}

// LInsert inserts value before (or after) the first element equal to
// pivot; it returns the new length, -1 when pivot is not there, 0 for a
// missing key.
func (tx *Tx) LInsert(key []byte, before bool, pivot, value []byte) (int, error) {
	c, err := tx.edit(key, KindList, false)
	if err != nil || c == nil {
		return 0, err
	}
	i := c.lfind(pivot)
	if i < 0 {
		return -1, nil
	}
	if !before {
		i++
	}
	c.linsert(i, value)
	return c.size(), tx.save(c)
}

// LRem removes elements equal to value: the first count from the head
// (count > 0), from the tail (count < 0), or all (0). It returns how many.
func (tx *Tx) LRem(key []byte, count int, value []byte) (int, error) {
	c, err := tx.edit(key, KindList, false)
	if err != nil || c == nil {
		return 0, err
	}
	// The matches, head first (count >= 0) or tail first, removed from
	// the highest index down so that the others keep theirs.
	var at []int
	limit := count
	if limit < 0 {
		limit = -limit
	}
	c.leach(count < 0, func(i int, e []byte) bool {
		if bytes.Equal(e, value) {
			at = append(at, i)
		}
		return limit == 0 || len(at) < limit
	})
	if count >= 0 {
		slices.Reverse(at)
	}
	for _, i := range at {
		c.ldelete(i, 1)
	}
	return len(at), tx.save(c)
}

// LTrim keeps the elements from start to stop, inclusive, and removes the rest.
func (tx *Tx) LTrim(key []byte, start, stop int) error {
	c, err := tx.edit(key, KindList, false)
	if err != nil || c == nil {
		return err
	}
	lo, hi := listRange(start, stop, c.size())
	c.ldelete(hi, c.size()-hi)
	c.ldelete(0, lo)
	return tx.save(c)
}

// LAll ranges over the elements of the list at key as it is now, head first.
func (tx *Tx) LAll(key []byte) (iter.Seq2[int, []byte], error) {
	all, err := tx.LRange(key, 0, -1)
	if err != nil {
		return nil, err
	}
	return func(yield func(int, []byte) bool) {
		for i, e := range all {
			if !yield(i, e) {
				return
			}
		}
	}, nil
}

// LPush is Tx.LPush in a transaction of its own.
func (db *DB) LPush(key []byte, values ...[]byte) (n int, err error) {
	err = db.Update(func(tx *Tx) error { n, err = tx.LPush(key, values...); return err })
	return n, err
}

// RPush is Tx.RPush in a transaction of its own.
func (db *DB) RPush(key []byte, values ...[]byte) (n int, err error) {
	err = db.Update(func(tx *Tx) error { n, err = tx.RPush(key, values...); return err })
	return n, err
}

// LPop is Tx.LPop in a transaction of its own.
func (db *DB) LPop(key []byte, count int) (out [][]byte, err error) {
	err = db.Update(func(tx *Tx) error { out, err = tx.LPop(key, count); return err })
	return out, err
}

// RPop is Tx.RPop in a transaction of its own.
func (db *DB) RPop(key []byte, count int) (out [][]byte, err error) {
	err = db.Update(func(tx *Tx) error { out, err = tx.RPop(key, count); return err })
	return out, err
}

// LRange is Tx.LRange in a read-only view of its own (View).
func (db *DB) LRange(key []byte, start, stop int) (out [][]byte, err error) {
	err = db.View(func(tx *Tx) error { out, err = tx.LRange(key, start, stop); return err })
	return out, err
}
