package kvstore

import (
	"encoding/binary"
	"math"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/btree"
)

// Big collections: past bigAt entries (or bigBytes of packed encoding) a
// collection lives in memory as persistent B-trees (tidwall/btree, whose
// Copy is O(1) copy-on-write and whose nodes are counted, so GetAt and
// DeleteAt give ranks), so that a write costs O(log n) instead of decoding
// and re-encoding the whole collection, and a reader keeps the version it
// read without copying it.
//
// Invariant: a bigColl that a memtable record, a sealed group or a reader
// can reach is never changed again. A write changes a clone (clone: O(1),
// later changes copy the nodes they touch) and publishes it whole. Cloning
// is the one operation that writes to the tree it copies (its copy-on-write
// id, which no read path reads), and only the commit leader or the replay
// clones. The replay, which no reader sees, changes its trees in place.
// One exception keeps a write from copying a path of nodes each time: a
// version made by a transaction of the open group (owner) is reachable only
// through that group's pending writes, which only the transactions of that
// group read, under the pipeline's lock, and which are applied together
// once the group is durable; the next transaction of the group changes it
// in place, journalling each change (bigUndo) so that a transaction that
// fails leaves it as it found it.
//
// Hash fields and set and sorted-set members are ordered by a fixed hash of
// their bytes (then the bytes), so the order does not depend on the
// history and survives restarts; list elements by a position key, spaced
// so that pushes at either end and most inserts need no renumbering.

// bigAt and bigBytes are the sizes past which a collection turns big;
// smallAt and smallBytes those at or under which a big one is packed again
// (half, so that a collection at the edge does not convert on every write).
// BenchmarkCollectionThreshold: a write to the big form is cheaper from
// about 32 entries on (2-3x at 64-128), but the big form costs 55-122 heap
// bytes per entry against 11-22 packed (10-byte elements); at 128 (Redis's
// listpack limit too) the memory goals' collections (10 and 100 entries)
// stay packed.
const (
	bigAt      = 128
	bigBytes   = 8 << 10
	smallAt    = bigAt / 2
	smallBytes = bigBytes / 2
)

// bigDegree is the B-trees' degree: a node holds up to 2×bigDegree-1
// items, and a write after a clone copies one node per level.
const bigDegree = 16

type hashItem struct {
	h    uint64
	f, v string
}

type setItem struct {
	h uint64
	m string
}

type zmItem struct {
	h     uint64
	m     string
	score float64
}

type zsItem struct {
	score float64
	m     string
}

type listItem struct {
	pos int64
	v   string
}

func memberHash(b []byte) uint64 { return xxhash.Sum64(b) }

// probe is b as a string for a lookup that does not keep it.
func probe(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func hashLess(a, b hashItem) bool { return a.h < b.h || a.h == b.h && a.f < b.f }
func setLess(a, b setItem) bool   { return a.h < b.h || a.h == b.h && a.m < b.m }
func zmLess(a, b zmItem) bool     { return a.h < b.h || a.h == b.h && a.m < b.m }
func listLess(a, b listItem) bool { return a.pos < b.pos }

func zsLess(a, b zsItem) bool {
	switch {
	case a.score < b.score:
		return true
	case a.score > b.score:
		return false
	}
	return a.m < b.m
}

func newTree[T any](less func(a, b T) bool) *btree.BTreeG[T] {
	return btree.NewBTreeGOptions(less, btree.Options{Degree: bigDegree, NoLocks: true})
}

// bigColl is one version of a big collection (see the invariant above).
type bigColl struct {
	kind Kind
	// body is the size of the packed encoding without its count.
	body int
	hash *btree.BTreeG[hashItem]
	set  *btree.BTreeG[setItem]
	zm   *btree.BTreeG[zmItem] // a sorted set's members and scores
	zs   *btree.BTreeG[zsItem] // the same, by score
	list *btree.BTreeG[listItem]

	// owner is the id of the open group whose transactions may change
	// this version in place (0: none: it is cloned to be changed); read
	// and written only under the pipeline's lock.
	owner uint64
	// journal, while a transaction changes this version in place, is
	// where each change appends its inverse (nil otherwise).
	journal *[]bigUndo
}

// bigUndo is the inverse of one change to a big collection changed in
// place: an op of the delta encoding (opHSet, opSRem, ...) and its
// arguments, which undo applies.
type bigUndo struct {
	b     *bigColl
	op    byte
	i, n  int
	s, v  string
	score float64
	vals  []string
}

// note journals the inverse of a change, when b is changed in place.
func (b *bigColl) note(u bigUndo) {
	if b.journal != nil {
		u.b = b
		*b.journal = append(*b.journal, u)
	}
}

// undo applies the inverse of one change (journal off: b.journal nil).
func (u *bigUndo) undo() {
	b := u.b
	switch u.op {
	case opHSet:
		b.hset(bytesOf(u.s), bytesOf(u.v))
	case opHDel:
		b.hdel(bytesOf(u.s))
	case opSAdd:
		b.sadd(bytesOf(u.s))
	case opSRem:
		b.srem(bytesOf(u.s))
	case opZAdd:
		b.zadd(bytesOf(u.s), u.score)
	case opZRem:
		b.zrem(bytesOf(u.s))
	case opLInsert:
		vals := make([][]byte, len(u.vals))
		for j, v := range u.vals {
			vals[j] = bytesOf(v)
		}
		b.linsert(u.i, vals)
	case opLDelete:
		b.ldelete(u.i, u.n)
	case opLSet:
		b.lset(u.i, bytesOf(u.s))
	}
}

// concat is a new string of a's bytes then b's, in one allocation.
func concat(a, b []byte) string {
	buf := make([]byte, len(a)+len(b))
	if len(buf) == 0 {
		return ""
	}
	copy(buf[copy(buf, a):], b)
	return unsafe.String(&buf[0], len(buf))
}

// bytesOf is s as bytes, for a primitive that copies what it keeps.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func newBig(kind Kind) *bigColl {
	b := &bigColl{kind: kind}
	switch kind {
	case KindHash:
		b.hash = newTree(hashLess)
	case KindSet:
		b.set = newTree(setLess)
	case KindZSet:
		b.zm, b.zs = newTree(zmLess), newTree(zsLess)
	case KindList:
		b.list = newTree(listLess)
	}
	return b
}

// clone is a version of b that may be changed; b stays as it is.
func (b *bigColl) clone() *bigColl {
	c := *b
	c.owner, c.journal = 0, nil
	switch b.kind {
	case KindHash:
		c.hash = b.hash.Copy()
	case KindSet:
		c.set = b.set.Copy()
	case KindZSet:
		c.zm, c.zs = b.zm.Copy(), b.zs.Copy()
	case KindList:
		c.list = b.list.Copy()
	}
	return &c
}

func (b *bigColl) len() int {
	switch b.kind {
	case KindHash:
		return b.hash.Len()
	case KindSet:
		return b.set.Len()
	case KindZSet:
		return b.zm.Len()
	}
	return b.list.Len()
}

// packedSize is the size of the packed encoding.
func (b *bigColl) packedSize() int { return uvarintLen(uint64(b.len())) + b.body }

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func fieldSize(n int) int { return uvarintLen(uint64(n)) + n }

// wantBig reports whether a collection of n entries and a packed body of
// body bytes is big, given whether it is now.
func wantBig(n, body int, big bool) bool {
	if big {
		return n > smallAt || body > smallBytes
	}
	return n > bigAt || body > bigBytes
}

// entryHeap is the heap a big collection holds per entry beyond the
// entry's packed bytes (measured with 10-byte elements: a hash field and
// its value 95 B, a list element 72, a set member 55, a sorted-set member
// 122, against 22, 11, 11 and 19 packed).
var entryHeap = [...]int{KindHash: 73, KindList: 61, KindSet: 44, KindZSet: 103}

// heapEstimate is the heap b holds, for the memory statistics.
func (b *bigColl) heapEstimate() int64 {
	return int64(b.len()*entryHeap[b.kind] + b.body)
}

// Hashes.

func (b *bigColl) hget(f []byte) (string, bool) {
	it, ok := b.hash.Get(hashItem{h: memberHash(f), f: probe(f)})
	return it.v, ok
}

func (b *bigColl) hset(f, v []byte) (added bool) {
	// Field and value share one allocation: half the objects for the
	// collector to find, and no pointer in it to follow.
	fv := concat(f, v)
	it := hashItem{h: memberHash(f), f: fv[:len(f)], v: fv[len(f):]}
	prev, replaced := b.hash.Set(it)
	if replaced {
		b.note(bigUndo{op: opHSet, s: prev.f, v: prev.v})
		b.body += fieldSize(len(v)) - fieldSize(len(prev.v))
		return false
	}
	b.note(bigUndo{op: opHDel, s: it.f})
	b.body += fieldSize(len(f)) + fieldSize(len(v))
	return true
}

func (b *bigColl) hdel(f []byte) bool {
	prev, ok := b.hash.Delete(hashItem{h: memberHash(f), f: probe(f)})
	if ok {
		b.note(bigUndo{op: opHSet, s: prev.f, v: prev.v})
		b.body -= fieldSize(len(prev.f)) + fieldSize(len(prev.v))
	}
	return ok
}

// Sets.

func (b *bigColl) has(m []byte) bool {
	_, ok := b.set.Get(setItem{h: memberHash(m), m: probe(m)})
	return ok
}

func (b *bigColl) sadd(m []byte) bool {
	it := setItem{h: memberHash(m), m: probe(m)}
	if _, ok := b.set.Get(it); ok {
		return false
	}
	it.m = string(m)
	b.set.Set(it)
	b.note(bigUndo{op: opSRem, s: it.m})
	b.body += fieldSize(len(m))
	return true
}

func (b *bigColl) srem(m []byte) bool {
	prev, ok := b.set.Delete(setItem{h: memberHash(m), m: probe(m)})
	if ok {
		b.note(bigUndo{op: opSAdd, s: prev.m})
		b.body -= fieldSize(len(m))
	}
	return ok
}

// Sorted sets.

func (b *bigColl) zscore(m []byte) (float64, bool) {
	it, ok := b.zm.Get(zmItem{h: memberHash(m), m: probe(m)})
	return it.score, ok
}

func (b *bigColl) zadd(m []byte, score float64) (added bool) {
	it := zmItem{h: memberHash(m), m: probe(m)}
	if old, ok := b.zm.Get(it); ok {
		if old.score == score && math.Signbit(old.score) == math.Signbit(score) {
			return false
		}
		b.note(bigUndo{op: opZAdd, s: old.m, score: old.score})
		b.zs.Delete(zsItem{score: old.score, m: old.m})
		old.score = score
		b.zm.Set(old)
		b.zs.Set(zsItem{score: score, m: old.m})
		return false
	}
	it.m, it.score = string(m), score
	b.zm.Set(it)
	b.zs.Set(zsItem{score: score, m: it.m})
	b.note(bigUndo{op: opZRem, s: it.m})
	b.body += 8 + fieldSize(len(m))
	return true
}

func (b *bigColl) zrem(m []byte) bool {
	old, ok := b.zm.Delete(zmItem{h: memberHash(m), m: probe(m)})
	if ok {
		b.note(bigUndo{op: opZAdd, s: old.m, score: old.score})
		b.zs.Delete(zsItem{score: old.score, m: old.m})
		b.body -= 8 + fieldSize(len(m))
	}
	return ok
}

// zrank is the rank of m (lowest score first): a binary search over
// GetAt, O(log² n), since the tree does not say an item's index.
func (b *bigColl) zrank(m []byte) (int, bool) {
	score, ok := b.zscore(m)
	if !ok {
		return 0, false
	}
	x := zsItem{score: score, m: probe(m)}
	lo, hi := 0, b.zs.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if it, _ := b.zs.GetAt(mid); zsLess(it, x) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, true
}

// zeach calls fn for the members ranked lo and up, lowest score first,
// until it returns false.
func (b *bigColl) zeach(lo int, fn func(zsItem) bool) {
	first, ok := b.zs.GetAt(lo)
	if !ok {
		return
	}
	b.zs.Ascend(first, fn)
}

// Lists.

// listGap is the spacing of position keys a renumbering leaves.
const listGap = 1 << 32

func (b *bigColl) lindex(i int) (string, bool) {
	it, ok := b.list.GetAt(i)
	return it.v, ok
}

// leach calls fn for the elements from index lo on until it returns false.
func (b *bigColl) leach(lo int, fn func(listItem) bool) {
	first, ok := b.list.GetAt(lo)
	if !ok {
		return
	}
	b.list.Ascend(first, fn)
}

// linsert inserts vals before index i (0..len).
func (b *bigColl) linsert(i int, vals [][]byte) {
	b.note(bigUndo{op: opLDelete, i: i, n: len(vals)})
	b.place(i, vals)
}

// place is linsert without the journal.
func (b *bigColl) place(i int, vals [][]byte) {
	n := b.list.Len()
	var lo, hi int64 // vals get keys strictly between lo and hi
	switch {
	case n == 0:
		lo, hi = -1, int64(len(vals))
	case i == 0:
		first, _ := b.list.Min()
		lo, hi = first.pos-int64(len(vals))-1, first.pos
	case i == n:
		last, _ := b.list.Max()
		lo, hi = last.pos, last.pos+int64(len(vals))+1
	default:
		prev, _ := b.list.GetAt(i - 1)
		next, _ := b.list.GetAt(i)
		lo, hi = prev.pos, next.pos
	}
	if hi-lo <= int64(len(vals)) {
		b.renumber(i, len(vals))
		b.place(i, vals)
		return
	}
	step := (hi - lo) / int64(len(vals)+1)
	for j, v := range vals {
		b.list.Set(listItem{pos: lo + step*int64(j+1), v: string(v)})
		b.body += fieldSize(len(v))
	}
}

// renumber spaces the position keys listGap apart, with room for n keys
// before index i. O(n), as the LINSERT that needs it.
func (b *bigColl) renumber(i, n int) {
	items := b.list.Items()
	b.list = newTree(listLess)
	pos := int64(0)
	for j, it := range items {
		if j == i {
			pos += int64(n+1) * listGap
		}
		it.pos = pos
		b.list.Load(it)
		pos += listGap
	}
}

// ldelete removes n elements from index i.
func (b *bigColl) ldelete(i, n int) {
	var removed []string
	if b.journal != nil {
		removed = make([]string, 0, n)
	}
	for range n {
		var it listItem
		switch i {
		case 0:
			it, _ = b.list.PopMin()
		case b.list.Len() - 1:
			it, _ = b.list.PopMax()
		default:
			it, _ = b.list.DeleteAt(i)
		}
		if removed != nil {
			removed = append(removed, it.v)
		}
		b.body -= fieldSize(len(it.v))
	}
	if removed != nil {
		b.note(bigUndo{op: opLInsert, i: i, vals: removed})
	}
}

func (b *bigColl) lset(i int, v []byte) {
	it, _ := b.list.GetAt(i)
	b.note(bigUndo{op: opLSet, i: i, s: it.v})
	b.body += fieldSize(len(v)) - fieldSize(len(it.v))
	it.v = string(v)
	b.list.Set(it)
}

// Conversions.

// toBig builds the big form of a packed collection.
func (c *coll) toBig() *bigColl {
	b := newBig(c.kind)
	switch c.kind {
	case KindHash:
		for i := 0; i+1 < len(c.elems); i += 2 {
			b.hset(c.elems[i], c.elems[i+1])
		}
	case KindSet:
		for _, m := range c.elems {
			b.sadd(m)
		}
	case KindZSet:
		for _, z := range c.zs {
			b.zadd(z.Member, z.Score)
		}
	case KindList:
		for j, e := range c.elems {
			b.list.Load(listItem{pos: int64(j) * listGap, v: string(e)})
			b.body += fieldSize(len(e))
		}
	}
	return b
}

// unpack fills c's packed form from b (elements alias b's strings, which
// never change).
func (b *bigColl) unpack(c *coll) {
	n := b.len()
	bs := func(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
	switch b.kind {
	case KindHash:
		c.elems = make([][]byte, 0, 2*n)
		b.hash.Scan(func(it hashItem) bool { c.elems = append(c.elems, bs(it.f), bs(it.v)); return true })
	case KindSet:
		c.elems = make([][]byte, 0, n)
		b.set.Scan(func(it setItem) bool { c.elems = append(c.elems, bs(it.m)); return true })
	case KindZSet:
		c.zs = make([]ZMember, 0, n)
		b.zs.Scan(func(it zsItem) bool { c.zs = append(c.zs, ZMember{Member: bs(it.m), Score: it.score}); return true })
	case KindList:
		c.elems = make([][]byte, 0, n)
		b.list.Scan(func(it listItem) bool { c.elems = append(c.elems, bs(it.v)); return true })
	}
}

// encode is b's packed encoding (what snapshots, backups and Dump hold).
func (b *bigColl) encode() []byte {
	out := make([]byte, 0, b.packedSize())
	out = binary.AppendUvarint(out, uint64(b.len()))
	appendStr := func(s string) {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	switch b.kind {
	case KindHash:
		b.hash.Scan(func(it hashItem) bool { appendStr(it.f); appendStr(it.v); return true })
	case KindSet:
		b.set.Scan(func(it setItem) bool { appendStr(it.m); return true })
	case KindZSet:
		b.zs.Scan(func(it zsItem) bool {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(it.score))
			appendStr(it.m)
			return true
		})
	case KindList:
		b.list.Scan(func(it listItem) bool { appendStr(it.v); return true })
	}
	return slices.Clip(out)
}
