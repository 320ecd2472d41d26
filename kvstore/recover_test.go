package kvstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// writeKeys opens dir, writes k000..k(n-1) and closes it.
func writeKeys(t *testing.T, dir string, o Options, from, n int) {
	t.Helper()
	db := openT(t, dir, o)
	for i := from; i < from+n; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// segmentsOf lists the log segments of dir.
func segmentsOf(t *testing.T, dir string) []wal.SegmentInfo {
	t.Helper()
	segs, err := wal.ListSegments(osFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// recordEnds returns the offset at which each record of a segment ends.
func recordEnds(t *testing.T, buf []byte) []int {
	t.Helper()
	var ends []int
	for off := segmentHeaderSize(t, buf); off < len(buf); {
		_, n, err := wal.DecodeRecord(buf[off:], 1<<30)
		if err != nil {
			t.Fatalf("decode at %d: %v", off, err)
		}
		off += n
		ends = append(ends, off)
	}
	return ends
}

// segmentHeaderSize is the length of the header at the start of buf.
func segmentHeaderSize(t *testing.T, buf []byte) int {
	t.Helper()
	h, err := wal.DecodeHeader(buf)
	if err != nil {
		t.Fatal(err)
	}
	return h.Size
}

// wantPrefix checks that exactly k000..k(n-1) are present.
func wantPrefix(t *testing.T, db *DB, n, total int) {
	t.Helper()
	for i := 0; i < total; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("k%03d", i)))
		switch {
		case i < n && (err != nil || string(v) != fmt.Sprintf("value-%03d", i)):
			t.Fatalf("k%03d = %q, %v: want it present (prefix of %d)", i, v, err, n)
		case i >= n && !errors.Is(err, ErrNotFound):
			t.Fatalf("k%03d present past the prefix of %d records", i, n)
		}
	}
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestReplay_CutAtEveryOffsetYieldsAPrefixAndLaterWritesSurvive(t *testing.T) {
	const total = 12
	src := t.TempDir()
	writeKeys(t, src, Options{Sync: SyncNone}, 0, total)
	segs := segmentsOf(t, src)
	if len(segs) != 1 {
		t.Fatalf("want one segment, got %d", len(segs))
	}
	full, err := os.ReadFile(segs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	ends := recordEnds(t, full)
	hsize := segmentHeaderSize(t, full)
	// Every offset of the last four records, and every offset of the header.
	var cuts []int
	for off := 0; off <= hsize; off++ {
		cuts = append(cuts, off)
	}
	for off := ends[total-5] + 1; off <= len(full); off++ {
		cuts = append(cuts, off)
	}
	for _, cut := range cuts {
		dir := copyDir(t, src)
		if err := os.Truncate(filepath.Join(dir, filepath.Base(segs[0].Path)), int64(cut)); err != nil {
			t.Fatal(err)
		}
		complete := 0
		for complete < total && ends[complete] <= cut {
			complete++
		}
		db := openT(t, dir, Options{Sync: SyncNone})
		wantPrefix(t, db, complete, total)
		goodEnd := hsize
		if complete > 0 {
			goodEnd = ends[complete-1]
		}
		wantTorn := int64(cut - goodEnd)
		if cut < hsize || (cut == hsize && complete == 0) {
			wantTorn = int64(cut) // a torn header: the segment is removed whole
			if cut == hsize {
				wantTorn = 0 // a complete header with no record is a clean, empty log
			}
		}
		if st := db.Stats(); st.TornTailBytes != wantTorn {
			t.Fatalf("cut at %d: torn tail %d bytes, want %d", cut, st.TornTailBytes, wantTorn)
		}
		// Writes after recovery land after the last good record, never
		// behind the garbage.
		for i := 100; i < 103; i++ {
			mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = openT(t, dir, Options{Sync: SyncNone})
		wantPrefix(t, db, complete, total)
		for i := 100; i < 103; i++ {
			wantValue(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
		}
		if st := db.Stats(); st.TornTailBytes != 0 {
			t.Fatalf("cut at %d: a second open still found a torn tail of %d bytes", cut, st.TornTailBytes)
		}
		db.Close()
	}
}

func TestReplay_ZeroFilledTailIsATornTail(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, Options{}, 0, 10)
	seg := segmentsOf(t, dir)[0].Path
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 8192))
	f.Close()
	db := openT(t, dir, Options{})
	wantPrefix(t, db, 10, 10)
	if st := db.Stats(); st.TornTailBytes != 8192 {
		t.Fatalf("torn tail = %d, want 8192", st.TornTailBytes)
	}
	mustSet(t, db, "after", "zeros")
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	wantValue(t, db, "after", "zeros")
	wantPrefix(t, db, 10, 10)
}

func flipBit(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReplay_MidLogBitFlipRefusesToOpenNamingFileAndOffset(t *testing.T) {
	src := t.TempDir()
	writeKeys(t, src, Options{}, 0, 10)
	seg := segmentsOf(t, src)[0].Path
	full, _ := os.ReadFile(seg)
	ends := recordEnds(t, full)
	badStart := ends[3] // record k004 starts here
	dir := copyDir(t, src)
	segPath := filepath.Join(dir, filepath.Base(seg))
	flipBit(t, segPath, badStart+wal.RecordHeaderSize+2)

	_, err := Open(dir, Options{Logger: quietLogger()})
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want a *CorruptionError", err)
	}
	if ce.File != segPath || ce.Offset != int64(badStart) {
		t.Fatalf("corruption reported at %s:%d, want %s:%d", ce.File, ce.Offset, segPath, badStart)
	}
	// Nothing was cut: the refused open left the file as it was.
	if b, _ := os.ReadFile(segPath); len(b) != len(full) {
		t.Fatalf("a refused open changed the segment: %d -> %d bytes", len(full), len(b))
	}

	// Asked for a truncating recovery, it keeps the prefix before the damage.
	db := openT(t, dir, Options{Recovery: RecoverTruncate})
	wantPrefix(t, db, 4, 10)
	mustSet(t, db, "k004", "value-004")
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	wantPrefix(t, db, 5, 10)
}

func TestReplay_BitFlipInTheLastRecordIsATornTail(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, Options{}, 0, 10)
	seg := segmentsOf(t, dir)[0].Path
	full, _ := os.ReadFile(seg)
	ends := recordEnds(t, full)
	flipBit(t, seg, ends[8]+wal.RecordHeaderSize+3)
	db := openT(t, dir, Options{})
	defer db.Close()
	wantPrefix(t, db, 9, 10)
	if st := db.Stats(); st.TornTailBytes != int64(len(full)-ends[8]) {
		t.Fatalf("torn tail = %d, want %d", st.TornTailBytes, len(full)-ends[8])
	}
}

func TestReplay_DamageInAnOlderSegmentIsCorruption(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, Options{SegmentSize: 200}, 0, 30)
	segs := segmentsOf(t, dir)
	if len(segs) < 3 {
		t.Fatalf("want several segments, got %d", len(segs))
	}
	full, _ := os.ReadFile(segs[0].Path)
	ends := recordEnds(t, full)
	// Damage the very last record of the first segment: later segments hold
	// valid records, so it is not a torn tail.
	flipBit(t, segs[0].Path, ends[len(ends)-2]+wal.RecordHeaderSize)
	_, err := Open(dir, Options{Logger: quietLogger()})
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.File != segs[0].Path || ce.Offset != int64(ends[len(ends)-2]) {
		t.Fatalf("Open = %v, want corruption in %s at %d", err, segs[0].Path, ends[len(ends)-2])
	}
}

func TestReplay_MissingSegmentIsCorruption(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, Options{SegmentSize: 200}, 0, 30)
	segs := segmentsOf(t, dir)
	os.Remove(segs[1].Path)
	_, err := Open(dir, Options{Logger: quietLogger()})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a segment missing = %v, want ErrCorrupt", err)
	}
}

func TestSnapshot_DamagedNewestFallsBackToThePrevious(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		for i := 0; i < 20; i++ {
			mustSet(t, db, fmt.Sprintf("k%03d", round*20+i), fmt.Sprintf("value-%03d", round*20+i))
		}
		if _, err := db.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := 60; i < 70; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	db.Close()
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
	if len(snaps) != 2 {
		t.Fatalf("want the newest two snapshots kept, found %v", snaps)
	}
	flipBit(t, snaps[1], 40)
	db = openT(t, dir, Options{})
	defer db.Close()
	wantPrefix(t, db, 70, 70)
	if st := db.Stats(); st.SnapshotsSkipped != 1 {
		t.Fatalf("snapshots skipped = %d, want 1", st.SnapshotsSkipped)
	}
}

func TestSnapshot_CompactsTheLogAndReplaysOnlyTheTail(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{SegmentSize: 1 << 10})
	ctx := context.Background()
	var infos []SnapshotInfo
	for round := 0; round < 2; round++ {
		for i := 0; i < 100; i++ {
			mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
		}
		info, err := db.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	// The first snapshot keeps the log (it is the only fallback); the second
	// lets go of every segment the first one covers.
	if infos[0].RemovedSegments != 0 || infos[1].RemovedSegments == 0 || infos[1].Keys != 100 || infos[1].Seq != 200 {
		t.Fatalf("snapshots %+v: want segments removed by the second only, 100 keys at seq 200", infos)
	}
	// With nothing written since, a snapshot is the existing one.
	again, err := db.Snapshot(ctx)
	if err != nil || again.Seq != 200 || again.Path != infos[1].Path {
		t.Fatalf("snapshot with nothing new = %+v, %v", again, err)
	}
	mustSet(t, db, "k100", "value-100")
	db.Close()
	// Only segments with records after the older kept snapshot (seq 100) remain.
	if segs := segmentsOf(t, dir); segs[0].FirstSeq <= 100 {
		t.Fatalf("a segment starting at %d is covered by both snapshots but was kept", segs[0].FirstSeq)
	}
	db = openT(t, dir, Options{})
	defer db.Close()
	wantPrefix(t, db, 101, 101)
	if st := db.Stats(); st.ReplayedRecords != 1 {
		t.Fatalf("replayed %d records, want only the one after the snapshot", st.ReplayedRecords)
	}
}

func TestOpen_RemovesAbandonedSnapshotTempFiles(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, Options{}, 0, 3)
	tmp := filepath.Join(dir, snapshotName(3)+tmpSuffix)
	os.WriteFile(tmp, []byte("half a snapshot"), 0o644)
	db := openT(t, dir, Options{})
	defer db.Close()
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp file still there: %v", err)
	}
	wantPrefix(t, db, 3, 3)
}

// A snapshot is loaded comparing arena references instead of keys while
// they ascend with the keys; a large value (a chunk of its own) in the
// middle breaks that, and every key after it must still land in key order.
func TestSnapshot_LoadKeepsKeyOrderAroundALargeValue(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{MaxValueSize: 4 << 20})
	large := bytes.Repeat([]byte("L"), 2<<20) // above the largest size class
	for i := 0; i < 300; i++ {
		v := []byte(fmt.Sprintf("value-%03d", i))
		if i == 100 || i == 200 {
			v = large
		}
		if err := db.Set([]byte(fmt.Sprintf("k%03d", i)), v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openT(t, dir, Options{MaxValueSize: 4 << 20})
	defer db.Close()
	if st := db.Stats(); st.ReplayedRecords != 0 {
		t.Fatalf("replayed %d records: the test needs the snapshot alone", st.ReplayedRecords)
	}
	// New keys go through the tree's comparisons after the load too.
	mustSet(t, db, "k0995", "between")
	var got []string
	for page, after := (ScanPage{}), []byte(nil); ; after = page.Next {
		var err error
		if page, err = db.Scan(ScanOptions{After: after, Limit: 64}); err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			got = append(got, string(e.Key))
		}
		if page.Next == nil {
			break
		}
	}
	if len(got) != 301 || !slices.IsSorted(got) {
		t.Fatalf("scan after the load: %d keys, sorted %v: %v", len(got), slices.IsSorted(got), got)
	}
}
