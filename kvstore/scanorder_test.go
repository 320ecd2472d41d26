package kvstore

import (
	"context"
	"fmt"
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
