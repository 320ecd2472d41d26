package kvstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// snapshotsIn lists dir's snapshot files, oldest first.
func snapshotsIn(t *testing.T, dir string) []string {
	t.Helper()
	snaps, err := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
	if err != nil {
		t.Fatal(err)
	}
	return snaps
}

func setRange(t *testing.T, db *DB, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d", i))
	}
}

func TestCompaction_NeverKeepsADamagedSnapshotAsTheFallback(t *testing.T) {
	dir := t.TempDir()
	o := Options{SegmentSize: 1 << 10, CompactionThreshold: -1}
	ctx := context.Background()
	db := openT(t, dir, o)
	setRange(t, db, 0, 20)
	if _, err := db.Snapshot(ctx); err != nil { // A
		t.Fatal(err)
	}
	setRange(t, db, 20, 40)
	if _, err := db.Snapshot(ctx); err != nil { // B
		t.Fatal(err)
	}
	db.Close()
	snaps := snapshotsIn(t, dir)
	flipBit(t, snaps[len(snaps)-1], 40) // B is damaged on disk

	db = openT(t, dir, o)
	if rep := db.Recovery(); rep.Snapshot != snaps[0] || len(rep.DamagedSnapshots) != 1 || rep.DamagedSnapshots[0].Path != snaps[1] {
		t.Fatalf("recovery report: used %q, damaged %+v; want %s used and %s damaged", rep.Snapshot, rep.DamagedSnapshots, snaps[0], snaps[1])
	}
	if st := db.Stats(); st.Snapshot != snaps[0] {
		t.Fatalf("Stats().Snapshot = %q, want %q", st.Snapshot, snaps[0])
	}
	setRange(t, db, 40, 60)
	info, err := db.Snapshot(ctx) // C: one compaction
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, s := range snapshotsIn(t, dir) {
		if s == snaps[1] {
			t.Fatalf("the compaction kept the damaged snapshot %s (snapshots now %v)", s, snapshotsIn(t, dir))
		}
	}
	// Now the newest snapshot fails too: the store must still open, from
	// the good fallback and the log it kept.
	flipBit(t, info.Path, 40)
	db = openT(t, dir, o)
	defer db.Close()
	wantPrefix(t, db, 60, 60)
	if rep := db.Recovery(); rep.Snapshot != snaps[0] {
		t.Fatalf("opened from %q, want the good fallback %s", rep.Snapshot, snaps[0])
	}
}

func TestOpen_EverySnapshotDamagedFailsNamingWhyRepairCannotHelp(t *testing.T) {
	dir := t.TempDir()
	o := Options{SegmentSize: 1 << 10, CompactionThreshold: -1}
	ctx := context.Background()
	db := openT(t, dir, o)
	for round := 0; round < 3; round++ {
		setRange(t, db, round*20, round*20+20)
		if _, err := db.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for _, s := range snapshotsIn(t, dir) {
		flipBit(t, s, 40)
	}
	_, err := Open(dir, Options{Logger: quietLogger()})
	var ue *UnrecoverableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "restore") {
		t.Fatalf("Open = %v, want an UnrecoverableError saying to restore", err)
	}
}

func TestCompaction_StartsWhenTheLogOutgrowsTheLastSnapshot(t *testing.T) {
	dir := t.TempDir()
	// A 4 KiB floor; 400 keys of ~110 bytes make a ~45 KiB snapshot, so the
	// next compaction waits for ~45 KiB of log, not 4 KiB.
	db := openT(t, dir, Options{CompactionThreshold: 4 << 10, Sync: SyncNone})
	defer db.Close()
	val := strings.Repeat("v", 100)
	for i := 0; i < 400; i++ {
		mustSet(t, db, fmt.Sprintf("key%05d", i), val)
	}
	settleCompaction(db)
	if _, err := db.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	snapBytes := db.stats.lastSnapshotBytes.Load()
	if snapBytes < 40<<10 {
		t.Fatalf("snapshot of %d bytes; the test needs one well above the floor", snapBytes)
	}
	before := db.Stats().Compactions
	// Overwrite a few keys, well past the floor but below the snapshot size.
	for written := int64(0); written < snapBytes/2; written += int64(len(val) + 30) {
		mustSet(t, db, "key00001", val)
	}
	time.Sleep(50 * time.Millisecond)
	if c := db.Stats().Compactions; c != before {
		t.Fatalf("compacted at half the last snapshot's size (%d bytes): %d compactions", snapBytes, c)
	}
	for written := int64(0); written < snapBytes; written += int64(len(val) + 30) {
		mustSet(t, db, "key00001", val)
	}
	waitCompactions(t, db, before+1)
}

// setSettled sets key and waits for the compaction it may have started, so
// that each write sees the outcome of the rule at the one before: what a
// test counts does not depend on how fast the disk is.
func setSettled(t *testing.T, db *DB, key string, value []byte) {
	t.Helper()
	if err := db.Set([]byte(key), value); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
	settleCompaction(db)
}

// settleCompaction waits until no background compaction runs. A lone
// writer's Set starts the one it triggers before it returns.
func settleCompaction(db *DB) {
	for db.compacting.Load() {
		time.Sleep(time.Millisecond)
	}
}

// TestCompaction_NewKeysAreNotSnapshottedAgainAndAgain writes a growing
// data set of 4 KiB values, each key once, to 16 times the floor: a log
// of new keys holds no history, and a snapshot would only copy it. Before
// the rule measured the live data, the log since the last snapshot was
// compared with that snapshot's size: a snapshot at every doubling of the
// data (5 here; redis-benchmark's SET -d 4096 -r 100000 wrote 1.3 GB of
// snapshots for 1.2 GB of log).
func TestCompaction_NewKeysAreNotSnapshottedAgainAndAgain(t *testing.T) {
	const floor = 256 << 10
	db := openT(t, t.TempDir(), Options{CompactionThreshold: floor, Sync: SyncNone})
	defer db.Close()
	val := bytes.Repeat([]byte("v"), 4096)
	n := 16 * floor / len(val)
	for i := 0; i < n; i++ {
		setSettled(t, db, fmt.Sprintf("key:%06d", i), val)
	}
	if c := db.Stats().Compactions; c != 0 {
		t.Fatalf("%d compactions while %d new keys of %d bytes were written (floor %d): want none", c, n, len(val), floor)
	}
}

// TestCompaction_OverwrittenHistoryStaysBoundedByTheLiveData overwrites
// one small key with 4 KiB values, 64 times the floor (the 400 MB of
// redis-benchmark's SET -d 4096 without -r, scaled down), then a growing
// data set: the log after the last snapshot never exceeds max(floor,
// 2 × live) by more than a record, and the log on disk (the cycle the
// fallback snapshot needs, and the current one) stays within two floors
// while the data is one key.
func TestCompaction_OverwrittenHistoryStaysBoundedByTheLiveData(t *testing.T) {
	const floor = 64 << 10
	db := openT(t, t.TempDir(), Options{CompactionThreshold: floor, Sync: SyncNone})
	defer db.Close()
	val := bytes.Repeat([]byte("v"), 4096)
	record := int64(len(val) + 64)
	check := func(step string) {
		t.Helper()
		since, live := db.stats.sinceSnapshot.Load(), db.mem.bytes.Load()+snapshotEntryOverhead*db.mem.keys.Load()
		if bound := max(floor, 2*max(live, db.stats.lastSnapshotBytes.Load())) + record; since > bound {
			t.Fatalf("%s: %d bytes of log since the last snapshot, live data %d: over the bound %d", step, since, live, bound)
		}
	}
	written := int64(0)
	for written < 64*floor {
		setSettled(t, db, "k", val)
		written += int64(len(val))
		check("one key")
		if lb := db.Stats().LogBytes; lb > 2*floor+2*record {
			t.Fatalf("after %d bytes written to one key the log holds %d bytes; want at most two floors (%d)", written, lb, 2*floor)
		}
	}
	if c := db.Stats().Compactions; c < uint64(written/floor/2) {
		t.Fatalf("%d compactions while %d bytes overwrote one key (floor %d)", c, written, floor)
	}
	// A growing data set, each key written twice: compacted once its
	// history is as large as the data.
	before := db.Stats().Compactions
	for round := 0; round < 3; round++ {
		for i := 0; i < 8*floor/len(val); i++ {
			setSettled(t, db, fmt.Sprintf("key:%06d", i), val)
			check(fmt.Sprintf("round %d, key %d", round, i))
		}
	}
	if c := db.Stats().Compactions; c == before {
		t.Fatal("no compaction while a data set was overwritten three times")
	}
}

func waitCompactions(t *testing.T, db *DB, n uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for db.Stats().Compactions < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d compactions after 10s, want %d", db.Stats().Compactions, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// writeUntilStopped sets w000000, w000001, ... in db until stop is called,
// which returns once the writer has.
func writeUntilStopped(t *testing.T, db *DB) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			if err := db.Set([]byte(fmt.Sprintf("w%06d", i)), []byte("x")); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	return func() { close(quit); <-done }
}

func TestCheckpoint_IsAConsistentCopyWhileWritersGoOn(t *testing.T) {
	db := openT(t, t.TempDir(), Options{Sync: SyncNone})
	setRange(t, db, 0, 100)
	stop := writeUntilStopped(t, db)
	time.Sleep(10 * time.Millisecond)
	dst := filepath.Join(t.TempDir(), "copy")
	info, err := db.Checkpoint(context.Background(), dst)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Verify(dst, Options{}); err != nil {
		t.Fatalf("Verify(checkpoint) = %v", err)
	}
	cp := openT(t, dst, Options{})
	defer cp.Close()
	wantPrefix(t, cp, 100, 100)
	// Consistent: the writer's keys form a prefix w000000..w(n-1), n = the
	// keys the checkpoint says it holds minus the 100 set before.
	n := info.Keys - 100
	for i := 0; i < n+5; i++ {
		_, err := cp.Get([]byte(fmt.Sprintf("w%06d", i)))
		if (i < n) != (err == nil) {
			t.Fatalf("checkpoint of %d keys: w%06d present=%v", info.Keys, i, err == nil)
		}
	}
	if _, err := db.Checkpoint(context.Background(), dst); err == nil {
		t.Fatal("a checkpoint into a non-empty directory was accepted")
	}
}

func TestStreamCheckpoint_RestoresToAStoreThatOpensAndVerifies(t *testing.T) {
	db := openT(t, t.TempDir(), Options{Sync: SyncNone})
	setRange(t, db, 0, 100)
	if err := db.SetWithTTL([]byte("ttl"), []byte("v"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	stop := writeUntilStopped(t, db) // a writer keeps going during the stream
	var stream bytes.Buffer
	info, err := db.StreamCheckpoint(context.Background(), &stream)
	stop()
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	// A damaged stream is refused and leaves nothing behind.
	bad := bytes.Clone(stream.Bytes())
	bad[len(bad)/2] ^= 1
	badDir := filepath.Join(t.TempDir(), "bad")
	if _, err := RestoreCheckpoint(bytes.NewReader(bad), badDir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("restoring a damaged stream: %v, want ErrCorrupt", err)
	}
	if left, _ := filepath.Glob(filepath.Join(badDir, "*")); len(left) != 0 {
		t.Fatalf("a refused restore left %v", left)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	got, err := RestoreCheckpoint(&stream, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != info.Seq || got.Keys != info.Keys || filepath.Base(got.Path) != info.Path {
		t.Fatalf("restored %+v, streamed %+v", got, info)
	}
	if _, err := Verify(dir, Options{}); err != nil {
		t.Fatalf("Verify(restored) = %v", err)
	}
	cp := openT(t, dir, Options{})
	defer cp.Close()
	wantPrefix(t, cp, 100, 100)
	if _, ok := cp.ExpiresAt([]byte("ttl")); !ok {
		t.Fatal("the TTL did not survive the checkpoint")
	}
	n := info.Keys - 101
	for i := 0; i < n+5; i++ {
		_, err := cp.Get([]byte(fmt.Sprintf("w%06d", i)))
		if (i < n) != (err == nil) {
			t.Fatalf("checkpoint of %d keys: w%06d present=%v: not a consistent cut", info.Keys, i, err == nil)
		}
	}
	mustSet(t, cp, "after", "1") // the restored store takes writes
}
