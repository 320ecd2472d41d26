package kvstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// dirState is every file name and size in dir: what Verify must not change.
func dirState(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, e := range entries {
		fi, _ := e.Info()
		m[e.Name()] = fi.Size()
	}
	return m
}

func sameState(t *testing.T, before, after map[string]int64) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("Verify changed the directory: %v -> %v", before, after)
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("Verify changed %s: %d -> %d bytes", k, v, after[k])
		}
	}
}

func TestVerify_ReportsATornTailWithoutCuttingIt(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, Options{}, 0, 10)
	seg := segmentsOf(t, dir)[0].Path
	f, _ := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{1, 2, 3, 4, 5, 6, 7})
	f.Close()
	os.WriteFile(filepath.Join(dir, snapshotName(99)+tmpSuffix), []byte("leftover"), 0o644)
	before := dirState(t, dir)
	var calls int
	var last, total int64
	rep, err := Verify(dir, Options{Logger: quietLogger(), Progress: func(read, tot int64) { calls++; last, total = read, tot }})
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, before, dirState(t, dir))
	if rep.Keys != 10 || rep.Records != 10 || rep.LastSeq != 10 || rep.TornTailBytes != 7 {
		t.Fatalf("report %+v: want 10 keys, 10 records, last seq 10, a 7-byte torn tail", rep)
	}
	if calls < 2 || last != total || total == 0 {
		t.Fatalf("progress: %d calls, ended at %d of %d", calls, last, total)
	}
	// Verify holds no lock: the directory can be open meanwhile.
	db := openT(t, dir, Options{})
	defer db.Close()
	if _, err := Verify(dir, Options{Logger: quietLogger()}); err != nil {
		t.Fatalf("Verify of an open directory: %v", err)
	}
}

func TestVerify_NamesMidLogCorruptionAndKeepsThePrefixCount(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, Options{}, 0, 10)
	seg := segmentsOf(t, dir)[0].Path
	full, _ := os.ReadFile(seg)
	ends := recordEnds(t, full)
	flipBit(t, seg, ends[5]+wal.RecordHeaderSize+1)
	before := dirState(t, dir)
	rep, err := Verify(dir, Options{Logger: quietLogger(), Recovery: RecoverTruncate})
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.File != seg || ce.Offset != int64(ends[5]) {
		t.Fatalf("Verify = %v, want corruption in %s at %d", err, seg, ends[5])
	}
	sameState(t, before, dirState(t, dir))
	if rep.Records != 6 || rep.LastSeq != 6 {
		t.Fatalf("report %+v: want the 6 records before the damage", rep)
	}
}

func TestOpen_RecoverTruncateReportsTheBytesItDropped(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, Options{SegmentSize: 200}, 0, 30)
	segs := segmentsOf(t, dir)
	full, _ := os.ReadFile(segs[0].Path)
	ends := recordEnds(t, full)
	flipBit(t, segs[0].Path, ends[1]+wal.RecordHeaderSize)
	var want int64 = int64(len(full) - ends[1])
	for _, s := range segs[1:] {
		fi, _ := os.Stat(s.Path)
		want += fi.Size()
	}
	db := openT(t, dir, Options{Recovery: RecoverTruncate})
	defer db.Close()
	wantPrefix(t, db, 2, 30)
	if st := db.Stats(); st.DroppedBytes != want {
		t.Fatalf("dropped %d bytes, want %d", st.DroppedBytes, want)
	}
}

func TestOpen_ProgressEndsAtItsTotalWhenASnapshotCoversSegments(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{SegmentSize: 200})
	for round := 0; round < 2; round++ {
		for i := 0; i < 40; i++ {
			mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
		}
		if _, err := db.Snapshot(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	mustSet(t, db, "after", "snapshots")
	db.Close()
	var last, total int64
	db = openT(t, dir, Options{Progress: func(read, tot int64) { last, total = read, tot }})
	defer db.Close()
	if total == 0 || last != total {
		t.Fatalf("progress ended at %d of %d", last, total)
	}
}
