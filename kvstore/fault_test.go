package kvstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/vfs"
)

// faultFS is the real file system with faults injected into log segments:
// a byte budget after which writes fail with ENOSPC (the last write is cut
// short, as a full disk does), failing fsyncs, and failing creates.
type faultFS struct {
	vfs.OS
	mu           sync.Mutex
	budget       int64 // bytes segment writes may still take; <0 means unlimited
	failSync     bool
	failCreate   bool
	segmentBytes int64
}

func newFaultFS() *faultFS { return &faultFS{budget: -1} }

func (f *faultFS) set(fn func(*faultFS)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	isSeg := strings.HasSuffix(name, ".wal")
	f.mu.Lock()
	failCreate := f.failCreate && flag&os.O_CREATE != 0
	f.mu.Unlock()
	if failCreate {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	file, err := f.OS.OpenFile(name, flag, perm)
	if err != nil || !isSeg {
		return file, err
	}
	return &faultFile{File: file, fs: f}, nil
}

type faultFile struct {
	vfs.File
	fs *faultFS
}

func (w *faultFile) Write(b []byte) (int, error) {
	w.fs.mu.Lock()
	allowed := len(b)
	if w.fs.budget >= 0 && int64(allowed) > w.fs.budget {
		allowed = int(w.fs.budget)
	}
	if w.fs.budget >= 0 {
		w.fs.budget -= int64(allowed)
	}
	w.fs.mu.Unlock()
	n, err := w.File.Write(b[:allowed])
	w.fs.mu.Lock()
	w.fs.segmentBytes += int64(n)
	w.fs.mu.Unlock()
	if err == nil && allowed < len(b) {
		err = &os.PathError{Op: "write", Path: w.Name(), Err: syscall.ENOSPC}
	}
	return n, err
}

func (w *faultFile) Sync() error {
	w.fs.mu.Lock()
	fail := w.fs.failSync
	w.fs.mu.Unlock()
	if fail {
		return &os.PathError{Op: "fdatasync", Path: w.Name(), Err: syscall.EIO}
	}
	return w.File.Sync()
}

func segmentSize(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	for _, s := range segmentsOf(t, dir) {
		fi, err := os.Stat(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	return total
}

// checkReadOnly checks the sticky failure: typed errors for every later
// write, reads still served, Stats saying why.
func checkReadOnly(t *testing.T, db *DB, cause error) {
	t.Helper()
	if err := db.Set([]byte("later"), []byte("x")); !errors.Is(err, ErrReadOnly) || !errors.Is(err, cause) {
		t.Fatalf("write after the failure = %v, want ErrReadOnly and %v", err, cause)
	}
	if err := db.Delete([]byte("k000")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("delete after the failure = %v, want ErrReadOnly", err)
	}
	wantValue(t, db, "k000", "value-000")
	st := db.Stats()
	if !st.ReadOnly || !strings.Contains(st.ReadOnlyReason, cause.Error()) {
		t.Fatalf("stats: read_only=%v reason=%q, want the reason to name %v", st.ReadOnly, st.ReadOnlyReason, cause)
	}
}

func TestFault_DiskFullMidRecordLeavesTheLogAtItsLastGoodRecord(t *testing.T) {
	dir := t.TempDir()
	ffs := newFaultFS()
	db := openT(t, dir, Options{fs: ffs})
	for i := 0; i < 5; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	before := segmentSize(t, dir)
	ffs.set(func(f *faultFS) { f.budget = 7 }) // the next record is cut after 7 bytes
	err := db.Set([]byte("k005"), []byte("value-005"))
	if !errors.Is(err, ErrReadOnly) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Set on a full disk = %v, want ErrReadOnly wrapping ENOSPC", err)
	}
	if after := segmentSize(t, dir); after != before {
		t.Fatalf("the half-written record was left in the log: %d -> %d bytes", before, after)
	}
	if _, err := db.Get([]byte("k005")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the failed write is visible: %v", err)
	}
	checkReadOnly(t, db, syscall.ENOSPC)
	db.Close()

	db = openT(t, dir, Options{})
	defer db.Close()
	wantPrefix(t, db, 5, 6)
	if st := db.Stats(); st.TornTailBytes != 0 || st.ReadOnly {
		t.Fatalf("reopen: torn tail %d, read-only %v: want a clean log", st.TornTailBytes, st.ReadOnly)
	}
	mustSet(t, db, "k005", "value-005")
}

func TestFault_FailedFsyncMakesTheEngineReadOnly(t *testing.T) {
	dir := t.TempDir()
	ffs := newFaultFS()
	db := openT(t, dir, Options{fs: ffs})
	for i := 0; i < 5; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	ffs.set(func(f *faultFS) { f.failSync = true })
	if err := db.Set([]byte("k005"), []byte("value-005")); !errors.Is(err, ErrReadOnly) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Set with a failing fsync = %v, want ErrReadOnly wrapping EIO", err)
	}
	checkReadOnly(t, db, syscall.EIO)
	// Even after the disk recovers, the engine stays read-only: a failed
	// fsync leaves the page cache's state unknown.
	ffs.set(func(f *faultFS) { f.failSync = false })
	if err := db.Set([]byte("k006"), []byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write after the disk recovered = %v, want ErrReadOnly until reopen", err)
	}
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	wantPrefix(t, db, 5, 5) // k005 was never acknowledged; it may or may not be there
	mustSet(t, db, "k006", "value-006")
}

func TestFault_SegmentThatCannotBeCreatedFailsTheWrite(t *testing.T) {
	dir := t.TempDir()
	ffs := newFaultFS()
	db := openT(t, dir, Options{fs: ffs, SegmentSize: 100})
	for i := 0; i < 3; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	ffs.set(func(f *faultFS) { f.failCreate = true })
	var err error
	for i := 3; i < 20 && err == nil; i++ {
		err = db.Set([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprintf("value-%03d", i)))
	}
	if !errors.Is(err, ErrReadOnly) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write needing a new segment = %v, want ErrReadOnly wrapping ENOSPC", err)
	}
	acked := db.Stats().Sets
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	wantPrefix(t, db, int(acked), 20)
}

func TestFault_PeriodicFsyncFailureMakesTheEngineReadOnly(t *testing.T) {
	dir := t.TempDir()
	ffs := newFaultFS()
	db := openT(t, dir, Options{fs: ffs, Sync: SyncPeriodic, SyncInterval: 5 * time.Millisecond})
	defer db.Close()
	mustSet(t, db, "k000", "value-000")
	ffs.set(func(f *faultFS) { f.failSync = true })
	deadline := time.Now().Add(5 * time.Second)
	for !db.Stats().ReadOnly {
		if time.Now().After(deadline) {
			t.Fatal("a failing periodic fsync did not make the engine read-only")
		}
		time.Sleep(time.Millisecond)
	}
	checkReadOnly(t, db, syscall.EIO)
}

func TestCompaction_RacingFiftyWritersLosesNothing(t *testing.T) {
	dir := t.TempDir()
	o := Options{SegmentSize: 4 << 10, CompactionThreshold: 16 << 10}
	const writers, atLeast, rounds, snapshotsPerRound = 50, 20, 5, 3
	for round := 0; round < rounds; round++ {
		db := openT(t, dir, o)
		before := db.Stats().Compactions
		compacted := func() bool { return db.Stats().Compactions-before >= snapshotsPerRound }
		stop := make(chan struct{})
		var snaps sync.WaitGroup
		snaps.Add(1)
		go func() { // on-demand snapshots on top of the automatic ones
			defer snaps.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := db.Snapshot(t.Context()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		// Each writer goes on until the round has seen several compactions,
		// so writes and compactions overlap however fast either one is.
		written := make([]int, writers)
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < atLeast || (!compacted() && i < 100_000); i++ {
					k := fmt.Sprintf("w%02d-%05d", w, i)
					if err := db.Set([]byte(k), []byte(fmt.Sprintf("r%d", round))); err != nil {
						t.Error(err)
						return
					}
					written[w] = i + 1
				}
			}()
		}
		wg.Wait()
		close(stop)
		snaps.Wait()
		if !compacted() {
			t.Fatalf("round %d: fewer than %d compactions ran during the writes", round, snapshotsPerRound)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = openT(t, dir, o)
		for w := 0; w < writers; w++ {
			for i := 0; i < written[w]; i++ {
				wantValue(t, db, fmt.Sprintf("w%02d-%05d", w, i), fmt.Sprintf("r%d", round))
			}
		}
		db.Close()
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "*.snap"))
	if len(snaps) != 2 {
		t.Fatalf("want two snapshots kept, found %d", len(snaps))
	}
}

// gateFS holds the first write to a snapshot file until released, so a
// test can act while a snapshot is in the middle of being written.
type gateFS struct {
	vfs.OS
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := g.OS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, tmpSuffix) {
		return f, err
	}
	return &gatedFile{File: f, g: g}, nil
}

type gatedFile struct {
	vfs.File
	g *gateFS
}

func (f *gatedFile) Write(b []byte) (int, error) {
	f.g.once.Do(func() {
		close(f.g.entered)
		<-f.g.release
	})
	return f.File.Write(b)
}

func TestSnapshot_WritersKeepGoingWhileItIsWritten(t *testing.T) {
	dir := t.TempDir()
	g := &gateFS{entered: make(chan struct{}), release: make(chan struct{})}
	db := openT(t, dir, Options{fs: g})
	for i := 0; i < 50; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.Snapshot(t.Context())
		done <- err
	}()
	<-g.entered // the snapshot is now stuck writing its file
	for i := 50; i < 100; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
	wantValue(t, db, "k099", "value-099")
	select {
	case err := <-done:
		t.Fatalf("the snapshot finished before it was released: %v", err)
	default:
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	wantPrefix(t, db, 100, 100)
	if st := db.Stats(); st.SnapshotSeq != 50 || st.ReplayedRecords != 50 {
		t.Fatalf("snapshot at seq %d with %d records replayed; want 50 and 50", st.SnapshotSeq, st.ReplayedRecords)
	}
}
