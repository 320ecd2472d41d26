package kvstore

import (
	"errors"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Expiry.
//
// Invariant: a key past its TTL reads as missing everywhere (Get, Scan, Tx)
// from the instant it expires; it leaves the memtable, the log and the next
// snapshot only through a logged delete, made by the sweep in a transaction
// that checks the key is still expired, so a concurrent write that gave the
// key a new value or TTL always wins.

const (
	// expiredSeenQueue bounds the keys readers hand to the sweeper; more are
	// dropped (the sweep's sampling finds them later).
	expiredSeenQueue = 1024
	// sweepSamplePerShard and sweepMaxKeys bound one sweep round: at most
	// sweepMaxKeys deletes in one record, from at most sweepSamplePerShard
	// TTL keys looked at in each shard.
	sweepSamplePerShard = 20
	sweepMaxKeys        = 256
	// sweepBudget bounds the rounds of one tick: a tick whose round was full
	// runs another, until this much time has passed (Redis's 25 % rule).
	sweepBudget = 25 * time.Millisecond
)

// noteExpired hands a key a reader found expired to the sweeper, if it has room.
func (db *DB) noteExpired(key []byte) {
	if db.expiredSeen == nil {
		return
	}
	select {
	case db.expiredSeen <- string(key):
	default:
	}
}

// sweepExpired deletes expired keys, batch by batch, for at most
// sweepBudget; it runs every ExpirySweepInterval.
func (db *DB) sweepExpired() {
	deadline := time.Now().Add(sweepBudget)
	for db.sweepOnce() == sweepMaxKeys && time.Now().Before(deadline) {
	}
}

// sweepOnce deletes up to sweepMaxKeys expired keys with one logged record
// and returns how many it found.
func (db *DB) sweepOnce() int {
	keys := db.drainExpiredSeen()
	keys = append(keys, db.mem.expiredKeys(db.opts.now().UnixNano(), sweepSamplePerShard, sweepMaxKeys-len(keys))...)
	if len(keys) == 0 {
		return 0
	}
	deleted := 0
	watched := db.expiredWatchers.load() != nil
	var gone []string // the keys deleted, for the OnExpired callbacks
	err := db.Update(func(tx *Tx) error {
		deleted, gone = 0, gone[:0]
		for _, k := range keys {
			if v := tx.lookup([]byte(k)); v.ok && !v.live(tx.now) {
				if err := tx.put(wal.TypeDelete, []byte(k), nil, 0); err != nil {
					return err
				}
				deleted++
				if watched {
					gone = append(gone, k)
				}
			}
		}
		return nil
	})
	switch {
	case err == nil:
		db.stats.expired.Add(uint64(deleted))
		if len(gone) > 0 {
			for _, fn := range db.expiredWatchers.load() {
				fn.fn(gone)
			}
		}
	case db.failure() == nil && !errors.Is(err, ErrClosed):
		db.opts.Logger.Warn("kvstore: expiry sweep failed", "dir", db.dir, "err", err)
	}
	return len(keys)
}

func (db *DB) drainExpiredSeen() []string {
	var keys []string
	for len(keys) < sweepMaxKeys/2 {
		select {
		case k := <-db.expiredSeen:
			keys = append(keys, k)
		default:
			return keys
		}
	}
	return keys
}

// expiredWatcher is a callback of OnExpired.
type expiredWatcher struct{ fn func(keys []string) }

// OnExpired registers fn, called with the keys the expiry deletes (the
// sweep, and the keys readers found expired), after their delete is
// logged and synced, on the sweeper's goroutine; fn must not block. A key
// deleted by a write before the sweep met it is not reported. remove
// unregisters fn.
func (db *DB) OnExpired(fn func(keys []string)) (remove func()) {
	return db.expiredWatchers.add(&db.expiredMu, &expiredWatcher{fn: fn})
}
