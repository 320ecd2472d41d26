package kvstore

import (
	"context"
	"fmt"
	"runtime"
	"testing"
)

// scanCursorAll runs a whole ScanCursor from cursor and counts each key.
func scanCursorAll(t *testing.T, db *DB, cursor uint64, count int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for {
		keys, next, err := db.ScanCursor(cursor, count)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[string(k)]++
		}
		if next == 0 {
			return seen
		}
		if next <= cursor {
			t.Fatalf("cursor went from %d back to %d", cursor, next)
		}
		cursor = next
	}
}

// The scan order is rebuilt the same from the log and from a snapshot, so
// a cursor handed out before a restart resumes after it; deletes and a
// flush leave it, and every live key is returned exactly once.
func TestScanCursor_OrderIsTheSameAfterRestartFromLogOrSnapshot(t *testing.T) {
	for _, via := range []string{"log", "snapshot"} {
		t.Run(via, func(t *testing.T) {
			dir := t.TempDir()
			db := openT(t, dir, Options{CompactionThreshold: -1})
			const n = 2000
			for i := range n {
				if err := db.Set(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < n; i += 4 {
				if err := db.Delete(fmt.Appendf(nil, "k%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Set([]byte("k1"), []byte("overwritten")); err != nil {
				t.Fatal(err)
			}
			if via == "snapshot" {
				if _, err := db.Snapshot(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			first, cursor, err := db.ScanCursor(0, 300)
			if err != nil || cursor == 0 {
				t.Fatalf("first page: %d keys, cursor %d, %v", len(first), cursor, err)
			}
			before := scanCursorAll(t, db, cursor, 300)
			db.Close()
			db = openT(t, dir, Options{CompactionThreshold: -1})
			defer db.Close()
			after := scanCursorAll(t, db, cursor, 300)
			if len(after) != len(before) {
				t.Fatalf("from cursor %d: %d keys before the restart, %d after", cursor, len(before), len(after))
			}
			for k := range before {
				if after[k] != 1 {
					t.Fatalf("%s: %d times after the restart", k, after[k])
				}
			}
			for _, k := range first {
				after[string(k)]++
			}
			for i := range n {
				want := 1
				if i%4 == 0 {
					want = 0
				}
				if got := after[fmt.Sprintf("k%d", i)]; got != want {
					t.Fatalf("k%d returned %d times, want %d", i, got, want)
				}
			}
			if err := db.FlushAll(); err != nil {
				t.Fatal(err)
			}
			if got := scanCursorAll(t, db, 0, 10); len(got) != 0 {
				t.Fatalf("after FLUSHALL the scan returned %d keys", len(got))
			}
		})
	}
}

// The scan order is a second index of every key, so it must stay small: a
// key costs it at most 16 bytes of heap (13.4 measured: an 8-byte item in
// B-tree nodes about 60 % full; a 16-byte item and its share of the B-tree
// cost about 17 to 25). The memtable and the records stay alive across the
// measure: a measure that let them go counted their freeing against the
// order (it read 5.3 bytes here, and in one CI run the heap shrank past zero).
func TestScanOrder_CostsAtMost16BytesAKey(t *testing.T) {
	const keys = 200_000
	m := newMemtable()
	refs := make([]ref, keys)
	for i := range refs {
		refs[i] = m.arena.alloc(fmt.Appendf(nil, "key:%012d", i), []byte("v"), KindString, nil, 0, uint64(i+1))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	st := m.newScanTree()
	for _, r := range refs {
		m.applyToScanTree(st, &treeOp{put: r})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if st.Len() != keys {
		t.Fatalf("the scan order holds %d keys, want %d", st.Len(), keys)
	}
	// Signed: were the memtable or refs collected by the second GC, the
	// heap would shrink (they are kept alive below, as st is).
	perKey := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / keys
	t.Logf("the scan order costs %.1f bytes a key", perKey)
	if perKey > 16 {
		t.Fatalf("the scan order costs %.1f bytes a key, want at most 16", perKey)
	}
	runtime.KeepAlive(st)
	runtime.KeepAlive(m)
	runtime.KeepAlive(refs)
}

// A cursor may fall anywhere, also between keys that share the top bits of
// their hashes: a scan from it returns exactly the keys whose hash is not
// below it, in hash order.
func TestScanOrder_ResumesExactlyAtAnyCursor(t *testing.T) {
	db, err := Open(t.TempDir(), Options{Sync: SyncNone, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 3000
	for i := range n {
		if err := db.Set(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	for _, cursor := range []uint64{1, scanHash([]byte("k17")), scanHash([]byte("k17")) + 1, scanHash([]byte("k2999")) - 1, 1 << 63} {
		keys, next, err := db.ScanCursor(cursor, n)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for i := range n {
			if scanHash(fmt.Appendf(nil, "k%d", i)) >= cursor {
				want++
			}
		}
		if len(keys) != want || next != 0 {
			t.Fatalf("from cursor %#x: %d keys (next %#x), want %d and the end", cursor, len(keys), next, want)
		}
		for i, k := range keys {
			if h := scanHash(k); h < cursor || i > 0 && h < scanHash(keys[i-1]) {
				t.Fatalf("from cursor %#x: key %q (hash %#x) out of order", cursor, k, h)
			}
		}
	}
}
