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
