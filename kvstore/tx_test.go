package kvstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// incr adds one to the decimal counter under key, in one transaction.
func incr(db *DB, key string) error {
	return db.Update(func(tx *Tx) error {
		n := 0
		if v, err := tx.Get([]byte(key)); err == nil {
			if n, err = strconv.Atoi(string(v)); err != nil {
				return err
			}
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		return tx.Set([]byte(key), []byte(strconv.Itoa(n+1)))
	})
}

func TestUpdate_FiftyGoroutinesIncrementExactlyAndShareFsyncs(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	const workers, each = 50, 40
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := incr(db, "n"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	wantValue(t, db, "n", strconv.Itoa(workers*each))
	// Transactions are not serialised on the disk: concurrent ones share
	// group commits (one fsync per transaction would be 2000 fsyncs).
	if st := db.Stats(); st.Fsyncs > workers*each/2 {
		t.Fatalf("%d fsyncs for %d concurrent transactions: they did not share group commits", st.Fsyncs, workers*each)
	}
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	wantValue(t, db, "n", strconv.Itoa(workers*each))
}

func TestUpdate_RacingPlainSetsIsLinearizable(t *testing.T) {
	db := openT(t, t.TempDir(), Options{Sync: SyncNone})
	defer db.Close()
	// A setter writes k=1,2,3,... with plain Set; after each Set returns it
	// publishes the value. A transaction that starts after a publish must
	// see that value or a later one, and transactions must never see the
	// value go back.
	var acked atomic.Int64
	stop := make(chan struct{})
	var setter, readers sync.WaitGroup
	setter.Add(1)
	go func() {
		defer setter.Done()
		for i := int64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Set([]byte("k"), []byte(strconv.FormatInt(i, 10))); err != nil {
				t.Error(err)
				return
			}
			acked.Store(i)
		}
	}()
	for r := 0; r < 4; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var last int64
			for i := 0; i < 3000; i++ {
				before := acked.Load()
				var seen int64
				err := db.Update(func(tx *Tx) error {
					v, err := tx.Get([]byte("k"))
					if errors.Is(err, ErrNotFound) {
						return nil
					}
					seen, _ = strconv.ParseInt(string(v), 10, 64)
					// Write what was seen, so the transaction takes part in the order.
					return tx.Set([]byte(fmt.Sprintf("seen-%d", r)), v)
				})
				if err != nil {
					t.Error(err)
					return
				}
				if seen < before || seen < last {
					t.Errorf("transaction saw k=%d after k=%d was acknowledged (and %d seen before)", seen, before, last)
					return
				}
				last = seen
			}
		}()
	}
	readers.Wait()
	close(stop)
	setter.Wait()
}

func TestTxDelete_ExistedIsExactUnderFourConcurrentDeleters(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	defer db.Close()
	const keys = 500
	var b Batch
	for i := 0; i < keys; i++ {
		b.Set([]byte(fmt.Sprintf("k%d", i)), []byte("v"))
	}
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	var deleted atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < keys; i++ {
				err := db.Update(func(tx *Tx) error {
					existed, err := tx.Delete([]byte(fmt.Sprintf("k%d", i)))
					if existed {
						deleted.Add(1)
					}
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := deleted.Load(); n != keys {
		t.Fatalf("4 deleters of the same %d keys reported %d deletions", keys, n)
	}
}

func TestVersion_ChangesWithEveryWriteOfTheKeyForWatch(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	defer db.Close()
	k := []byte("k")
	seen := map[uint64]string{}
	note := func(what string) {
		t.Helper()
		v := db.Version(k)
		if prev, dup := seen[v]; dup {
			t.Fatalf("version %d after %s is the same as after %s", v, what, prev)
		}
		seen[v] = what
	}
	note("nothing")
	mustSet(t, db, "k", "1")
	note("set")
	mustSet(t, db, "other", "x")
	if v := db.Version(k); seen[v] != "set" {
		t.Fatal("a write of another key changed k's version")
	}
	if err := db.Delete(k); err != nil {
		t.Fatal(err)
	}
	note("delete")
	mustSet(t, db, "k", "1")
	note("set again, same value")
	// Inside a transaction: the version matches until someone else writes.
	before := db.Version(k)
	err := db.Update(func(tx *Tx) error {
		if v := tx.Version(k); v != before {
			t.Errorf("tx.Version = %d, db.Version = %d with no write between", v, before)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, db, "k", "2")
	err = db.Update(func(tx *Tx) error {
		if tx.Version(k) == before {
			t.Error("tx.Version unchanged after a write: a WATCH would miss it")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUpdate_FnErrorWritesNothing(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	defer db.Close()
	boom := errors.New("boom")
	err := db.Update(func(tx *Tx) error {
		tx.Set([]byte("a"), []byte("1"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if _, err := db.Get([]byte("a")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a write of a failed transaction is visible: %v", err)
	}
	mustSet(t, db, "b", "2") // the sequence number was not used up: the log has no gap
	db.Close()
	db = openT(t, db.Dir(), Options{})
	defer db.Close()
	wantValue(t, db, "b", "2")
}

func TestUpdate_SeesWritesEnqueuedBeforeItButNotYetApplied(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	defer db.Close()
	var b Batch
	b.Set([]byte("k"), []byte("pipelined"))
	wait, err := db.Apply(&b, WriteOptions{NoSyncWait: true})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := db.Update(func(tx *Tx) error {
		v, err := tx.Get([]byte("k"))
		got = string(v)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got != "pipelined" {
		t.Fatalf("transaction after an enqueued write read %q", got)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

func TestApply_NoSyncWaitBurstRecoversAsAPrefixInCallOrder(t *testing.T) {
	src := t.TempDir()
	db := openT(t, src, Options{Sync: SyncNone})
	const total = 40
	var wait func() error
	for i := 0; i < total; i++ {
		var b Batch
		b.Set([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprintf("value-%03d", i)))
		var err error
		if wait, err = db.Apply(&b, WriteOptions{NoSyncWait: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < total; i++ {
		wantValue(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	db.Close()
	// Cut the log at every record boundary: what survives is always a
	// prefix of the calls, never a later one without an earlier one.
	seg := segmentsOf(t, src)[0]
	full, err := os.ReadFile(seg.Path)
	if err != nil {
		t.Fatal(err)
	}
	ends := recordEnds(t, full)
	for n, end := range ends {
		dir := copyDir(t, src)
		if err := os.Truncate(filepath.Join(dir, filepath.Base(seg.Path)), int64(end)); err != nil {
			t.Fatal(err)
		}
		db := openT(t, dir, Options{Sync: SyncNone})
		wantPrefix(t, db, n+1, total)
		db.Close()
	}
}

func TestApplySet_NoSyncWaitKeepsCallOrderWithBatchesAndCountsTTLKeys(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	var wait func() error
	for i := 0; i < 100; i++ {
		var err error
		at := time.Time{}
		if i%2 == 0 {
			at = time.Now().Add(time.Hour)
		}
		if wait, err = db.ApplySet([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprintf("value-%03d", i)), at, WriteOptions{NoSyncWait: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.KeysWithTTL != 50 || st.Keys != 100 {
		t.Fatalf("Keys %d, KeysWithTTL %d; want 100 and 50", st.Keys, st.KeysWithTTL)
	}
	if _, err := db.ApplySet(nil, []byte("v"), time.Time{}, WriteOptions{}); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("ApplySet with an empty key: %v", err)
	}
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	wantPrefix(t, db, 100, 100)
	if _, ok := db.ExpiresAt([]byte("k000")); !ok {
		t.Fatal("the TTL of an ApplySet was lost across reopen")
	}
}
