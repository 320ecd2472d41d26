package kvstore

// Lookups that answer in one probe of the index what would otherwise take
// two reads, with a write possibly ordered between them.
//
// Invariant: each answer is the key's state at one instant — read under
// one hold of its shard's lock (or, inside a transaction, through the
// transaction's one view) — so it never mixes two versions of the key.

import "time"

// Expiry returns key's expiry in one lookup, without copying its value:
// ErrNotFound when key is missing or past its TTL, hasTTL false when it
// has none. Like Get it counts a hit or a miss and never waits for disk
// I/O.
func (db *DB) Expiry(key []byte) (at time.Time, hasTTL bool, err error) {
	if db.closed.Load() {
		return time.Time{}, false, ErrClosed
	}
	e, ok, s := db.mem.metaIn(key)
	if ok && e.expired(db.opts.now().UnixNano()) {
		db.noteExpired(key)
		ok = false
	}
	s.countRead(ok)
	switch {
	case !ok:
		return time.Time{}, false, ErrNotFound
	case e.expireAt == 0:
		return time.Time{}, false, nil
	}
	return time.Unix(0, e.expireAt), true, nil
}

// Expiry is DB.Expiry as of the transaction.
func (tx *Tx) Expiry(key []byte) (at time.Time, hasTTL bool, err error) {
	v := tx.lookup(key)
	switch {
	case !v.live(tx.now):
		return time.Time{}, false, ErrNotFound
	case v.expireAt == 0:
		return time.Time{}, false, nil
	}
	return time.Unix(0, v.expireAt), true, nil
}
