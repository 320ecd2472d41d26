package kvstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openT(t *testing.T, dir string, o Options) *DB {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	db, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return db
}

func mustSet(t *testing.T, db *DB, k, v string) {
	t.Helper()
	if err := db.Set([]byte(k), []byte(v)); err != nil {
		t.Fatalf("Set(%q): %v", k, err)
	}
}

func wantValue(t *testing.T, db *DB, k, want string) {
	t.Helper()
	got, err := db.Get([]byte(k))
	if err != nil {
		t.Fatalf("Get(%q): %v", k, err)
	}
	if string(got) != want {
		t.Fatalf("Get(%q) = %q, want %q", k, got, want)
	}
}

func TestSetGetDelete_SurviveReopenUnderEveryPolicy(t *testing.T) {
	for _, p := range []SyncPolicy{SyncAlways, SyncPeriodic, SyncNone} {
		t.Run(p.String(), func(t *testing.T) {
			dir := t.TempDir()
			db := openT(t, dir, Options{Sync: p})
			mustSet(t, db, "a", "1")
			mustSet(t, db, "b", "2")
			mustSet(t, db, "a", "3")
			if err := db.Delete([]byte("b")); err != nil {
				t.Fatal(err)
			}
			bin := []byte{0, 0xff, '\n', 0}
			if err := db.Set(bin, bin); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openT(t, dir, Options{Sync: p})
			defer db.Close()
			wantValue(t, db, "a", "3")
			if _, err := db.Get([]byte("b")); !errors.Is(err, ErrNotFound) {
				t.Fatalf("deleted key: err = %v, want ErrNotFound", err)
			}
			if v, err := db.Get(bin); err != nil || !bytes.Equal(v, bin) {
				t.Fatalf("binary key: %q, %v", v, err)
			}
			if st := db.Stats(); st.Keys != 2 || st.ReplayedRecords != 5 {
				t.Fatalf("stats after reopen: keys=%d replayed=%d, want 2 and 5", st.Keys, st.ReplayedRecords)
			}
		})
	}
}

func TestSizeBounds_AreTypedErrorsBeforeTheDisk(t *testing.T) {
	db := openT(t, t.TempDir(), Options{MaxKeySize: 8, MaxValueSize: 16})
	defer db.Close()
	before := db.Stats().LogBytes
	cases := []struct {
		key, value []byte
		want       error
	}{
		{nil, []byte("v"), ErrEmptyKey},
		{bytes.Repeat([]byte("k"), 9), nil, ErrKeyTooLarge},
		{[]byte("k"), bytes.Repeat([]byte("v"), 17), ErrValueTooLarge},
	}
	for _, c := range cases {
		if err := db.Set(c.key, c.value); !errors.Is(err, c.want) {
			t.Errorf("Set(%d-byte key, %d-byte value) = %v, want %v", len(c.key), len(c.value), err, c.want)
		}
	}
	if after := db.Stats().LogBytes; after != before {
		t.Fatalf("rejected writes touched the log: %d -> %d bytes", before, after)
	}
	mustSet(t, db, "12345678", "0123456789abcdef") // exactly at the bounds
}

func TestScan_PagesInOrderByPrefixWithCursor(t *testing.T) {
	db := openT(t, t.TempDir(), Options{Sync: SyncNone})
	defer db.Close()
	for i := 99; i >= 0; i-- {
		mustSet(t, db, fmt.Sprintf("user:%03d", i), fmt.Sprint(i))
		mustSet(t, db, fmt.Sprintf("order:%03d", i), "x")
	}
	mustSet(t, db, "user", "not under the prefix user:")
	var got []string
	var after []byte
	pages := 0
	for {
		page, err := db.Scan(ScanOptions{Prefix: []byte("user:"), After: after, Limit: 30})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, e := range page.Entries {
			got = append(got, string(e.Key))
		}
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	if pages != 4 || len(got) != 100 {
		t.Fatalf("got %d keys in %d pages, want 100 in 4", len(got), pages)
	}
	for i, k := range got {
		if want := fmt.Sprintf("user:%03d", i); k != want {
			t.Fatalf("key %d = %q, want %q", i, k, want)
		}
	}
	// A cursor before the prefix starts at the prefix.
	page, _ := db.Scan(ScanOptions{Prefix: []byte("user:"), After: []byte("a"), Limit: 1})
	if len(page.Entries) != 1 || string(page.Entries[0].Key) != "user:000" {
		t.Fatalf("scan after a key below the prefix: %+v", page.Entries)
	}
}

func TestOpen_SecondOwnerIsRefusedWithThePID(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	defer db.Close()
	_, err := Open(dir, Options{Logger: quietLogger()})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if want := fmt.Sprintf("PID %d", os.Getpid()); !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Fatalf("error %q does not name the holder (%s)", err, want)
	}
}

func TestClose_LaterCallsSayClosed(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	mustSet(t, db, "k", "v")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("k"), []byte("v")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Set after Close = %v", err)
	}
	if _, err := db.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close = %v", err)
	}
	if _, err := db.Snapshot(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Snapshot after Close = %v", err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
}

func TestGroupCommit_ConcurrentWritersShareFsyncs(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	defer db.Close()
	const writers, each = 32, 20
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := db.Set([]byte(fmt.Sprintf("w%d-%d", w, i)), []byte("v")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := db.Stats()
	if st.Keys != writers*each {
		t.Fatalf("keys = %d, want %d", st.Keys, writers*each)
	}
	// Every record was synced, and with 32 writers fsyncs were shared.
	if st.Fsyncs >= writers*each {
		t.Fatalf("fsyncs = %d for %d writes: no group commit", st.Fsyncs, writers*each)
	}
	if st.RecordsPerFsync <= 1 {
		t.Fatalf("records per fsync = %.2f", st.RecordsPerFsync)
	}
}
