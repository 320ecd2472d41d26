package kvstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a movable clock for expiry.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func ttlOptions(c *fakeClock) Options {
	return Options{clock: c.Now, ExpirySweepInterval: -1, CompactionThreshold: -1}
}

func wantMissing(t *testing.T, db *DB, k string) {
	t.Helper()
	if v, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound (expired)", k, v, err)
	}
}

func TestTTL_ExpiresAtItsAbsoluteTimeAcrossRestartAndSnapshot(t *testing.T) {
	for _, via := range []string{"log", "snapshot"} {
		t.Run(via, func(t *testing.T) {
			clock := newFakeClock()
			dir := t.TempDir()
			db := openT(t, dir, ttlOptions(clock))
			at := clock.Now().Add(10 * time.Second)
			if err := db.SetWithTTL([]byte("t"), []byte("1"), at); err != nil {
				t.Fatal(err)
			}
			var b Batch
			b.SetWithTTL([]byte("bt"), []byte("2"), at)
			b.Set([]byte("plain"), []byte("3"))
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			if via == "snapshot" {
				if _, err := db.Snapshot(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()

			clock.Advance(5 * time.Second)
			db = openT(t, dir, ttlOptions(clock))
			wantValue(t, db, "t", "1")
			wantValue(t, db, "bt", "2")
			if got, ok := db.ExpiresAt([]byte("t")); !ok || !got.Equal(at) {
				t.Fatalf("ExpiresAt after reopen = %v, %v; want %v", got, ok, at)
			}
			if via == "snapshot" && db.Recovery().Snapshot == "" {
				t.Fatal("reopen did not use the snapshot")
			}
			clock.Advance(5 * time.Second) // exactly at the expiry: gone
			wantMissing(t, db, "t")
			wantMissing(t, db, "bt")
			wantValue(t, db, "plain", "3")
			page, _ := db.Scan(ScanOptions{})
			if len(page.Entries) != 1 || string(page.Entries[0].Key) != "plain" {
				t.Fatalf("Scan returned %d entries, want only the key without TTL", len(page.Entries))
			}
			db.Close()
			db = openT(t, dir, ttlOptions(clock)) // expired in the log: not loaded
			defer db.Close()
			wantMissing(t, db, "t")
			if n := db.Len(); n != 1 {
				t.Fatalf("Len after reopening past the expiry = %d, want 1", n)
			}
		})
	}
}

func TestTTL_SetClearsItAndTxMethodsFollowRedis(t *testing.T) {
	clock := newFakeClock()
	db := openT(t, t.TempDir(), ttlOptions(clock))
	defer db.Close()
	k := []byte("k")
	in := clock.Now().Add(time.Minute)
	if err := db.SetWithTTL(k, []byte("v"), in); err != nil {
		t.Fatal(err)
	}
	err := db.Update(func(tx *Tx) error {
		if err := tx.SetKeepTTL(k, []byte("v2")); err != nil {
			return err
		}
		if at, ok := tx.ExpiresAt(k); !ok || !at.Equal(in) {
			t.Errorf("SetKeepTTL lost the TTL: %v %v", at, ok)
		}
		if had, _ := tx.Persist(k); !had {
			t.Error("Persist reported no TTL")
		}
		if _, ok := tx.ExpiresAt(k); ok {
			t.Error("Persist kept the TTL")
		}
		if existed, _ := tx.Expire(k, in); !existed {
			t.Error("Expire of an existing key reported missing")
		}
		if existed, _ := tx.Expire([]byte("nope"), in); existed {
			t.Error("Expire of a missing key reported existing")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantValue(t, db, "k", "v2")
	if at, ok := db.ExpiresAt(k); !ok || !at.Equal(in) {
		t.Fatalf("after the transaction ExpiresAt = %v, %v", at, ok)
	}
	mustSet(t, db, "k", "v3") // plain Set clears the TTL, as Redis SET
	if _, ok := db.ExpiresAt(k); ok {
		t.Fatal("Set kept the TTL")
	}
	err = db.Update(func(tx *Tx) error {
		existed, err := tx.Expire(k, clock.Now().Add(-time.Second)) // in the past: deletes
		if !existed {
			t.Error("Expire in the past reported missing")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	wantMissing(t, db, "k")
}

func TestTTL_SweepDeletesExpiredKeysWithLoggedDeletes(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	o := ttlOptions(clock)
	db := openT(t, dir, o)
	const n = 1000
	var b Batch
	for i := 0; i < n; i++ {
		b.SetWithTTL([]byte(fmt.Sprintf("e%04d", i)), []byte("x"), clock.Now().Add(time.Second))
	}
	b.Set([]byte("keep"), []byte("y"))
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	for i := 0; db.Len() > 1; i++ {
		found := db.sweepOnce()
		if found == 0 || found > sweepMaxKeys {
			t.Fatalf("sweep round %d found %d keys with %d left (bound %d)", i, found, db.Len()-1, sweepMaxKeys)
		}
	}
	if st := db.Stats(); st.ExpiredKeys != n {
		t.Fatalf("ExpiredKeys = %d, want %d", st.ExpiredKeys, n)
	}
	db.Close()
	// The deletes are in the log: even with the clock back before the
	// expiry, the keys stay gone.
	back := newFakeClock()
	db = openT(t, dir, ttlOptions(back))
	defer db.Close()
	if db.Len() != 1 {
		t.Fatalf("Len after reopen = %d, want 1: the sweep's deletes were not logged", db.Len())
	}
}

func TestTTL_SweepNeverDeletesAKeyRewrittenWithoutTTL(t *testing.T) {
	clock := newFakeClock()
	db := openT(t, t.TempDir(), ttlOptions(clock))
	defer db.Close()
	if err := db.SetWithTTL([]byte("k"), []byte("old"), clock.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	wantMissing(t, db, "k") // the reader hands it to the sweeper
	mustSet(t, db, "k", "new")
	db.sweepOnce()
	wantValue(t, db, "k", "new")
}

func TestTTL_BackgroundSweepRuns(t *testing.T) {
	db := openT(t, t.TempDir(), Options{ExpirySweepInterval: 5 * time.Millisecond})
	defer db.Close()
	if err := db.SetWithTTL([]byte("k"), []byte("v"), time.Now().Add(20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for db.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the background sweep did not delete an expired key in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFlushAll_RemovesEveryKeyWithOneRecordAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	setRange(t, db, 0, 50)
	before := db.Stats().Seq
	if err := db.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Keys != 0 || st.Seq != before+1 {
		t.Fatalf("after FlushAll: %d keys, seq %d (want 0 keys, seq %d: one record)", st.Keys, st.Seq, before+1)
	}
	mustSet(t, db, "after", "1")
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	wantPrefix(t, db, 0, 50)
	wantValue(t, db, "after", "1")
	if db.Len() != 1 {
		t.Fatalf("Len = %d, want 1", db.Len())
	}
}

// A deadline past what int64 nanoseconds hold (April 2262) must keep the
// key, through every path that writes an expiry and across the log and a
// snapshot; one before 1678 must not wrap into the future either. (UnixNano
// of such times is undefined: year 3000 came back negative and the key
// read as expired.)
func TestTTL_FarFutureAndFarPastDeadlinesDoNotWrap(t *testing.T) {
	for _, via := range []string{"log", "snapshot"} {
		t.Run(via, func(t *testing.T) {
			clock := newFakeClock()
			dir := t.TempDir()
			db := openT(t, dir, ttlOptions(clock))
			far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
			farthest := time.UnixMilli(math.MaxInt64)
			past := time.UnixMilli(math.MinInt64)
			if err := db.SetWithTTL([]byte("db"), []byte("1"), far); err != nil {
				t.Fatal(err)
			}
			var b Batch
			b.SetWithTTL([]byte("batch"), []byte("2"), farthest)
			b.SetWithTTL([]byte("past"), []byte("3"), past)
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			if err := db.Set([]byte("tx"), []byte("4")); err != nil {
				t.Fatal(err)
			}
			if err := db.Set([]byte("txpast"), []byte("5")); err != nil {
				t.Fatal(err)
			}
			err := db.Update(func(tx *Tx) error {
				if _, err := tx.Expire([]byte("tx"), farthest); err != nil {
					return err
				}
				_, err := tx.Expire([]byte("txpast"), past)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			check := func(db *DB) {
				t.Helper()
				for _, k := range []string{"db", "batch", "tx"} {
					if _, err := db.Get([]byte(k)); err != nil {
						t.Fatalf("Get(%q) after a far-future expiry: %v", k, err)
					}
					at, ok := db.ExpiresAt([]byte(k))
					if !ok || at.Before(time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)) {
						t.Fatalf("ExpiresAt(%q) = %v, %v; want the latest instant the engine holds", k, at, ok)
					}
				}
				wantMissing(t, db, "past")
				wantMissing(t, db, "txpast")
			}
			check(db)
			if via == "snapshot" {
				if _, err := db.Snapshot(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			db = openT(t, dir, ttlOptions(clock))
			defer db.Close()
			check(db)
		})
	}
}

// Versions (WATCH) follow Redis's rules for flushes and expiry: a flush
// changes the version of a key that existed and not of one that did not;
// a key that expires changes; a key already expired when its version was
// read does not change when the sweep or a flush removes it; and a write
// of a missing key that then expires away is never missed.
func TestVersion_FlushAndExpiryChangeOnlyKeysThatExisted(t *testing.T) {
	clock := newFakeClock()
	db := openT(t, t.TempDir(), ttlOptions(clock))
	defer db.Close()
	k := func(s string) []byte { return []byte(s) }
	mustSet(t, db, "live", "1")
	if err := db.SetWithTTL(k("stale"), k("1"), clock.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := db.SetWithTTL(k("expiring"), k("1"), clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	missing, live, stale, expiring := db.Version(k("missing")), db.Version(k("live")), db.Version(k("stale")), db.Version(k("expiring"))

	db.sweepOnce() // removes "stale"
	if v := db.Version(k("stale")); v != stale {
		t.Fatalf("the sweep of a key already expired changed its version: %d -> %d", stale, v)
	}
	clock.Advance(2 * time.Hour)
	if v := db.Version(k("expiring")); v == expiring {
		t.Fatal("a key that expired kept its version")
	}
	if err := db.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if v := db.Version(k("missing")); v != missing {
		t.Fatalf("FLUSHALL changed a missing key's version: %d -> %d", missing, v)
	}
	if v := db.Version(k("stale")); v != stale {
		t.Fatalf("FLUSHALL changed a stale key's version: %d -> %d", stale, v)
	}
	if v := db.Version(k("live")); v == live {
		t.Fatal("FLUSHALL kept the version of a key that existed")
	}
	// A missing key written with a TTL that then expires (swept or not).
	missing = db.Version(k("missing"))
	if err := db.SetWithTTL(k("missing"), k("1"), clock.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if v := db.Version(k("missing")); v == missing {
		t.Fatal("a write of a missing key that expired since was missed")
	}
	db.sweepOnce()
	if v := db.Version(k("missing")); v == missing {
		t.Fatal("a write of a missing key that was swept since was missed")
	}
}

// OnExpired reports the keys the sweep deleted — those it sampled and
// those a reader found expired — and not a key a write replaced after it
// expired; after remove nothing more is reported.
func TestOnExpired_ReportsTheKeysTheSweepDeleted(t *testing.T) {
	clock := newFakeClock()
	db := openT(t, t.TempDir(), ttlOptions(clock))
	var got []string
	remove := db.OnExpired(func(keys []string) { got = append(got, keys...) })
	soon, later := clock.Now().Add(time.Second), clock.Now().Add(time.Hour)
	for _, k := range []string{"gone", "seen", "rewritten"} {
		if err := db.SetWithTTL([]byte(k), []byte("v"), soon); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SetWithTTL([]byte("later"), []byte("v"), later); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("kept"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if err := db.Set([]byte("rewritten"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, db, "seen") // handed to the sweeper
	db.sweepExpired()
	slices.Sort(got)
	if want := []string{"gone", "seen"}; !slices.Equal(got, want) {
		t.Fatalf("OnExpired got %q, want %q", got, want)
	}

	remove()
	got = nil
	if err := db.SetWithTTL([]byte("after"), []byte("v"), clock.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	before := db.Stats().ExpiredKeys
	db.sweepExpired()
	if n := db.Stats().ExpiredKeys - before; n != 1 || got != nil {
		t.Fatalf("after remove: the sweep deleted %d keys and reported %q; want 1 and nothing", n, got)
	}
}

// ttlIndexMismatch compares every shard's ttl map with its records: a key
// is in the map, with its record's expiry, exactly while its record has
// one. It returns the first difference, or "".
func ttlIndexMismatch(m *memtable) string {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.RLock()
		want := map[string]int64{}
		for _, v := range s.slots {
			if v == emptySlot || v == tombSlot {
				continue
			}
			if k, _, exp, _ := m.arena.record(ref(v & refMask)); exp != 0 {
				want[string(k)] = exp
			}
		}
		got := make(map[string]int64, len(s.ttl))
		for k, at := range s.ttl {
			got[k] = at
		}
		s.mu.RUnlock()
		for k, at := range want {
			if g, ok := got[k]; !ok || g != at {
				return fmt.Sprintf("shard %d: key %q expires at %d, its ttl entry says %d (present: %v)", i, k, at, g, ok)
			}
		}
		for k, at := range got {
			if _, ok := want[k]; !ok {
				return fmt.Sprintf("shard %d: ttl entry %q (%d) for a key without expiry or record", i, k, at)
			}
		}
	}
	return ""
}

// The ttl map (what active expiry samples) follows every write, including
// the ones that skip it because they keep the key's expiry: random writes
// that set, keep, change and drop expiries, overwrite in place and in a new
// slot, delete, and touch collections, each checked against the records.
func TestTTLIndex_FollowsEveryRecordsExpiry(t *testing.T) {
	db := openT(t, t.TempDir(), Options{Sync: SyncNone})
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Now().Add(time.Hour)
	for step := range 4000 {
		k := []byte(fmt.Sprintf("k%d", rng.IntN(24)))
		at := base.Add(time.Duration(rng.IntN(3)) * time.Second) // few distinct expiries: many writes keep theirs
		val := bytes.Repeat([]byte("v"), 1+rng.IntN(40))         // sizes that sometimes keep the slot
		op := rng.IntN(9)
		err := db.Update(func(tx *Tx) error {
			var err error
			switch op {
			case 0:
				err = tx.Set(k, val)
			case 1:
				err = tx.SetWithTTL(k, val, at)
			case 2:
				err = tx.SetKeepTTL(k, val)
			case 3:
				_, err = tx.Delete(k)
			case 4:
				_, err = tx.Expire(k, at)
			case 5:
				_, err = tx.Persist(k)
			case 6:
				_, err = tx.HSet(append([]byte("h"), k...), []byte("f"), val)
			case 7:
				_, err = tx.Expire(append([]byte("h"), k...), at)
			default:
				_, err = tx.Delete(append([]byte("h"), k...))
			}
			if errors.Is(err, ErrWrongType) || errors.Is(err, ErrNotFound) {
				return nil
			}
			return err
		})
		if err != nil && !errors.Is(err, errNoWrites) {
			t.Fatalf("step %d, op %d on %s: %v", step, op, k, err)
		}
		if msg := ttlIndexMismatch(db.mem); msg != "" {
			t.Fatalf("step %d, after op %d on %s: %s", step, op, k, msg)
		}
	}
}
