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

// scanItem is one key of the scan order: its hash and its record.
type scanItem struct {
	h uint64
	r ref // 0 (no record) sorts before every key of its hash: a seek probe
}

func (m *memtable) newScanTree() *btree.BTreeG[scanItem] {
	return btree.NewG(32, func(a, b scanItem) bool {
		switch {
		case a.h != b.h:
			return a.h < b.h
		case a.r == 0:
			return b.r != 0
		case b.r == 0:
			return false
		}
		return bytes.Compare(m.arena.key(a.r), m.arena.key(b.r)) < 0
	})
}

// applyToScanTree does to the scan order what op does to the key order.
// The records op names are readable (released only after).
func (m *memtable) applyToScanTree(t *btree.BTreeG[scanItem], op *treeOp) {
	switch {
	case op.flush:
		t.Clear(false)
	case op.put != 0:
		t.ReplaceOrInsert(scanItem{h: scanHash(m.arena.key(op.put)), r: op.put})
	case op.old != 0:
		t.Delete(scanItem{h: scanHash(m.arena.key(op.old)), r: op.old})
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
	m.scanTree.AscendGreaterOrEqual(scanItem{h: cursor}, func(it scanItem) bool {
		if examined >= limit && it.h != last {
			next = it.h
			return false
		}
		examined++
		last = it.h
		k, _, exp, _ := m.arena.record(it.r)
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
