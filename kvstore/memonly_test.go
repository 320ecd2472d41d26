package kvstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// emptyDirs makes the working directory and the temporary directory fresh
// empty ones for the test, and returns a check that both are still empty.
func emptyDirs(t *testing.T) (check func()) {
	t.Helper()
	wd, tmp := t.TempDir(), t.TempDir()
	t.Chdir(wd)
	t.Setenv("TMPDIR", tmp)
	return func() {
		t.Helper()
		for _, dir := range []string{wd, tmp} {
			var found []string
			_ = filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
				if err == nil && path != dir {
					found = append(found, path)
				}
				return nil
			})
			if len(found) > 0 {
				t.Fatalf("a memory-only store left files behind: %v", found)
			}
		}
	}
}

func openMemoryOnlyT(t *testing.T, o Options) *DB {
	t.Helper()
	o.MemoryOnly = true
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	db, err := Open("", o)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestMemoryOnly_WritesNoFileAndKeepsNothing(t *testing.T) {
	check := emptyDirs(t)
	db := openMemoryOnlyT(t, Options{ExpirySweepInterval: time.Millisecond})
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.SetWithTTL([]byte("gone"), []byte("v"), time.Now().Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.HSet([]byte("h"), []byte("f"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LPush([]byte("l"), []byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ZAdd([]byte("z"), ZMember{Member: []byte("m"), Score: 2}); err != nil {
		t.Fatal(err)
	}
	b := new(Batch)
	b.Set([]byte("b1"), []byte("x"))
	b.Delete([]byte("k"))
	if err := db.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *Tx) error { return tx.Set([]byte("t"), []byte("y")) }); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("b1")); err != nil || string(v) != "x" {
		t.Fatalf("Get b1 = %q, %v", v, err)
	}
	if _, err := db.Get([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get k after the batch's delete: %v, want ErrNotFound", err)
	}
	if v, err := db.HGet([]byte("h"), []byte("f")); err != nil || string(v) != "1" {
		t.Fatalf("HGet = %q, %v", v, err)
	}
	if got, err := db.LRange([]byte("l"), 0, -1); err != nil || len(got) != 2 || string(got[0]) != "b" {
		t.Fatalf("LRange = %q, %v", got, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for db.Stats().ExpiredKeys == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // the sweep deletes the expired key through the pipeline
	}
	if db.Stats().ExpiredKeys == 0 {
		t.Fatal("the expiry sweep deleted nothing")
	}
	st := db.Stats()
	if !st.MemoryOnly || st.SyncPolicy != "none" || st.LogBytes != 0 || st.LogSegments != 0 || st.Keys != 5 {
		t.Fatalf("Stats = %+v", st)
	}
	if !db.MemoryOnly() || db.Dir() != "" || db.SyncPolicy() != SyncNone {
		t.Fatalf("MemoryOnly %v, Dir %q, SyncPolicy %v", db.MemoryOnly(), db.Dir(), db.SyncPolicy())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
	if _, err := db.Get([]byte("b1")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
	check()

	again := openMemoryOnlyT(t, Options{})
	defer again.Close()
	if again.Len() != 0 {
		t.Fatalf("a new memory-only store has %d keys", again.Len())
	}
}

func TestMemoryOnly_SnapshotIsRefusedAndCheckpointCopiesOut(t *testing.T) {
	db := openMemoryOnlyT(t, Options{})
	defer db.Close()
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Snapshot(context.Background()); !errors.Is(err, ErrMemoryOnly) {
		t.Fatalf("Snapshot: %v, want ErrMemoryOnly", err)
	}
	// A copy the caller asks for still works, into a directory a durable
	// store opens.
	dst := filepath.Join(t.TempDir(), "copy")
	if _, err := db.Checkpoint(context.Background(), dst); err != nil {
		t.Fatal(err)
	}
	durable := openT(t, dst, Options{})
	defer durable.Close()
	if v, err := durable.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("the checkpoint holds %q, %v", v, err)
	}
}

func TestOpen_MemoryOnlyAndDirectoryDisagree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := Open(dir, Options{MemoryOnly: true, Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "memory-only store has no data directory") {
		t.Fatalf("Open(dir, MemoryOnly): %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused open created %s: %v", dir, err)
	}
	if _, err := Open("", Options{Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "no data directory given") {
		t.Fatalf(`Open(""): %v`, err)
	}
}

// scanAll pages through db's keys under prefix, limit at a time.
func scanAll(t *testing.T, db *DB, prefix string, limit int) []string {
	t.Helper()
	var keys []string
	var after []byte
	for {
		page, err := db.Scan(ScanOptions{Prefix: []byte(prefix), After: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			keys = append(keys, string(e.Key)+"="+string(e.Value))
		}
		if page.Next == nil {
			return keys
		}
		after = page.Next
	}
}

// TestMemoryOnly_KeyOrderIsBuiltAtItsFirstUse: a memory-only store keeps
// no key order until an ordered Scan or a checkpoint needs it; then it
// scans exactly as a durable store does, before and after more writes.
func TestMemoryOnly_KeyOrderIsBuiltAtItsFirstUse(t *testing.T) {
	memory := openMemoryOnlyT(t, Options{})
	defer memory.Close()
	durable := openT(t, t.TempDir(), Options{Sync: SyncNone})
	defer durable.Close()
	both := func(fn func(db *DB) error) {
		t.Helper()
		for _, db := range []*DB{memory, durable} {
			if err := fn(db); err != nil {
				t.Fatal(err)
			}
		}
	}
	same := func(when string) {
		t.Helper()
		for _, prefix := range []string{"", "a:", "b:1"} {
			got, want := scanAll(t, memory, prefix, 7), scanAll(t, durable, prefix, 7)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("%s, prefix %q: memory-only scans %v, durable %v", when, prefix, got, want)
			}
		}
	}
	for i := range 300 {
		k := []byte(fmt.Sprintf("%c:%d", "abc"[i*7%3], i*7919%1000))
		both(func(db *DB) error { return db.Set(k, []byte(fmt.Sprint(i))) })
		if i%5 == 0 {
			both(func(db *DB) error { return db.Delete([]byte(fmt.Sprintf("a:%d", i*13%1000))) })
		}
	}
	both(func(db *DB) error { _, err := db.HSet([]byte("b:1h"), []byte("f"), []byte("v")); return err })
	if st := memory.Stats(); st.MemoryBytes <= 0 {
		t.Fatalf("MemoryBytes = %d before the key order is built", st.MemoryBytes)
	}
	same("at the first scan")
	for i := range 100 {
		k := []byte(fmt.Sprintf("b:%d", i*31%500))
		both(func(db *DB) error { return db.Set(k, []byte("x")) })
		both(func(db *DB) error { return db.Delete([]byte(fmt.Sprintf("c:%d", i*7919%1000))) })
	}
	same("after more writes")
	both(func(db *DB) error { return db.FlushAll() })
	both(func(db *DB) error { return db.Set([]byte("a:only"), []byte("1")) })
	same("after a flush")
}

// TestMemoryOnly_CheckpointBuildsTheKeyOrderWhileWritersGoOn: the first
// checkpoint of a memory-only store builds the key order under writers
// (run with -race) and copies every key written before it.
func TestMemoryOnly_CheckpointBuildsTheKeyOrderWhileWritersGoOn(t *testing.T) {
	db := openMemoryOnlyT(t, Options{})
	defer db.Close()
	for i := range 2000 {
		if err := db.Set([]byte(fmt.Sprintf("k%05d", i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := db.Set([]byte(fmt.Sprintf("w%05d", i%3000)), []byte("v")); err != nil {
				done <- err
				return
			}
		}
	}()
	dst := filepath.Join(t.TempDir(), "copy")
	info, err := db.Checkpoint(context.Background(), dst)
	close(stop)
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	copyDB := openT(t, dst, Options{})
	defer copyDB.Close()
	if got := len(scanAll(t, copyDB, "k", 1000)); got != 2000 || info.Keys < 2000 {
		t.Fatalf("the checkpoint holds %d k keys (info.Keys %d), want 2000", got, info.Keys)
	}
}

// BenchmarkSetMemoryOnlyNewKeys measures a memory-only store's SET of a
// key it does not hold yet (100-byte values, redis-benchmark's key shape,
// in a scattered order), as redis-benchmark -r's first turn sends: the
// engine's CPU per SET without the network.
func BenchmarkSetMemoryOnlyNewKeys(b *testing.B) {
	db := benchOpen(b, "", Options{MemoryOnly: true})
	defer db.Close()
	value := make([]byte, 100)
	key := make([]byte, 0, 32)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key = fmt.Appendf(key[:0], "key:%012d", uint64(i)*2654435761%(1<<40))
		if err := db.Set(key, value); err != nil {
			b.Fatal(err)
		}
	}
}
