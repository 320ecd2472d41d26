package kvstore

import (
	"context"
	"errors"
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
