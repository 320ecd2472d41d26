package kvstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Collections: hashes, lists, sets and sorted sets.
//
// Invariant: a collection is one record of the memtable holding its packed
// encoding (one allocation-free slot per key, as Redis's listpack) or, past
// bigAt entries, a handle to its big form (bigcoll.go); every change to it
// is logged as a delta — the fields or elements it
// adds, removes or replaces, never the whole collection — that the live
// transaction and the log replay apply with the same code (coll's
// primitives), so a replayed collection is the one that was acknowledged.
//
// Packed encodings (uvarint lengths):
//
//	hash:  count, count × (field, value)      in insertion order
//	list:  count, count × element             head first
//	set:   count, count × member              in insertion order
//	zset:  count, count × (score f64 bits u64 LE, member), by score then member
//
// A delta is kind u8, flags u8 (deltaFresh: start from an empty collection
// without expiry, whatever the key held), then ops, each an opcode u8 and
// its arguments. Without deltaFresh a delta applies to the key's collection
// of that kind; at replay a missing one means the key expired since, and
// the delta is dropped with it.

const deltaFresh = 1

// Delta opcodes.
const (
	opHSet    = 1 // field, value
	opHDel    = 2 // field
	opLInsert = 3 // uvarint index, uvarint n, n × element
	opLDelete = 4 // uvarint index, uvarint n
	opLSet    = 5 // uvarint index, element
	opSAdd    = 6 // member
	opSRem    = 7 // member
	opZAdd    = 8 // score u64, member
	opZRem    = 9 // member
)

// errBadPacked is a packed collection or delta that does not decode: the
// log or a snapshot passed its checksum yet holds one, a bug.
var errBadPacked = errors.New("kvstore: malformed collection encoding")

// ZMember is a member of a sorted set and its score.
type ZMember struct {
	Member []byte
	Score  float64
}

// coll is a collection being read or changed. Its elements alias the bytes
// it was decoded from (or the arguments of the primitives that added
// them) until encode copies them.
type coll struct {
	kind  Kind
	elems [][]byte  // hash: field, value, field, value...; list, set: elements
	zs    []ZMember // zset, sorted
	// big is the big form (elems and zs unused): a clone the collection's
	// own when edited or replayed, the published version when read.
	big *bigColl
	// index maps a hash field or set member to its position, for large
	// collections only (see indexAt), once lookups pays for it.
	index map[string]int
	// lookups counts the linear searches of a large collection without
	// an index (see indexAfter).
	lookups int

	// owned is the big version the transaction changes (a clone, or the
	// open group's own changed in place: see bigColl), nil when packed;
	// mark is where its changes start in the transaction's journal.
	owned *bigColl
	mark  int

	// The transaction's bookkeeping (nil log: a replay, nothing recorded).
	log      []byte
	key      []byte
	fresh    bool
	expireAt int64
}

// indexAt is the size from which a hash or set keeps a map of its members
// while it is changed, so that a command touching many of them stays linear.
// The map is built only after indexAfter linear searches of the same
// collection: building it costs far more than one search (a map insert per
// member against a byte comparison), so a command touching one member of a
// large collection — the common HSET/SADD/ZADD — searches instead.
const (
	indexAt    = 64
	indexAfter = 8
)

// wantIndex reports whether find should build the index of a collection of
// n members now, counting the search it is about to do otherwise.
func (c *coll) wantIndex(n int) bool {
	if c.index != nil || n < indexAt {
		return false
	}
	c.lookups++
	return c.lookups > indexAfter
}

func newColl(kind Kind) *coll { return &coll{kind: kind} }

// decodeColl decodes a packed collection of kind.
func decodeColl(kind Kind, b []byte) (*coll, error) {
	c := newColl(kind)
	n, m := binary.Uvarint(b)
	if m <= 0 || n > uint64(len(b)) {
		return nil, errBadPacked
	}
	b = b[m:]
	switch kind {
	case KindZSet:
		c.zs = make([]ZMember, 0, n)
		for range n {
			if len(b) < 8 {
				return nil, errBadPacked
			}
			score := math.Float64frombits(binary.LittleEndian.Uint64(b))
			var mem []byte
			var ok bool
			if mem, b, ok = lengthPrefixedField(b[8:]); !ok {
				return nil, errBadPacked
			}
			c.zs = append(c.zs, ZMember{Member: mem, Score: score})
		}
	case KindHash, KindList, KindSet:
		per := uint64(1)
		if kind == KindHash {
			per = 2
		}
		c.elems = make([][]byte, 0, n*per)
		for range n * per {
			var e []byte
			var ok bool
			if e, b, ok = lengthPrefixedField(b); !ok {
				return nil, errBadPacked
			}
			c.elems = append(c.elems, e)
		}
	default:
		return nil, errBadPacked
	}
	if len(b) != 0 {
		return nil, errBadPacked
	}
	return c, nil
}

func lengthPrefixedField(p []byte) (field, rest []byte, ok bool) {
	l, n := binary.Uvarint(p)
	if n <= 0 || l > uint64(len(p)-n) {
		return nil, nil, false
	}
	end := n + int(l)
	return p[n:end:end], p[end:], true
}

// size is the number of fields, elements or members.
func (c *coll) size() int {
	if c.big != nil {
		return c.big.len()
	}
	switch c.kind {
	case KindHash:
		return len(c.elems) / 2
	case KindZSet:
		return len(c.zs)
	}
	return len(c.elems)
}

// encode packs the collection into a new slice.
func (c *coll) encode() []byte {
	if c.big != nil {
		return c.big.encode()
	}
	n := binary.MaxVarintLen64
	for _, e := range c.elems {
		n += binary.MaxVarintLen64 + len(e)
	}
	for _, z := range c.zs {
		n += 8 + binary.MaxVarintLen64 + len(z.Member)
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(c.size()))
	if c.kind == KindZSet {
		for _, z := range c.zs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(z.Score))
			b = appendField(b, z.Member)
		}
		return slices.Clip(b)
	}
	for _, e := range c.elems {
		b = appendField(b, e)
	}
	return slices.Clip(b)
}

func appendField(b, f []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(f)))
	return append(b, f...)
}

// record appends one op to the delta, when recording.
func (c *coll) record(op byte, args ...[]byte) {
	if c.log == nil {
		return
	}
	c.log = append(c.log, op)
	for _, a := range args {
		c.log = appendField(c.log, a)
	}
}

func (c *coll) recordInt(op byte, ints ...int) {
	if c.log == nil {
		return
	}
	c.log = append(c.log, op)
	for _, i := range ints {
		c.log = binary.AppendUvarint(c.log, uint64(i))
	}
}

// packedBody is the size of a packed collection's encoding without its count.
func (c *coll) packedBody() int {
	n := 0
	for _, e := range c.elems {
		n += fieldSize(len(e))
	}
	for _, z := range c.zs {
		n += 8 + fieldSize(len(z.Member))
	}
	return n
}

// settle gives the collection the form its size calls for (see bigAt):
// after each delta, live and at replay alike, so both make the same choice.
func (c *coll) settle() {
	if c.big != nil {
		if !wantBig(c.big.len(), c.big.body, true) {
			c.big.unpack(c)
			c.big, c.index = nil, nil
		}
		return
	}
	if wantBig(c.size(), c.packedBody(), false) {
		c.big = c.toBig()
		c.elems, c.zs, c.index = nil, nil, nil
	}
}

// hget is a hash field's value.
func (c *coll) hget(f []byte) ([]byte, bool) {
	if c.big != nil {
		v, ok := c.big.hget(f)
		return []byte(v), ok
	}
	if i := c.find(f); i >= 0 {
		return clone(c.elems[i+1]), true
	}
	return nil, false
}

// has reports whether a hash has a field or a set a member.
func (c *coll) has(m []byte) bool {
	switch {
	case c.big == nil:
		return c.find(m) >= 0
	case c.kind == KindHash:
		_, ok := c.big.hget(m)
		return ok
	}
	return c.big.has(m)
}

// zscore is a sorted-set member's score.
func (c *coll) zscore(m []byte) (float64, bool) {
	if c.big != nil {
		return c.big.zscore(m)
	}
	if i := c.zfind(m); i >= 0 {
		return c.zs[i].Score, true
	}
	return 0, false
}

// all is every field and value (flattened), element or member, as copies.
func (c *coll) all() [][]byte {
	n := c.size()
	if c.kind == KindHash {
		n *= 2
	}
	out := make([][]byte, 0, n)
	c.walkAll(func(e []byte) bool {
		out = append(out, append([]byte{}, e...))
		return true
	})
	return out
}

// walkAll calls fn with every field and value (flattened), element or
// member of a hash, list or set, until it returns false; e aliases the
// collection (valid until its next change).
func (c *coll) walkAll(fn func(e []byte) bool) {
	if c.big == nil {
		for _, e := range c.elems {
			if !fn(e) {
				return
			}
		}
		return
	}
	switch c.kind {
	case KindHash:
		c.big.hash.Scan(func(it hashItem) bool { return fn(bytesOf(it.f)) && fn(bytesOf(it.v)) })
	case KindSet:
		c.big.set.Scan(func(it setItem) bool { return fn(bytesOf(it.m)) })
	case KindList:
		c.big.list.Scan(func(it listItem) bool { return fn(bytesOf(it.v)) })
	}
}

// lrange is a list's elements lo..hi-1, as copies.
func (c *coll) lrange(lo, hi int) [][]byte {
	if hi <= lo {
		return nil
	}
	out := make([][]byte, 0, hi-lo)
	c.lwalk(lo, hi, func(e []byte) bool {
		out = append(out, append([]byte{}, e...))
		return true
	})
	return out
}

// lwalk calls fn with a list's elements lo..hi-1, head first, until it
// returns false; e aliases the list (valid until its next change).
func (c *coll) lwalk(lo, hi int, fn func(e []byte) bool) {
	if hi <= lo {
		return // an empty range: leach would still give its first element
	}
	if c.big == nil {
		for _, e := range c.elems[lo:hi] {
			if !fn(e) {
				return
			}
		}
		return
	}
	left := hi - lo
	c.big.leach(lo, func(it listItem) bool {
		left--
		return fn(bytesOf(it.v)) && left > 0
	})
}

// lindex is a list's element at i (0 <= i < size), as a copy.
func (c *coll) lindex(i int) []byte {
	if c.big == nil {
		return clone(c.elems[i])
	}
	v, _ := c.big.lindex(i)
	return []byte(v)
}

// leach calls fn with each element of a list and its index, head first
// (or tail first when reverse), until fn returns false; e is valid during
// the call.
func (c *coll) leach(reverse bool, fn func(i int, e []byte) bool) {
	if c.big == nil {
		if reverse {
			for i := len(c.elems) - 1; i >= 0; i-- {
				if !fn(i, c.elems[i]) {
					return
				}
			}
			return
		}
		for i, e := range c.elems {
			if !fn(i, e) {
				return
			}
		}
		return
	}
	i, step := 0, 1
	walk := c.big.list.Scan
	if reverse {
		i, step, walk = c.size()-1, -1, c.big.list.Reverse
	}
	walk(func(it listItem) bool {
		ok := fn(i, unsafe.Slice(unsafe.StringData(it.v), len(it.v)))
		i += step
		return ok
	})
}

// lfind is the index of the first element equal to x, or -1.
func (c *coll) lfind(x []byte) int {
	at := -1
	c.leach(false, func(i int, e []byte) bool {
		if bytes.Equal(e, x) {
			at = i
			return false
		}
		return true
	})
	return at
}

// zrange is a sorted set's members ranked lo..hi-1, as copies.
func (c *coll) zrange(lo, hi int) []ZMember {
	if hi <= lo {
		return nil
	}
	out := make([]ZMember, 0, hi-lo)
	c.zwalkRank(lo, hi, false, func(z ZMember) bool {
		out = append(out, ZMember{Member: append([]byte{}, z.Member...), Score: z.Score})
		return true
	})
	return out
}

// zwalkRank calls fn with a sorted set's members ranked lo..hi-1, lowest
// score first (from hi-1 down when reverse), until it returns false;
// Member aliases the set (valid until its next change).
func (c *coll) zwalkRank(lo, hi int, reverse bool, fn func(ZMember) bool) {
	if hi <= lo {
		return // an empty range: zeach would still give its first member
	}
	if c.big == nil {
		if !reverse {
			for _, z := range c.zs[lo:hi] {
				if !fn(z) {
					return
				}
			}
			return
		}
		for i := hi - 1; i >= lo; i-- {
			if !fn(c.zs[i]) {
				return
			}
		}
		return
	}
	left := hi - lo
	visit := func(it zsItem) bool {
		left--
		return fn(ZMember{Member: bytesOf(it.m), Score: it.score}) && left > 0
	}
	if !reverse {
		c.big.zeach(lo, visit)
		return
	}
	if last, ok := c.big.zs.GetAt(hi - 1); ok {
		c.big.zs.Descend(last, visit)
	}
}

// zwalk is Tx.ZWalk on c.
func (c *coll) zwalk(from float64, reverse bool, fn func(ZMember) bool) {
	copyOf := func(it zsItem) ZMember { return ZMember{Member: []byte(it.m), Score: it.score} }
	switch {
	case c.big == nil && !reverse:
		i, _ := slices.BinarySearchFunc(c.zs, from, func(z ZMember, f float64) int { return cmpScore(z.Score, f) })
		for ; i < len(c.zs); i++ {
			if !fn(ZMember{Member: clone(c.zs[i].Member), Score: c.zs[i].Score}) {
				return
			}
		}
	case c.big == nil:
		i, _ := slices.BinarySearchFunc(c.zs, from, func(z ZMember, f float64) int {
			if z.Score > f {
				return 1
			}
			return -1 // the first scored above from
		})
		for i--; i >= 0; i-- {
			if !fn(ZMember{Member: clone(c.zs[i].Member), Score: c.zs[i].Score}) {
				return
			}
		}
	case !reverse:
		c.big.zs.Ascend(zsItem{score: from}, func(it zsItem) bool { return fn(copyOf(it)) })
	case math.IsInf(from, 1):
		c.big.zs.Reverse(func(it zsItem) bool { return fn(copyOf(it)) })
	default:
		// Descend from just above from's members: every item scored at
		// most from, and at most a member "" scored just above, skipped.
		c.big.zs.Descend(zsItem{score: math.Nextafter(from, math.Inf(1))}, func(it zsItem) bool {
			return it.score > from || fn(copyOf(it))
		})
	}
}

func cmpScore(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// zrank is a sorted-set member's rank, lowest score first.
func (c *coll) zrank(m []byte) (int, bool) {
	if c.big != nil {
		return c.big.zrank(m)
	}
	if i := c.zfind(m); i >= 0 {
		return i, true
	}
	return 0, false
}

// find is the position of a hash field (its pair's first slot) or a set
// member, or -1, in a packed collection.
func (c *coll) find(x []byte) int {
	step := 1
	if c.kind == KindHash {
		step = 2
	}
	if c.wantIndex(len(c.elems) / step) {
		c.index = make(map[string]int, len(c.elems)/step)
		for i := 0; i < len(c.elems); i += step {
			c.index[string(c.elems[i])] = i
		}
	}
	if c.index != nil {
		if i, ok := c.index[string(x)]; ok {
			return i
		}
		return -1
	}
	for i := 0; i < len(c.elems); i += step {
		if bytes.Equal(c.elems[i], x) {
			return i
		}
	}
	return -1
}

// removeAt drops the step slots at i (a hash pair or a set member). A
// collection of up to packedOrderMax entries keeps its order (as Redis's
// listpack does); a larger one moves its last entry into the hole (as a
// hash table has no order). The rule depends on the size alone, so the
// replay makes the same choice.
func (c *coll) removeAt(i, step int) {
	if len(c.elems)/step <= packedOrderMax {
		c.elems = slices.Delete(c.elems, i, i+step)
		c.index = nil // positions moved; find rebuilds it
		return
	}
	last := len(c.elems) - step
	if c.index != nil {
		delete(c.index, string(c.elems[i]))
		if i != last {
			c.index[string(c.elems[last])] = i
		}
	}
	copy(c.elems[i:i+step], c.elems[last:])
	clear(c.elems[last:])
	c.elems = c.elems[:last]
}

// packedOrderMax is Redis's default hash-max-listpack-entries.
const packedOrderMax = 128

// hset sets a hash field; added reports a new field.
func (c *coll) hset(f, v []byte) (added bool) {
	c.record(opHSet, f, v)
	if c.big != nil {
		return c.big.hset(f, v)
	}
	if i := c.find(f); i >= 0 {
		c.elems[i+1] = v
		return false
	}
	if c.index != nil {
		c.index[string(f)] = len(c.elems)
	}
	c.elems = append(c.elems, f, v)
	return true
}

// hdel removes a hash field; it reports whether it existed.
func (c *coll) hdel(f []byte) bool {
	if c.big != nil {
		if !c.big.hdel(f) {
			return false
		}
		c.record(opHDel, f)
		return true
	}
	i := c.find(f)
	if i < 0 {
		return false
	}
	c.record(opHDel, f)
	c.removeAt(i, 2)
	return true
}

// sadd adds a set member; it reports whether it is new.
func (c *coll) sadd(m []byte) bool {
	if c.big != nil {
		if !c.big.sadd(m) {
			return false
		}
		c.record(opSAdd, m)
		return true
	}
	if c.find(m) >= 0 {
		return false
	}
	c.record(opSAdd, m)
	if c.index != nil {
		c.index[string(m)] = len(c.elems)
	}
	c.elems = append(c.elems, m)
	return true
}

// srem removes a set member; it reports whether it existed.
func (c *coll) srem(m []byte) bool {
	if c.big != nil {
		if !c.big.srem(m) {
			return false
		}
		c.record(opSRem, m)
		return true
	}
	i := c.find(m)
	if i < 0 {
		return false
	}
	c.record(opSRem, m)
	c.removeAt(i, 1)
	return true
}

// linsert inserts vals before position i (0..len).
func (c *coll) linsert(i int, vals ...[]byte) {
	if len(vals) == 0 {
		return
	}
	if c.log != nil {
		c.log = append(c.log, opLInsert)
		c.log = binary.AppendUvarint(c.log, uint64(i))
		c.log = binary.AppendUvarint(c.log, uint64(len(vals)))
		for _, v := range vals {
			c.log = appendField(c.log, v)
		}
	}
	if c.big != nil {
		c.big.linsert(i, vals)
		return
	}
	c.elems = slices.Insert(c.elems, i, vals...)
}

// ldelete removes n elements from position i.
func (c *coll) ldelete(i, n int) {
	if n <= 0 {
		return
	}
	c.recordInt(opLDelete, i, n)
	if c.big != nil {
		c.big.ldelete(i, n)
		return
	}
	c.elems = slices.Delete(c.elems, i, i+n)
}

// lset replaces the element at i.
func (c *coll) lset(i int, v []byte) {
	if c.log != nil {
		c.log = append(c.log, opLSet)
		c.log = binary.AppendUvarint(c.log, uint64(i))
		c.log = appendField(c.log, v)
	}
	if c.big != nil {
		c.big.lset(i, v)
		return
	}
	c.elems[i] = v
}

func zless(a, b ZMember) int {
	switch {
	case a.Score < b.Score:
		return -1
	case a.Score > b.Score:
		return 1
	}
	return bytes.Compare(a.Member, b.Member)
}

// zfind is the position of a sorted-set member, or -1.
func (c *coll) zfind(m []byte) int {
	if c.wantIndex(len(c.zs)) {
		c.index = make(map[string]int, len(c.zs))
		for i, z := range c.zs {
			c.index[string(z.Member)] = i
		}
	}
	if c.index != nil {
		// Positions move on every insert: the index only says whether
		// the member is there; the position is found by its score.
		if _, ok := c.index[string(m)]; !ok {
			return -1
		}
	}
	for i, z := range c.zs {
		if bytes.Equal(z.Member, m) {
			return i
		}
	}
	return -1
}

// zadd sets a member's score (adding it when new); added reports a new one.
func (c *coll) zadd(m []byte, score float64) (added bool) {
	if c.log != nil {
		c.log = append(c.log, opZAdd)
		c.log = binary.LittleEndian.AppendUint64(c.log, math.Float64bits(score))
		c.log = appendField(c.log, m)
	}
	if c.big != nil {
		return c.big.zadd(m, score)
	}
	i := c.zfind(m)
	if i >= 0 {
		m = c.zs[i].Member
		c.zs = slices.Delete(c.zs, i, i+1)
	} else if c.index != nil {
		c.index[string(m)] = 0
	}
	z := ZMember{Member: m, Score: score}
	at, _ := slices.BinarySearchFunc(c.zs, z, zless)
	c.zs = slices.Insert(c.zs, at, z)
	return i < 0
}

// zrem removes a member; it reports whether it existed.
func (c *coll) zrem(m []byte) bool {
	if c.big != nil {
		if !c.big.zrem(m) {
			return false
		}
		c.record(opZRem, m)
		return true
	}
	i := c.zfind(m)
	if i < 0 {
		return false
	}
	c.record(opZRem, m)
	if c.index != nil {
		delete(c.index, string(m))
	}
	c.zs = slices.Delete(c.zs, i, i+1)
	return true
}

// applyDelta applies the ops of a delta (after its kind and flags) to c.
func (c *coll) applyDelta(ops []byte) error {
	field := func() []byte {
		f, rest, ok := lengthPrefixedField(ops)
		if !ok {
			panic(errBadPacked)
		}
		ops = rest
		return f
	}
	uint := func() int {
		v, n := binary.Uvarint(ops)
		if n <= 0 || v > math.MaxInt32 {
			panic(errBadPacked)
		}
		ops = ops[n:]
		return int(v)
	}
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%w: %v", errBadPacked, p)
			}
		}()
		for len(ops) > 0 {
			op := ops[0]
			ops = ops[1:]
			switch {
			case op == opHSet && c.kind == KindHash:
				f := field()
				c.hset(f, field())
			case op == opHDel && c.kind == KindHash:
				c.hdel(field())
			case op == opSAdd && c.kind == KindSet:
				c.sadd(field())
			case op == opSRem && c.kind == KindSet:
				c.srem(field())
			case op == opLInsert && c.kind == KindList:
				i, n := uint(), uint()
				if i > c.size() || n > len(ops) {
					panic("insert out of range")
				}
				vals := make([][]byte, n)
				for j := range vals {
					vals[j] = field()
				}
				c.linsert(i, vals...)
			case op == opLDelete && c.kind == KindList:
				i, n := uint(), uint()
				if i+n > c.size() {
					panic("delete out of range")
				}
				c.ldelete(i, n)
			case op == opLSet && c.kind == KindList:
				i := uint()
				if i >= c.size() {
					panic("set out of range")
				}
				c.lset(i, field())
			case op == opZAdd && c.kind == KindZSet:
				if len(ops) < 8 {
					panic("score truncated")
				}
				score := math.Float64frombits(binary.LittleEndian.Uint64(ops))
				ops = ops[8:]
				c.zadd(field(), score)
			case op == opZRem && c.kind == KindZSet:
				c.zrem(field())
			default:
				panic(fmt.Sprintf("op %d on a %s", op, c.kind))
			}
		}
	}()
	return err
}

// replayed is what a delta made of a key at replay.
type replayed struct {
	packed   []byte   // the new packed value, or
	big      *bigColl // the new big one
	expireAt int64
	del      bool // the collection became empty and the key goes
	skip     bool // the delta applies to nothing (the key expired since): the key stays as is
}

// replayDelta is what a delta makes of the key's current state (ok: it
// exists, of kind baseKind, packed in base or big in baseBig, which it
// changes in place: no reader sees a replay).
func replayDelta(delta []byte, ok bool, baseKind Kind, base []byte, baseBig *bigColl, baseExpire int64) (replayed, error) {
	if len(delta) < 2 {
		return replayed{}, errBadPacked
	}
	kind, flags := Kind(delta[0]), delta[1]
	var c *coll
	var r replayed
	switch {
	case flags&deltaFresh != 0:
		c = newColl(kind)
	case !ok || baseKind != kind:
		return replayed{skip: true}, nil
	case baseBig != nil:
		c = &coll{kind: kind, big: baseBig}
		r.expireAt = baseExpire
	default:
		if packed, ok := replayPush(kind, base, delta[2:]); ok && !packedWantsBig(packed) {
			return replayed{packed: packed, expireAt: baseExpire}, nil
		}
		var err error
		if c, err = decodeColl(kind, base); err != nil {
			return replayed{}, err
		}
		r.expireAt = baseExpire
	}
	if err := c.applyDelta(delta[2:]); err != nil {
		return replayed{}, err
	}
	if c.size() == 0 {
		return replayed{del: true}, nil
	}
	c.settle()
	if c.big != nil {
		r.big = c.big
	} else {
		r.packed = c.encode()
	}
	return r, nil
}

// packedWantsBig reports whether a packed collection is past the size of
// the big form.
func packedWantsBig(packed []byte) bool {
	n, m := binary.Uvarint(packed)
	return m > 0 && wantBig(int(min(n, math.MaxInt32)), len(packed)-m, false)
}

// settlePacked is a packed collection (from a snapshot, a restore, a typed
// record) in the form its size calls for: big nil, or big and packed nil.
func settlePacked(kind Kind, packed []byte) ([]byte, *bigColl, error) {
	if kind == KindString || !packedWantsBig(packed) {
		return packed, nil, nil
	}
	c, err := decodeColl(kind, packed)
	if err != nil {
		return nil, nil, err
	}
	return nil, c.toBig(), nil
}

// replayPush applies a delta that is one push onto a list's head or tail
// (what pushPacked logs) or one pop from its head (popHeadPacked) by
// splicing the packed bytes, without decoding the list; ok false: another delta, for replayDelta's general path.
func replayPush(kind Kind, base, ops []byte) (packed []byte, ok bool) {
	if kind != KindList || len(ops) == 0 {
		return nil, false
	}
	count, m := binary.Uvarint(base)
	if m <= 0 {
		return nil, false
	}
	if ops[0] == opLDelete {
		return replayPopHead(count, base[m:], ops[1:])
	}
	if ops[0] != opLInsert {
		return nil, false
	}
	at, a := binary.Uvarint(ops[1:])
	if a <= 0 {
		return nil, false
	}
	n, b := binary.Uvarint(ops[1+a:])
	if b <= 0 || n == 0 || (at != 0 && at != count) {
		return nil, false
	}
	elems := ops[1+a+b:]
	rest := elems
	for range n {
		var ok bool
		if _, rest, ok = lengthPrefixedField(rest); !ok {
			return nil, false
		}
	}
	if len(rest) != 0 {
		return nil, false // more ops follow
	}
	return spliceList(count+n, base[m:], elems, at == 0), true
}

// replayPopHead applies a delta that is one removal of n < count elements
// at a list's head (what popHeadPacked logs) to the packed elements body.
func replayPopHead(count uint64, body, ops []byte) (packed []byte, ok bool) {
	at, a := binary.Uvarint(ops)
	if a <= 0 || at != 0 {
		return nil, false
	}
	n, b := binary.Uvarint(ops[a:])
	if b <= 0 || n == 0 || n >= count || len(ops) != a+b {
		return nil, false
	}
	for range n {
		if _, body, ok = lengthPrefixedField(body); !ok {
			return nil, false
		}
	}
	return spliceList(count-n, body, nil, false), true
}

// ErrOutOfRange is an index past the end of a list (LSET).
var ErrOutOfRange = errors.New("kvstore: index out of range")

// edit opens key's collection of kind for change, recording a delta. A
// missing (or expired) key gives a new, empty collection when create, nil
// otherwise.
func (tx *Tx) edit(key []byte, kind Kind, create bool) (*coll, error) {
	v := tx.lookup(key)
	if v.live(tx.now) {
		if v.kind != kind {
			return nil, ErrWrongType
		}
		c, err := tx.collOf(v, false)
		if err != nil {
			return nil, err
		}
		c.key, c.expireAt = key, v.expireAt
		c.log = append(make([]byte, 0, 64), byte(kind), 0)
		return c, nil
	}
	if !create {
		return nil, nil
	}
	c := newColl(kind)
	c.key, c.fresh = key, true
	c.log = append(make([]byte, 0, 64), byte(kind), deltaFresh)
	return c, nil
}

// read is key's collection of kind as of the transaction, nil when the
// key is missing; nothing it does is recorded.
func (tx *Tx) read(key []byte, kind Kind) (*coll, error) {
	v := tx.lookup(key)
	if !v.live(tx.now) {
		return nil, nil
	}
	if v.kind != kind {
		return nil, ErrWrongType
	}
	return tx.collOf(v, true)
}

// collOf is the collection v holds: when big, the version to read, or to
// change: the open group's own version in place (see bigColl), else a clone.
func (tx *Tx) collOf(v view, read bool) (*coll, error) {
	b := v.big
	owned := b != nil && tx.group != 0 && b.owner == tx.group
	switch {
	case b == nil:
		return decodeColl(v.kind, v.value)
	case read:
		// A read copies what it returns before the transaction goes on
		// (but ZWalk: see hold), so a later change in place is safe.
		return &coll{kind: v.kind, big: b}, nil
	case owned:
		// Until save, no other edit or read of the transaction may alias it.
		b.owner, b.journal = 0, &tx.undo
		c := &coll{kind: v.kind, big: b, owned: b, mark: len(tx.undo)}
		tx.inPlace = append(tx.inPlace, c)
		return c, nil
	}
	b = b.clone()
	return &coll{kind: v.kind, big: b, owned: b}, nil
}

// hold keeps c's version as it is while the caller's code runs with c
// open (a walk calling back into it, which may change the key): a change
// meanwhile clones it instead of changing it in place.
func (tx *Tx) hold(c *coll) {
	if c.big != nil && tx.group != 0 && c.big.owner == tx.group {
		c.big.owner = 0
	}
}

// save logs what edit's collection recorded: its delta, or the key's
// delete when it became empty; a version changed in place goes back to its
// group (its changes undone if the write is refused).
func (tx *Tx) save(c *coll) error {
	err := tx.saveColl(c)
	if c == nil {
		return err
	}
	if b := c.owned; b != nil && b.journal != nil {
		if err != nil {
			tx.undoFrom(c.mark, b)
		}
		b.journal = nil
		tx.inPlace = slices.DeleteFunc(tx.inPlace, func(o *coll) bool { return o == c })
		b.owner = tx.group
	}
	if err == nil && c.big != nil {
		c.big.owner = tx.group // the write's version: the group's to change
	}
	return err
}

func (tx *Tx) saveColl(c *coll) error {
	if c == nil || len(c.log) <= 2 {
		return nil
	}
	if c.size() == 0 {
		if c.fresh {
			return nil // made and emptied here: nothing to log
		}
		return tx.put(wal.TypeDelete, c.key, nil, 0)
	}
	c.settle()
	w := txWrite{kind: c.kind, big: c.big, expireAt: c.expireAt, set: true}
	if c.big == nil {
		w.value = c.encode()
	} else if n := c.big.packedSize(); n > MaxValueSizeLimit {
		return fmt.Errorf("%w: a collection of %d bytes, the limit is %d", ErrValueTooLarge, n, MaxValueSizeLimit)
	}
	return tx.putWrite(wal.Op{Type: wal.TypeDelta, Key: c.key, Value: c.log}, w)
}

// Value is a key's whole value of any kind, as Dump reads it and Restore
// writes it: Packed is a collection's packed encoding (a string's bytes).
type Value struct {
	Kind     Kind
	Packed   []byte
	ExpireAt time.Time // zero: no expiry
}

// Dump returns key's whole value (a copy), ErrNotFound when it is missing:
// what RENAME and COPY move.
func (tx *Tx) Dump(key []byte) (Value, error) {
	v := tx.lookup(key)
	if !v.live(tx.now) {
		return Value{}, ErrNotFound
	}
	out := Value{Kind: v.kind, Packed: clone(v.value)}
	if v.big != nil {
		out.Packed = v.big.encode()
	}
	if v.expireAt != 0 {
		out.ExpireAt = time.Unix(0, v.expireAt)
	}
	return out, nil
}

// Restore sets key to a value Dump returned, replacing what it holds.
func (tx *Tx) Restore(key []byte, v Value) error {
	if v.Kind == KindString {
		return tx.SetWithTTL(key, v.Packed, v.ExpireAt)
	}
	if v.Kind > maxKind {
		return fmt.Errorf("kvstore: restore: unknown kind %d", v.Kind)
	}
	if _, err := decodeColl(v.Kind, v.Packed); err != nil {
		return err
	}
	packed, big, err := settlePacked(v.Kind, clone(v.Packed))
	if err != nil {
		return err
	}
	at := unixNanos(v.ExpireAt)
	value := append([]byte{byte(v.Kind)}, v.Packed...)
	return tx.putWrite(wal.Op{Type: wal.TypeTyped, Key: key, Value: value, ExpireAt: at},
		txWrite{kind: v.Kind, value: packed, big: big, expireAt: at, set: true})
}
