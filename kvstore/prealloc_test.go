package kvstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/vfs"
	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// preallocOptions have small segments, so preparing one is quick.
var preallocOptions = Options{SegmentSize: 64 << 10, CompactionThreshold: -1}

// writeUntilPreallocated writes k<from>, k<from+1>, ... under SyncAlways
// until the current segment is a preallocated one, then three more, and
// returns the next key number. Each Set is its own group, led by this
// goroutine, so db.seg is read after its leader is done with it.
func writeUntilPreallocated(t *testing.T, db *DB, from int) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	i := from
	for ; !db.seg.Preallocated(); i++ {
		if time.Now().After(deadline) || i > 900 {
			t.Fatalf("after %d writes the log still appends: no prepared segment was switched to", i-from)
		}
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	for end := i + 3; i < end; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	return i
}

// crashedPreallocated is what kill -9 leaves in a directory whose newest
// segment is preallocated: a copy taken while the engine runs (then closed),
// and the number of writes acknowledged in it.
func crashedPreallocated(t *testing.T) (string, int) {
	t.Helper()
	src := t.TempDir()
	db := openT(t, src, preallocOptions)
	n := writeUntilPreallocated(t, db, 0)
	crashed := copyDir(t, src)
	db.Close()
	return crashed, n
}

func newestSegment(t *testing.T, dir string) (wal.SegmentInfo, []byte) {
	t.Helper()
	segs := segmentsOf(t, dir)
	if len(segs) == 0 {
		t.Fatalf("no log segment in %s", dir)
	}
	s := segs[len(segs)-1]
	b, err := os.ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

// logDataBytes is the size of dir's log without the newest segment's zero
// tail (the test values end in a digit, so the data ends at a non-zero byte).
func logDataBytes(t *testing.T, dir string) int64 {
	t.Helper()
	segs := segmentsOf(t, dir)
	var n int64
	for _, s := range segs[:len(segs)-1] {
		n += s.Size
	}
	_, b := newestSegment(t, dir)
	return n + int64(wal.NonZeroEnd(b))
}

func TestPrealloc_ZeroTailOfAPreallocatedSegmentIsTheCleanEndOfTheLog(t *testing.T) {
	src := t.TempDir()
	db := openT(t, src, preallocOptions)
	n := writeUntilPreallocated(t, db, 0)
	crashed := copyDir(t, src) // what kill -9 leaves: the newest segment ends in zeros
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	seg, b := newestSegment(t, crashed)
	if !wal.Preallocated(b) || seg.Size != preallocOptions.SegmentSize || b[len(b)-1] != 0 {
		t.Fatalf("newest segment: version-2 header %v, %d bytes ending in %d; want a preallocated segment of %d bytes ending in zeros",
			wal.Preallocated(b), seg.Size, b[len(b)-1], preallocOptions.SegmentSize)
	}
	data := logDataBytes(t, crashed)

	rep, err := Verify(crashed, Options{})
	if err != nil || rep.TornTailBytes != 0 || rep.Records != uint64(n) || rep.LogBytes != data {
		t.Fatalf("Verify: err %v, torn %d, records %d, log bytes %d; want no error, no torn tail, %d records, %d bytes",
			err, rep.TornTailBytes, rep.Records, rep.LogBytes, n, data)
	}
	db = openT(t, crashed, preallocOptions)
	wantPrefix(t, db, n, n+1)
	if st := db.Stats(); st.TornTailBytes != 0 || st.LogBytes != data {
		t.Fatalf("reopen: torn tail %d, log bytes %d; want 0 and %d (not the zeros)", st.TornTailBytes, st.LogBytes, data)
	}
	// Later writes go over the zeros in place: the file does not grow.
	for i := n; i < n+5; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	if fi, err := os.Stat(seg.Path); err != nil || fi.Size() != preallocOptions.SegmentSize {
		t.Fatalf("after writing over the zero tail: %v, %d bytes; want %d", err, fi.Size(), preallocOptions.SegmentSize)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Close cuts the zero tail off and leaves no prepared file behind.
	if _, b := newestSegment(t, crashed); len(b) != wal.NonZeroEnd(b) {
		t.Fatalf("after Close the newest segment still ends in %d zero bytes", len(b)-wal.NonZeroEnd(b))
	}
	if _, err := os.Stat(filepath.Join(crashed, preparedSegmentName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("prepared segment after Close: %v", err)
	}
	db = openT(t, crashed, preallocOptions)
	defer db.Close()
	wantPrefix(t, db, n+5, n+6)
	if st := db.Stats(); st.TornTailBytes != 0 {
		t.Fatalf("second reopen: torn tail %d", st.TornTailBytes)
	}
}

func TestPrealloc_TornRecordBeforeTheZeroTailIsATornTail(t *testing.T) {
	crashed, n := crashedPreallocated(t)
	seg, b := newestSegment(t, crashed)
	end := wal.NonZeroEnd(b)
	garbage := []byte("\x01torn!") // a record's first bytes, the rest never written
	copy(b[end:], garbage)
	if err := os.WriteFile(seg.Path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	rep, err := Verify(crashed, Options{})
	if err != nil || rep.TornTailBytes != int64(len(garbage)) {
		t.Fatalf("Verify: %v, torn tail %d; want %d (the zeros after it are not torn)", err, rep.TornTailBytes, len(garbage))
	}
	db := openT(t, crashed, preallocOptions)
	wantPrefix(t, db, n, n+1)
	if st := db.Stats(); st.TornTailBytes != int64(len(garbage)) {
		t.Fatalf("open: torn tail %d, want %d", st.TornTailBytes, len(garbage))
	}
	if fi, err := os.Stat(seg.Path); err != nil || fi.Size() != int64(end) {
		t.Fatalf("the torn record was not cut off: %v, %d bytes, want %d", err, fi.Size(), end)
	}
	mustSet(t, db, fmt.Sprintf("k%03d", n), fmt.Sprintf("value-%03d", n))
	db.Close()
	db = openT(t, crashed, preallocOptions)
	defer db.Close()
	wantPrefix(t, db, n+1, n+2)
}

func TestPrealloc_PreparedSegmentLeftByACrashIsNeverReadAsLog(t *testing.T) {
	for _, tc := range []struct {
		name string
		// leave puts what a crash at one step of preparing or installing
		// the next segment leaves into dir, whose log ends at record last.
		leave func(t *testing.T, dir string, last uint64)
	}{
		{"half zero-filled under its temp name", func(t *testing.T, dir string, last uint64) {
			writeFile(t, filepath.Join(dir, preparedSegmentName), make([]byte, 5000))
		}},
		{"zero-filled under its temp name, header written", func(t *testing.T, dir string, last uint64) {
			b := make([]byte, preallocOptions.SegmentSize)
			copy(b, wal.AppendPreallocatedHeader(nil, last+1))
			writeFile(t, filepath.Join(dir, preparedSegmentName), b)
		}},
		{"renamed into place before its first record", func(t *testing.T, dir string, last uint64) {
			b := make([]byte, preallocOptions.SegmentSize)
			copy(b, wal.AppendPreallocatedHeader(nil, last+1))
			writeFile(t, filepath.Join(dir, wal.SegmentName(last+1)), b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeKeys(t, dir, preallocOptions, 0, 10)
			tc.leave(t, dir, 10)
			rep, err := Verify(dir, Options{})
			if err != nil || rep.TornTailBytes != 0 || rep.Records != 10 || rep.LastSeq != 10 {
				t.Fatalf("Verify: %v, torn %d, records %d, last seq %d; want a clean log of 10 records",
					err, rep.TornTailBytes, rep.Records, rep.LastSeq)
			}
			db := openT(t, dir, preallocOptions)
			wantPrefix(t, db, 10, 11)
			if st := db.Stats(); st.TornTailBytes != 0 || st.Seq != 10 {
				t.Fatalf("open: torn tail %d, seq %d; want 0 and 10", st.TornTailBytes, st.Seq)
			}
			if _, err := os.Stat(filepath.Join(dir, preparedSegmentName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the abandoned prepared file is still there: %v", err)
			}
			mustSet(t, db, "k010", "value-010")
			db.Close()
			db = openT(t, dir, preallocOptions)
			defer db.Close()
			wantPrefix(t, db, 11, 12)
		})
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// stallPrepareFS blocks every write to the prepared segment until release
// is closed: a disk too busy to zero-fill in time.
type stallPrepareFS struct {
	vfs.OS
	release chan struct{}
	stalled atomic.Int32
}

func (f *stallPrepareFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.OS.OpenFile(name, flag, perm)
	if err != nil || filepath.Base(name) != preparedSegmentName || flag&os.O_CREATE == 0 {
		return file, err
	}
	return &stallFile{File: file, fs: f}, nil
}

type stallFile struct {
	vfs.File
	fs *stallPrepareFS
}

func (w *stallFile) Write(b []byte) (int, error) {
	w.fs.stalled.Add(1)
	<-w.fs.release
	return w.File.Write(b)
}

func TestPrealloc_RotationAppendsWhenNoPreparedSegmentIsReady(t *testing.T) {
	dir := t.TempDir()
	sfs := &stallPrepareFS{release: make(chan struct{})}
	o := Options{SegmentSize: 2 << 10, CompactionThreshold: -1, fs: sfs}
	db := openT(t, dir, o)
	released := false
	defer func() {
		if !released {
			close(sfs.release)
		}
		db.Close()
	}()
	const stalledWrites = 400 // ~12 KiB of log: several rotations
	done := make(chan error, 1)
	go func() {
		for i := 0; i < stalledWrites; i++ {
			if err := db.Set(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "value-%03d", i)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writes stalled behind a segment that is still being prepared")
	}
	segs := segmentsOf(t, dir)
	if sfs.stalled.Load() == 0 || len(segs) < 3 {
		t.Fatalf("preparation stalled %d times, %d segments: want it asked for and stalled, and several rotations",
			sfs.stalled.Load(), len(segs))
	}
	for _, s := range segs {
		b, err := os.ReadFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		if wal.Preallocated(b) {
			t.Fatalf("%s is preallocated although preparation never got past its first write", s.Path)
		}
	}
	// Once the disk lets the preparer finish, the log moves to its segment.
	close(sfs.release)
	released = true
	n := writeUntilPreallocated(t, db, stalledWrites)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, Options{SegmentSize: o.SegmentSize})
	wantPrefix(t, db, n, n+1)
}

func TestPrealloc_DiskFullInAPreallocatedSegmentLeavesTheLogAtItsLastGoodRecord(t *testing.T) {
	dir := t.TempDir()
	ffs := newFaultFS()
	o := preallocOptions
	o.fs = ffs
	db := openT(t, dir, o)
	n := writeUntilPreallocated(t, db, 0)
	ffs.set(func(f *faultFS) { f.budget = 7 })
	if err := db.Set([]byte("k999"), []byte("cut")); !errors.Is(err, ErrReadOnly) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Set on a full disk = %v, want ErrReadOnly wrapping ENOSPC", err)
	}
	seg, b := newestSegment(t, dir)
	if !wal.Preallocated(b) || bytes.Contains(b, []byte("k999")) || len(b) != wal.NonZeroEnd(b) {
		t.Fatalf("%s after the failed write: preallocated %v, %d bytes, data to %d: want the cut record gone and the file ending at the last good record",
			seg.Path, wal.Preallocated(b), len(b), wal.NonZeroEnd(b))
	}
	db.Close()
	db = openT(t, dir, Options{SegmentSize: o.SegmentSize})
	defer db.Close()
	wantPrefix(t, db, n, n+1)
	if st := db.Stats(); st.TornTailBytes != 0 {
		t.Fatalf("reopen: torn tail %d, want a clean log", st.TornTailBytes)
	}
}

func TestPrealloc_OnlyTheNewestSegmentEndsInZeros(t *testing.T) {
	dir := t.TempDir()
	o := Options{SegmentSize: 4 << 10, CompactionThreshold: -1}
	db := openT(t, dir, o)
	n := writeUntilPreallocated(t, db, 0)
	// A snapshot rotates the log before the preallocated segment is full.
	if _, err := db.Snapshot(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Fill several preallocated segments.
	for i := n; i < n+600; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	segs := segmentsOf(t, dir)
	prealloc := 0
	for i, s := range segs {
		b, err := os.ReadFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		if wal.Preallocated(b) {
			prealloc++
		}
		if i < len(segs)-1 && len(b) != wal.NonZeroEnd(b) {
			t.Fatalf("%s (not the newest) ends in %d zero bytes", s.Path, len(b)-wal.NonZeroEnd(b))
		}
	}
	if prealloc < 3 {
		t.Fatalf("%d of %d segments preallocated; want the log to keep moving to prepared segments", prealloc, len(segs))
	}
	db.Close()
	db = openT(t, dir, o)
	defer db.Close()
	wantPrefix(t, db, n+600, n+601)
}

// powerLossWrite puts, at the data end of the newest (preallocated) segment
// of dir, the records of one write of 30 sets after the n acknowledged ones,
// then spoils it from the data end to first+hole bytes with fill: what a
// power loss leaves when a drive kept later sectors of the write but not the
// first ones (fill 0), or what damage looks like (fill not 0). It returns
// the segment's path and data end before the write.
func powerLossWrite(t *testing.T, dir string, n, hole int, fill byte) (string, int) {
	t.Helper()
	seg, b := newestSegment(t, dir)
	end := wal.NonZeroEnd(b)
	var w []byte
	for i := 0; i < 30; i++ {
		k := fmt.Sprintf("k%03d", n+i)
		w = wal.AppendRecord(w, wal.Record{Type: wal.TypeSet, Seq: uint64(n + i + 1), Key: []byte(k), Value: bytes.Repeat([]byte("v"), 80)})
	}
	copy(b[end:], w)
	for i := end; i < end+hole; i++ {
		b[i] = fill
	}
	writeFile(t, seg.Path, b)
	return seg.Path, end
}

// A power loss while a write goes over zeros can keep its later sectors and
// lose its first: a hole of zeros, then valid records. None of them was
// acknowledged (an acknowledged write's fdatasync made every sector before
// it durable), so Open reads it as a torn tail and cuts it, as it does an
// appended write cut short — it does not refuse to open as for mid-log
// damage. Damage that is not a whole never-written sector still refuses.
func TestPrealloc_APowerLossHoleBeforeUnacknowledgedRecordsIsATornTail(t *testing.T) {
	crashed, n := crashedPreallocated(t)
	path, end := powerLossWrite(t, crashed, n, 2*wal.SectorSize, 0)
	_, b := newestSegment(t, crashed)
	torn := int64(wal.NonZeroEnd(b) - end)

	rep, err := Verify(crashed, Options{})
	if err != nil || rep.TornTailBytes != torn || rep.Records != uint64(n) {
		t.Fatalf("Verify: %v, torn tail %d, records %d; want a torn tail of %d and the %d acknowledged records", err, rep.TornTailBytes, rep.Records, torn, n)
	}
	db := openT(t, crashed, preallocOptions)
	wantPrefix(t, db, n, n+30)
	if st := db.Stats(); st.TornTailBytes != torn {
		t.Fatalf("open: torn tail %d, want %d", st.TornTailBytes, torn)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != int64(end) {
		t.Fatalf("the torn write was not cut off: %v, %d bytes, want %d", err, fi.Size(), end)
	}
	mustSet(t, db, fmt.Sprintf("k%03d", n), "after")
	db.Close()

	for name, spoil := range map[string]struct {
		hole int
		fill byte
	}{
		"garbage, not zeros":               {2 * wal.SectorSize, 0xa5},
		"zeros short of an aligned sector": {40, 0},
	} {
		t.Run(name, func(t *testing.T) {
			crashed, n := crashedPreallocated(t)
			powerLossWrite(t, crashed, n, spoil.hole, spoil.fill)
			_, err := Open(crashed, preallocOptions)
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("Open = %v, want mid-log damage (*CorruptionError)", err)
			}
		})
	}
}
