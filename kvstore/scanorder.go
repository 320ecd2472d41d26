package kvstore

// The scan order: every live key is also indexed by a fixed 64-bit hash of
// it (xxHash64 of the key bytes, unseeded), so that a scan's position is
// one number — the hash to resume from — that a client can hold (Redis's
// SCAN cursor) and that no server table has to remember.
//
// Invariant: a key's place in this order depends on its bytes only, never
// on the process, the other keys or the time, so a cursor stays valid across
// connections, writes and restarts, and a scan returns every key present for
// its whole length (keys added or deleted meanwhile may or may not be
// returned; a key may be returned twice only if its hash equals another's).
// Changing scanHash breaks every cursor handed out: never change it.

import (
	"bytes"

	"github.com/cespare/xxhash/v2"
	"github.com/google/btree"
)

// scanHash is a key's place in the scan order.
func scanHash(key []byte) uint64 { return xxhash.Sum64(key) }

// scanItem is one key of the scan order in 8 bytes, so the order costs
// about 13 bytes a key rather than a second copy of the hash: the top 16
// bits of the key's hash above its record's 48-bit reference (a probe when
// the reference is 0, sorting before every key of its top bits). Items of
// equal top bits are ordered by the whole hash, read again from the key,
// then by the key, so the order is exactly the (hash, key) order that
// cursors name.
type scanItem uint64

const scanTopShift = refBits // 64-refBits top bits of the hash

func newScanItem(h uint64, r ref) scanItem {
	return scanItem(h>>scanTopShift<<scanTopShift | uint64(r))
}

func (it scanItem) ref() ref { return ref(it & refMask) }

func (m *memtable) newScanTree() *btree.BTreeG[scanItem] {
	return btree.NewG(32, func(a, b scanItem) bool {
		if ta, tb := a>>scanTopShift, b>>scanTopShift; ta != tb {
			return ta < tb
		}
		ra, rb := a.ref(), b.ref()
		switch {
		case ra == 0:
			return rb != 0
		case rb == 0:
			return false
		}
		ka, kb := m.arena.key(ra), m.arena.key(rb)
		if ha, hb := scanHash(ka), scanHash(kb); ha != hb {
			return ha < hb
		}
		return bytes.Compare(ka, kb) < 0
	})
}

// applyToScanTree does to the scan order what op does to the key order.
// The records op names are readable (released only after).
func (m *memtable) applyToScanTree(t *btree.BTreeG[scanItem], op *treeOp) {
	switch {
	case op.flush:
		t.Clear(false)
	case op.put != 0:
		t.ReplaceOrInsert(newScanItem(scanHash(m.arena.key(op.put)), op.put))
	case op.old != 0:
		t.Delete(newScanItem(scanHash(m.arena.key(op.old)), op.old))
	}
}

// scanFrom returns the live keys of the scan order from cursor on: limit
// keys examined (expired ones count, as Redis counts the buckets it
// visits), then the rest of the last key's hash, so that the next cursor —
// the hash of the first key not examined, 0 at the end — never splits a
// hash. Keys are copies.
func (m *memtable) scanFrom(cursor uint64, limit int, now int64) (keys [][]byte, next uint64) {
	m.treeMu.RLock()
	defer m.treeMu.RUnlock()
	examined := 0
	var last uint64
	// The probe finds the first key of the cursor's top bits; keys of those
	// bits below the cursor are stepped over.
	m.scanTree.AscendGreaterOrEqual(newScanItem(cursor, 0), func(it scanItem) bool {
		k, _, exp, _ := m.arena.record(it.ref())
		h := scanHash(k)
		if h < cursor {
			return true
		}
		if examined >= limit && h != last {
			next = h
			return false
		}
		examined++
		last = h
		if exp == 0 || exp > now {
			keys = append(keys, bytes.Clone(k))
		}
		return true
	})
	return keys, next
}

// ScanCursor returns the keys of a stateless scan, Redis's SCAN: start
// with cursor 0, pass each call the next cursor it returned, stop when it
// returns 0. Each call examines about count keys (at least 1). Every key
// present from the first call to the last is returned; a cursor stays
// valid across restarts and concurrent writes (see scanorder.go). Expired
// keys are skipped.
func (db *DB) ScanCursor(cursor uint64, count int) (keys [][]byte, next uint64, err error) {
	if db.closed.Load() {
		return nil, 0, ErrClosed
	}
	keys, next = db.mem.scanFrom(cursor, max(count, 1), db.opts.now().UnixNano())
	return keys, next, nil
}
