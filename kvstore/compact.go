package kvstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/vfs"
	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Snapshots and compaction.
//
// Invariant: a log segment is deleted only after a durable snapshot (file
// synced, renamed, directory synced) covers every record in it, and only when
// the fallback snapshot covers it too, so that falling back never finds a
// hole in the log. The fallback is the newest older snapshot that passes its
// checksum when the compaction reads it; a damaged one is never kept as the
// fallback, and without a good fallback no segment is deleted.
//
// Writers are paused only while the current segment is rotated and the
// memtable's B-tree is cloned (O(1), copy-on-write); the snapshot is written
// from the clone while they go on.

// SnapshotInfo describes a snapshot written by Snapshot.
type SnapshotInfo struct {
	Path     string        `json:"path"`
	Seq      uint64        `json:"seq"`
	Keys     int           `json:"keys"`
	Bytes    int64         `json:"bytes"`
	Duration time.Duration `json:"duration_seconds"`
	// At is when the snapshot was complete.
	At time.Time `json:"at"`
	// RemovedSegments is how many log segments the snapshot let go.
	RemovedSegments int `json:"removed_segments"`
}

// Snapshot writes a snapshot of the current state and compacts the log: the
// segments both kept snapshots cover are removed, and snapshots older than
// the previous one. Writers keep going while it runs.
// A memory-only store returns ErrMemoryOnly.
func (db *DB) Snapshot(ctx context.Context) (SnapshotInfo, error) {
	if db.opts.MemoryOnly {
		return SnapshotInfo{}, ErrMemoryOnly
	}
	db.mu.Lock()
	if db.closing {
		db.mu.Unlock()
		return SnapshotInfo{}, ErrClosed
	}
	db.bg.Add(1) // Close waits for us and cancels our context
	db.mu.Unlock()
	defer db.bg.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(db.bgCtx, cancel)
	defer stop()
	return db.snapshot(ctx)
}

// compactionDue reports whether the log since the last snapshot holds
// enough history to be worth a snapshot: past the floor
// (CompactionThreshold), once the last snapshot and the log after it
// together reach 1+CompactionRatio times the live data, as Redis rewrites
// its AOF once it has grown by auto-aof-rewrite-percentage over its size
// after the last rewrite. The live data is its snapshot-encoded size now,
// or the last snapshot's size when that is larger (the live-data count
// holds a big collection as its 8-byte handle). So a log of overwrites is
// compacted every CompactionRatio times the live data, and a log of new
// keys, which a snapshot would only copy, is not snapshotted again and
// again while the data set grows: the log after a snapshot stays under
// max(floor, (1+CompactionRatio) × live), which bounds the disk and the
// replay at startup.
func (db *DB) compactionDue() bool {
	floor := db.opts.CompactionThreshold
	if floor < 0 {
		return false
	}
	since := db.stats.sinceSnapshot.Load()
	if since < floor {
		return false
	}
	snap := db.stats.lastSnapshotBytes.Load()
	live := max(db.mem.bytes.Load()+snapshotEntryOverhead*db.mem.keys.Load(), snap)
	return float64(snap+since) >= (1+db.opts.CompactionRatio)*float64(live)
}

// snapshotEntryOverhead is about what a snapshot adds to each key and
// value: their lengths, the expiry and the kind (see internal/snapshot).
const snapshotEntryOverhead = 4

// maybeCompact starts a background snapshot when compaction is due. Called
// after a commit, outside any group write.
func (db *DB) maybeCompact() {
	if !db.compactionDue() || !db.compacting.CompareAndSwap(false, true) {
		return
	}
	db.mu.Lock()
	closing := db.closing
	if !closing {
		db.bg.Add(1)
	}
	db.mu.Unlock()
	if closing {
		db.compacting.Store(false)
		return
	}
	go func() {
		defer db.bg.Done()
		defer db.compacting.Store(false)
		if _, err := db.snapshot(db.bgCtx); err != nil && !errors.Is(err, context.Canceled) {
			db.opts.Logger.Error("kvstore: background compaction failed", "dir", db.dir, "err", err)
		}
	}()
}

func (db *DB) snapshot(ctx context.Context) (SnapshotInfo, error) {
	db.snapMu.Lock()
	defer db.snapMu.Unlock()
	start := time.Now()

	view, err := db.freezeAtSegmentBoundary()
	if err != nil {
		db.stats.compactionFails.Add(1)
		return SnapshotInfo{}, err
	}
	defer view.release()
	if last := db.stats.lastSnapshot.Load(); last != nil && last.Seq == view.seq {
		return *last, nil // nothing written since the last snapshot
	}
	info, err := db.writeSnapshot(ctx, view)
	if err != nil {
		db.stats.compactionFails.Add(1)
		return SnapshotInfo{}, err
	}
	removed, err := db.removeCovered()
	if err != nil {
		db.stats.compactionFails.Add(1)
		return info, err
	}
	info.RemovedSegments = removed
	info.Duration = time.Since(start)
	db.stats.compactions.Add(1)
	db.stats.snapshotSeq.Store(info.Seq)
	db.stats.snapshotPath.Store(&info.Path)
	db.stats.lastSnapshotBytes.Store(info.Bytes)
	info.At = time.Now()
	db.stats.lastSnapshot.Store(&info)
	return info, nil
}

// freezeAtSegmentBoundary rotates the log (when the current segment holds
// records) and clones the memtable at the same instant, so every record of
// the older segments is in the frozen view and none of the new one is.
func (db *DB) freezeAtSegmentBoundary() (frozen, error) {
	var view frozen
	err := db.pipe.exclusive(func() error {
		if err := db.failure(); err != nil {
			return err
		}
		if db.seg.HasRecords() {
			if err := db.rotate(); err != nil {
				return db.fail(fmt.Errorf("start a new log segment: %w", err))
			}
		}
		db.stats.sinceSnapshot.Store(0)
		view = db.mem.freeze()
		return nil
	})
	return view, err
}

func (db *DB) writeSnapshot(ctx context.Context, view frozen) (SnapshotInfo, error) {
	return writeSnapshotTo(ctx, db.opts.fs, db.dir, view, db.opts.Logger)
}

// writeSnapshotTo writes view durably into dir as its snapshot file: temp
// file, fsync, rename, directory fsync.
func writeSnapshotTo(ctx context.Context, fs vfs.FS, dir string, view frozen, logger *slog.Logger) (SnapshotInfo, error) {
	final := filepath.Join(dir, snapshotName(view.seq))
	tmp := final + tmpSuffix
	f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("kvstore: snapshot: %w", err)
	}
	_, n, err := installTemp(fs, dir, tmp, f,
		func(f vfs.File) (int64, error) {
			return writeFrozen(ctx, &syncEvery{f: f, every: snapshotSyncBytes}, view)
		},
		func() (string, error) { return final, nil })
	if err != nil {
		if rerr := fs.Remove(tmp); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			logger.Warn("kvstore: cannot remove an unfinished snapshot; the next open removes it", "file", tmp, "err", rerr)
		}
		return SnapshotInfo{}, fmt.Errorf("kvstore: snapshot %s: %w", final, err)
	}
	return SnapshotInfo{Path: final, Seq: view.seq, Keys: view.count, Bytes: n}, nil
}

// installTemp fills the freshly created temp file f (at tmp, in dir) with
// write and installs it durably: fsync, close, then rename to the path name
// returns (called once the file is complete and closed, so it may read it
// back) and fsync dir. f is closed in every case; on error the temp file may
// remain and the caller removes it.
func installTemp(fs vfs.FS, dir, tmp string, f vfs.File, write func(vfs.File) (int64, error), name func() (string, error)) (string, int64, error) {
	n, err := write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", n, err
	}
	final, err := name()
	if err == nil {
		err = fs.Rename(tmp, final)
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	return final, n, err
}

// snapshotSyncBytes is how much snapshot data may wait in the page cache:
// flushing it in small steps keeps one large writeback from stalling the
// log's fdatasyncs behind it.
const snapshotSyncBytes = 4 << 20

// syncEvery fsyncs the file each time another `every` bytes were written.
type syncEvery struct {
	f       vfs.File
	every   int64
	pending int64
}

func (s *syncEvery) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	s.pending += int64(n)
	if err == nil && s.pending >= s.every {
		s.pending = 0
		err = s.f.Sync()
	}
	return n, err
}

// removeCovered picks the fallback — the newest older snapshot that passes
// its checksum now — and removes the snapshots older than it (and damaged
// ones, once a good fallback exists), and every log segment that the
// fallback covers entirely. Without a good fallback it removes nothing.
func (db *DB) removeCovered() (int, error) {
	fs := db.opts.fs
	snaps, err := listSnapshots(fs, db.dir)
	if err != nil {
		return 0, err
	}
	if len(snaps) < 2 {
		return 0, nil
	}
	fallback := -1
	var damaged []snapshotFile
	for i := len(snaps) - 2; i >= 0; i-- {
		h, err := readSnapshot(fs, snaps[i].path, func([]byte, []byte, int64, Kind) {})
		if err == nil && h.Seq == snaps[i].seq {
			fallback = i
			break
		}
		db.opts.Logger.Error("kvstore: compaction found a damaged snapshot; it is never kept as the fallback",
			"file", snaps[i].path, "err", err)
		damaged = append(damaged, snaps[i])
	}
	if fallback < 0 {
		db.opts.Logger.Warn("kvstore: no older snapshot passes its checksum; keeping every log segment", "dir", db.dir)
		return 0, nil
	}
	keep := snaps[fallback]
	segs, err := wal.ListSegments(fs, db.dir)
	if err != nil {
		return 0, err
	}
	removed := 0
	// Segment i holds records FirstSeq(i)..FirstSeq(i+1)-1; the current
	// segment is never removed.
	var freed int64
	for i := 0; i+1 < len(segs) && segs[i+1].FirstSeq <= keep.seq+1; i++ {
		freed += segs[i].Size
		if err := fs.Remove(segs[i].Path); err != nil {
			return removed, fmt.Errorf("kvstore: remove covered segment: %w", err)
		}
		removed++
	}
	for _, s := range append(snaps[:fallback:fallback], damaged...) {
		if err := fs.Remove(s.path); err != nil {
			return removed, fmt.Errorf("kvstore: remove old snapshot: %w", err)
		}
	}
	db.stats.logBytes.Add(-freed)
	db.stats.segments.Add(-int64(removed))
	return removed, fs.SyncDir(db.dir)
}

// Checkpoint writes a consistent copy of the store into dst (created; it
// must not exist or be empty) while writers keep going: a snapshot of every
// write acknowledged before the call, which Open and Verify accept as a data
// directory. Writers pause only while the log rotates and the index is
// cloned.
func (db *DB) Checkpoint(ctx context.Context, dst string) (SnapshotInfo, error) {
	fs := db.opts.fs
	if entries, err := fs.ReadDir(dst); err == nil && len(entries) > 0 {
		return SnapshotInfo{}, fmt.Errorf("kvstore: checkpoint: %s is not empty", dst)
	}
	if err := fs.MkdirAll(dst, 0o755); err != nil {
		return SnapshotInfo{}, fmt.Errorf("kvstore: checkpoint: %w", err)
	}
	start := time.Now()
	ctx, cancel := db.untilClose(ctx)
	defer cancel()
	view, release, err := db.freezeForCheckpoint(ctx)
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer release()
	info, err := writeSnapshotTo(ctx, fs, dst, view, db.opts.Logger)
	if err != nil {
		return info, fmt.Errorf("kvstore: checkpoint: %w", err)
	}
	info.Duration = time.Since(start)
	info.At = time.Now()
	return info, nil
}
