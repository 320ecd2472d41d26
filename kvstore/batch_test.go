package kvstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestBatch_AppliesEveryOperationAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	mustSet(t, db, "gone", "x")
	var b Batch
	b.Set([]byte("a"), []byte("1"))
	b.Set([]byte("b"), []byte("2"))
	b.Set([]byte("a"), []byte("3")) // later operations win
	b.Delete([]byte("gone"))
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	check := func(db *DB) {
		t.Helper()
		wantValue(t, db, "a", "3")
		wantValue(t, db, "b", "2")
		if _, err := db.Get([]byte("gone")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted in the batch, still there: %v", err)
		}
	}
	check(db)
	if st := db.Stats(); st.Sets != 4 || st.Deletes != 1 {
		t.Fatalf("stats count %d sets and %d deletes, want 4 and 1", st.Sets, st.Deletes)
	}
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	check(db)
	if st := db.Stats(); st.ReplayedRecords != 2 {
		t.Fatalf("replayed %d records, want 2 (one set, one batch)", st.ReplayedRecords)
	}
}

func TestBatch_CutAnywhereInsideItKeepsNoneOfIt(t *testing.T) {
	src := t.TempDir()
	db := openT(t, src, Options{})
	mustSet(t, db, "before", "ok")
	var b Batch
	for i := 0; i < 5; i++ {
		b.Set([]byte(fmt.Sprintf("batch-%d", i)), bytes.Repeat([]byte{'v'}, 10))
	}
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	db.Close()
	seg := segmentsOf(t, src)[0].Path
	full, _ := os.ReadFile(seg)
	ends := recordEnds(t, full)
	for cut := ends[0] + 1; cut < ends[1]; cut++ {
		dir := copyDir(t, src)
		if err := os.Truncate(filepath.Join(dir, filepath.Base(seg)), int64(cut)); err != nil {
			t.Fatal(err)
		}
		db := openT(t, dir, Options{})
		wantValue(t, db, "before", "ok")
		for i := 0; i < 5; i++ {
			if _, err := db.Get([]byte(fmt.Sprintf("batch-%d", i))); !errors.Is(err, ErrNotFound) {
				t.Fatalf("cut at %d: batch-%d survived a cut inside its batch", cut, i)
			}
		}
		db.Close()
	}
}

func TestBatch_BoundsAreCheckedBeforeTheDisk(t *testing.T) {
	db := openT(t, t.TempDir(), Options{MaxValueSize: 4})
	defer db.Close()
	var b Batch
	b.Set([]byte("ok"), []byte("1234"))
	b.Set([]byte("big"), []byte("12345"))
	if err := db.Write(&b); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("Write = %v, want ErrValueTooLarge", err)
	}
	if _, err := db.Get([]byte("ok")); !errors.Is(err, ErrNotFound) {
		t.Fatal("part of a rejected batch was applied")
	}
	b.Reset()
	b.Delete(nil)
	if err := db.Write(&b); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("Write with an empty key = %v, want ErrEmptyKey", err)
	}
	if err := db.Write(&Batch{}); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
}

// A batch reused for run after run (a server connection's) copies keys and
// values into its own buffer: no allocation per write once warmed up.
func TestBatch_ReusedAllocatesNothingPerSet(t *testing.T) {
	var b Batch
	key, value := []byte("key:000000000001"), bytes.Repeat([]byte("v"), 100)
	run := func() {
		b.Reset()
		for range 64 {
			b.Set(key, value)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocations per run of 64 sets into a reused batch, want 0", n)
	}
}

// The engine takes a batch's bytes when Apply returns: reusing the batch
// (Reset, new sets over the same buffer) before the wait cannot change what
// is stored.
func TestBatch_ReuseBeforeTheWaitDoesNotChangeWhatIsStored(t *testing.T) {
	db := openT(t, t.TempDir(), Options{Sync: SyncAlways})
	defer db.Close()
	var b Batch
	b.Set([]byte("a"), []byte("first"))
	wait, err := db.Apply(&b, WriteOptions{NoSyncWait: true})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Set([]byte("b"), []byte("later"))
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Get([]byte("a")); err != nil || string(got) != "first" {
		t.Fatalf("a = %q, %v; want first", got, err)
	}
	if _, err := db.Get([]byte("b")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("b was never applied, Get = %v", err)
	}
}
