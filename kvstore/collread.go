package kvstore

// Reads of a collection that touch only what they answer: a scan page in
// the members' hash order, the rank of a bound of a sorted set, the members
// at given indexes, and a copy of a key that shares the persistent tree.
//
// Invariant: a scan cursor is a place in the order of memberHash (then the
// bytes), which depends on a member's bytes only — not on the collection's
// form (packed or big), its history or the process — so a cursor stays
// valid while the collection changes and converts, and a scan returns every
// member present for its whole length (a member may come twice only if its
// hash equals another's, or if the collection turned packed meanwhile).

import (
	"sort"
	"unsafe"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
	"github.com/tidwall/btree"
)

// scanTree calls fn for the items of t from pivot on: count items, then
// the rest of the last one's hash, so that next — the hash of the first
// item not visited, 0 at the end — never splits a hash.
func scanTree[T any](t *btree.BTreeG[T], pivot T, hashOf func(T) uint64, count int, fn func(T)) (next uint64) {
	visited := 0
	var last uint64
	t.Ascend(pivot, func(it T) bool {
		h := hashOf(it)
		if visited >= max(count, 1) && h != last {
			next = h
			return false
		}
		visited++
		last = h
		fn(it)
		return true
	})
	return next
}

// HScan returns a page of the hash at key (fields and values, flattened, as
// copies) from cursor on — start with 0, pass the next cursor returned,
// stop when it is 0 — and the next cursor. A big hash answers about count
// fields a call, reading only those (O(log n + count)); a packed one
// answers every field from the cursor on in one page, as Redis does for a
// listpack. Every field present for the whole scan is returned (see
// collread.go).
func (tx *Tx) HScan(key []byte, cursor uint64, count int) (pairs [][]byte, next uint64, err error) {
	c, err := tx.read(key, KindHash)
	if err != nil || c == nil {
		return nil, 0, err
	}
	if c.big == nil {
		for i := 0; i+1 < len(c.elems); i += 2 {
			if cursor == 0 || memberHash(c.elems[i]) >= cursor {
				pairs = append(pairs, clone(c.elems[i]), clone(c.elems[i+1]))
			}
		}
		return pairs, 0, nil
	}
	pairs = make([][]byte, 0, 2*min(count, c.size()))
	next = scanTree(c.big.hash, hashItem{h: cursor}, func(it hashItem) uint64 { return it.h }, count,
		func(it hashItem) { pairs = append(pairs, []byte(it.f), []byte(it.v)) })
	return pairs, next, nil
}

// SScan is HScan for the set at key: members, as copies.
func (tx *Tx) SScan(key []byte, cursor uint64, count int) (members [][]byte, next uint64, err error) {
	c, err := tx.read(key, KindSet)
	if err != nil || c == nil {
		return nil, 0, err
	}
	if c.big == nil {
		for _, m := range c.elems {
			if cursor == 0 || memberHash(m) >= cursor {
				members = append(members, clone(m))
			}
		}
		return members, 0, nil
	}
	members = make([][]byte, 0, min(count, c.size()))
	next = scanTree(c.big.set, setItem{h: cursor}, func(it setItem) uint64 { return it.h }, count,
		func(it setItem) { members = append(members, []byte(it.m)) })
	return members, next, nil
}

// ZScan is HScan for the sorted set at key: members and scores, as copies.
func (tx *Tx) ZScan(key []byte, cursor uint64, count int) (members []ZMember, next uint64, err error) {
	c, err := tx.read(key, KindZSet)
	if err != nil || c == nil {
		return nil, 0, err
	}
	if c.big == nil {
		for _, z := range c.zs {
			if cursor == 0 || memberHash(z.Member) >= cursor {
				members = append(members, ZMember{Member: clone(z.Member), Score: z.Score})
			}
		}
		return members, 0, nil
	}
	members = make([]ZMember, 0, min(count, c.size()))
	next = scanTree(c.big.zm, zmItem{h: cursor}, func(it zmItem) uint64 { return it.h }, count,
		func(it zmItem) { members = append(members, ZMember{Member: []byte(it.m), Score: it.score}) })
	return members, next, nil
}

// ZRankWhere is the number of members of the sorted set at key (lowest
// score first, then by member) for which before is true, where before is
// true of a prefix of that order (a member below a score or lex bound): the
// rank of the bound, O(log² n) on a big sorted set, without reading the
// members in between. The member's bytes are valid during the call only.
func (tx *Tx) ZRankWhere(key []byte, before func(ZMember) bool) (int, error) {
	c, err := tx.read(key, KindZSet)
	if err != nil || c == nil {
		return 0, err
	}
	if c.big == nil {
		return sort.Search(len(c.zs), func(i int) bool { return !before(c.zs[i]) }), nil
	}
	return sort.Search(c.size(), func(i int) bool {
		it, _ := c.big.zs.GetAt(i)
		return !before(ZMember{Member: bytesOfString(it.m), Score: it.score})
	}), nil
}

// HPairsAt returns the fields and values (flattened, as copies) at the
// given indexes (each 0 <= i < HLen, repeats allowed) of the hash's fixed
// order: O(log n) each on a big hash, for HRANDFIELD.
func (tx *Tx) HPairsAt(key []byte, indexes []int) ([][]byte, error) {
	c, err := tx.read(key, KindHash)
	if err != nil || c == nil {
		return nil, err
	}
	out := make([][]byte, 0, 2*len(indexes))
	for _, i := range indexes {
		if c.big == nil {
			out = append(out, clone(c.elems[2*i]), clone(c.elems[2*i+1]))
			continue
		}
		it, _ := c.big.hash.GetAt(i)
		out = append(out, []byte(it.f), []byte(it.v))
	}
	return out, nil
}

// SMembersAt is HPairsAt for a set: the members at indexes.
func (tx *Tx) SMembersAt(key []byte, indexes []int) ([][]byte, error) {
	c, err := tx.read(key, KindSet)
	if err != nil || c == nil {
		return nil, err
	}
	out := make([][]byte, 0, len(indexes))
	for _, i := range indexes {
		if c.big == nil {
			out = append(out, clone(c.elems[i]))
			continue
		}
		it, _ := c.big.set.GetAt(i)
		out = append(out, []byte(it.m))
	}
	return out, nil
}

// ZMembersAt is HPairsAt for a sorted set: the members ranked at indexes.
func (tx *Tx) ZMembersAt(key []byte, indexes []int) ([]ZMember, error) {
	c, err := tx.read(key, KindZSet)
	if err != nil || c == nil {
		return nil, err
	}
	out := make([]ZMember, 0, len(indexes))
	for _, i := range indexes {
		if c.big == nil {
			out = append(out, ZMember{Member: clone(c.zs[i].Member), Score: c.zs[i].Score})
			continue
		}
		it, _ := c.big.zs.GetAt(i)
		out = append(out, ZMember{Member: []byte(it.m), Score: it.score})
	}
	return out, nil
}

// CopyValue sets to to from's value and expiry, replacing what it holds
// (ErrNotFound when from is missing): RENAME and COPY. A big collection's
// tree is shared copy-on-write (O(1) in memory, where Dump and Restore
// decode and rebuild it); the log record is still the whole packed value,
// as Restore's, since the log has no record that names another key.
func (tx *Tx) CopyValue(from, to []byte) error {
	v := tx.lookup(from)
	if !v.live(tx.now) {
		return ErrNotFound
	}
	if v.big == nil {
		d, err := tx.Dump(from)
		if err != nil {
			return err
		}
		return tx.Restore(to, d)
	}
	c, err := tx.read(from, v.kind)
	if err != nil {
		return err
	}
	value := append([]byte{byte(v.kind)}, c.big.encode()...)
	return tx.putWrite(wal.Op{Type: wal.TypeTyped, Key: to, Value: value, ExpireAt: v.expireAt},
		txWrite{kind: v.kind, big: c.big.clone(), expireAt: v.expireAt, set: true})
}

// bytesOfString is s's bytes, not copied, for a read that keeps nothing.
func bytesOfString(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
