package kvstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/snapshot"
	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Recovery.
//
// Invariant: the state after Open is the newest valid snapshot plus every
// record after its sequence number, in order, with no gap; a damaged tail of
// the newest segment is cut off on disk before anything new is appended, and
// damage that valid records follow is an error, never silently dropped.

func (db *DB) recover() error {
	start := time.Now()
	if !db.verifyOnly {
		db.removeTempFiles()
	}
	segs, err := wal.ListSegments(db.opts.fs, db.dir)
	if err != nil {
		return fmt.Errorf("kvstore: list log segments: %w", err)
	}
	mem, ld, snapSeq, err := db.loadSnapshot(segs)
	if err != nil {
		return err
	}
	db.mem = mem
	db.stats.snapshotSeq.Store(snapSeq)

	// Skip segments wholly covered by the snapshot: the next one starts at
	// or before the first record the snapshot lacks.
	for len(segs) > 1 && segs[1].FirstSeq <= snapSeq+1 {
		segs = segs[1:]
	}
	db.progress.snapshotDone(segmentBytes(segs))
	rp := replay{db: db, next: snapSeq + 1, load: ld}
	for i, seg := range segs {
		newest := i == len(segs)-1
		stop, err := rp.segment(seg, newest)
		if err != nil {
			ld.abort()
			// Keep what was read before the damage for Verify's report.
			db.stats.replayed, db.lastWritten = rp.applied, rp.next-1
			return err
		}
		db.progress.report(int64(len(rp.buf)))
		if stop {
			if err := db.dropSegments(segs[i+1:]); err != nil {
				ld.abort()
				return err
			}
			segs = segs[:i+1]
			break
		}
	}
	ld.finish(rp.next - 1)
	db.nextSeq = rp.next
	db.lastWritten = rp.next - 1
	db.stats.replayed = rp.applied
	db.stats.replayTime = time.Since(start)

	var logBytes int64
	for _, s := range segs {
		if fi, err := os.Stat(s.Path); err == nil {
			logBytes += fi.Size()
		}
	}
	db.stats.logBytes.Store(logBytes)
	db.stats.segments.Store(int64(len(segs)))
	db.stats.sinceSnapshot.Store(logBytes)
	if db.verifyOnly {
		return nil
	}

	if rp.tail != nil {
		db.seg, err = wal.OpenSegmentForAppend(db.opts.fs, rp.tail.path, rp.tail.firstSeq, rp.tail.size)
	} else {
		db.seg, err = wal.CreateSegment(db.opts.fs, db.dir, db.nextSeq, true)
		db.stats.segments.Add(1)
	}
	if err != nil {
		return fmt.Errorf("kvstore: open log for append: %w", err)
	}
	db.curSeg.Store(db.seg)
	if rp.applied > 0 || db.stats.tornBytes > 0 {
		db.opts.Logger.Info("kvstore: recovered", "dir", db.dir, "snapshot_seq", snapSeq,
			"replayed", rp.applied, "seq", db.lastWritten, "duration", db.stats.replayTime)
	}
	return nil
}

// replay applies log segments to the memtable in order.
type replay struct {
	db      *DB
	next    uint64 // the sequence number the next record must carry
	applied uint64
	load    *loader
	buf     []byte
	tail    *tailSegment // the segment to keep appending to
}

type tailSegment struct {
	path     string
	firstSeq uint64
	size     int64
}

// segment replays one segment. stop reports that the log was cut here and
// later segments must go (RecoverTruncate).
func (rp *replay) segment(seg wal.SegmentInfo, newest bool) (stop bool, err error) {
	db := rp.db
	buf, err := wal.ReadSegment(db.opts.fs, seg.Path, rp.buf)
	rp.buf = buf // reused for the next segment: records are copied out
	if err != nil {
		return false, fmt.Errorf("kvstore: read %s: %w", seg.Path, err)
	}
	maxPayload := wal.MaxPayload(MaxKeySizeLimit, MaxValueSizeLimit)
	first, herr := wal.DecodeHeader(buf)
	if herr == nil && first != seg.FirstSeq {
		herr = fmt.Errorf("header says first record %d, the file name says %d", first, seg.FirstSeq)
	}
	if herr != nil {
		if _, valid := wal.ValidRecordAfter(buf, -1, rp.next-1, maxPayload); newest && !valid {
			// A crash while the segment was being created: nothing in it.
			db.stats.tornBytes += int64(len(buf))
			if db.verifyOnly {
				return false, nil
			}
			db.opts.Logger.Warn("kvstore: removing a log segment with a torn header", "file", seg.Path, "bytes", len(buf))
			return false, db.removeSynced(seg.Path)
		}
		return rp.damaged(seg, buf, 0, herr)
	}
	if seg.FirstSeq > rp.next {
		return false, &CorruptionError{File: seg.Path, Offset: 0,
			Err: fmt.Errorf("records %d..%d are missing from the log", rp.next, seg.FirstSeq-1)}
	}
	off := wal.HeaderSize
	for off < len(buf) {
		rec, n, err := wal.DecodeRecord(buf[off:], maxPayload)
		if err == nil && rec.Seq >= rp.next && rec.Seq != rp.next {
			err = fmt.Errorf("%w: sequence %d where %d was expected", wal.ErrBadRecord, rec.Seq, rp.next)
		}
		if err != nil {
			if _, valid := wal.ValidRecordAfter(buf, off, rp.next-1, maxPayload); newest && !valid {
				if !db.verifyOnly {
					db.opts.Logger.Warn("kvstore: cutting a torn tail off the log", "file", seg.Path,
						"offset", off, "bytes", len(buf)-off, "reason", err)
				}
				db.stats.tornBytes += int64(len(buf) - off)
				rp.tail = &tailSegment{path: seg.Path, firstSeq: seg.FirstSeq, size: int64(off)}
				return false, nil
			}
			return rp.damaged(seg, buf, off, err)
		}
		if rec.Seq == rp.next {
			switch rec.Type {
			case wal.TypeBatch:
				// DecodeRecord has checked the batch; an error here is a bug.
				if err := wal.ForEachOp(rec.Batch, rp.loadOp); err != nil {
					return false, &CorruptionError{File: seg.Path, Offset: int64(off), Err: err}
				}
			default:
				rp.loadOp(wal.Op{Type: rec.Type, Key: rec.Key, Value: rec.Value})
			}
			rp.next++
			rp.applied++
		}
		off += n
	}
	if newest {
		rp.tail = &tailSegment{path: seg.Path, firstSeq: seg.FirstSeq, size: int64(off)}
	}
	return false, nil
}

func (rp *replay) loadOp(op wal.Op) {
	if op.Type == wal.TypeDelete {
		rp.load.add(mutation{key: string(op.Key), del: true})
	} else {
		rp.load.add(ownedMutation(op.Key, op.Value))
	}
}

// damaged handles damage that is not a torn tail: an error naming the file
// and offset, or, under RecoverTruncate, a cut at that offset.
func (rp *replay) damaged(seg wal.SegmentInfo, buf []byte, off int, cause error) (bool, error) {
	path := seg.Path
	db := rp.db
	if db.opts.Recovery != RecoverTruncate || db.verifyOnly {
		return false, &CorruptionError{File: path, Offset: int64(off), Err: cause}
	}
	db.opts.Logger.Error("kvstore: RecoverTruncate: dropping the log from a damaged record on",
		"file", path, "offset", off, "bytes", len(buf)-off, "reason", cause)
	db.stats.droppedBytes += int64(len(buf) - off)
	if off < wal.HeaderSize {
		// Nothing usable in this segment: start a fresh one in its place.
		if err := db.removeSynced(path); err != nil {
			return false, err
		}
		return true, nil
	}
	rp.tail = &tailSegment{path: path, firstSeq: seg.FirstSeq, size: int64(off)}
	return true, nil
}

// dropSegments removes segments after a RecoverTruncate cut.
func (db *DB) dropSegments(segs []wal.SegmentInfo) error {
	for _, s := range segs {
		db.opts.Logger.Error("kvstore: RecoverTruncate: removing a log segment after the cut", "file", s.Path)
		db.stats.droppedBytes += s.Size
		if err := db.opts.fs.Remove(s.Path); err != nil {
			return fmt.Errorf("kvstore: remove %s: %w", s.Path, err)
		}
	}
	if len(segs) > 0 {
		return db.opts.fs.SyncDir(db.dir)
	}
	return nil
}

func (db *DB) removeSynced(path string) error {
	if err := db.opts.fs.Remove(path); err != nil {
		return fmt.Errorf("kvstore: remove %s: %w", path, err)
	}
	return db.opts.fs.SyncDir(db.dir)
}

// loadSnapshot loads the newest snapshot that passes its checksum, falling
// back to older ones, into a memtable whose load goes on with the log.
// Without a usable snapshot the log must start at the first record.
func (db *DB) loadSnapshot(segs []wal.SegmentInfo) (*memtable, *loader, uint64, error) {
	snaps, err := db.listSnapshots()
	if err != nil {
		return nil, nil, 0, err
	}
	total := segmentBytes(segs)
	if len(snaps) > 0 {
		total += snaps[len(snaps)-1].size
	}
	db.progress.start(db.opts.Progress, total)
	// Guess the number of keys at 128 bytes each: enough to skip most map
	// growth without reserving much more than the data needs.
	hint := int(min(total/128, 1<<26))
	for i := len(snaps) - 1; i >= 0; i-- {
		mem := newMemtable()
		ld := mem.startLoad(hint)
		h, err := db.readSnapshot(snaps[i].path, ld)
		db.progress.report(snaps[i].size)
		if err == nil {
			return mem, ld, h.Seq, nil
		}
		ld.abort()
		db.stats.snapshotsSkip++
		db.opts.Logger.Error("kvstore: skipping a damaged snapshot", "file", snaps[i].path, "err", err)
	}
	if len(snaps) > 0 && (len(segs) == 0 || segs[0].FirstSeq != 1) {
		return nil, nil, 0, fmt.Errorf("%w: every snapshot in %s is damaged and the log no longer starts at the first record", ErrCorrupt, db.dir)
	}
	mem := newMemtable()
	return mem, mem.startLoad(hint), 0, nil
}

func segmentBytes(segs []wal.SegmentInfo) int64 {
	var n int64
	for _, s := range segs {
		n += s.Size
	}
	return n
}

// recoveryProgress reports bytes read during recovery to Options.Progress.
type recoveryProgress struct {
	fn    func(read, total int64)
	read  int64
	total int64
}

func (p *recoveryProgress) start(fn func(read, total int64), total int64) {
	p.fn, p.total = fn, total
	if fn != nil {
		fn(0, total)
	}
}

// snapshotDone sets what is left to read once the snapshot is loaded: the
// segments it does not cover.
func (p *recoveryProgress) snapshotDone(segments int64) { p.total = p.read + segments }

func (p *recoveryProgress) report(n int64) {
	if p.fn == nil {
		return
	}
	p.read = min(p.read+n, p.total)
	p.fn(p.read, p.total)
}

func (db *DB) readSnapshot(path string, ld *loader) (snapshot.Header, error) {
	f, err := db.opts.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return snapshot.Header{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return snapshot.Header{}, err
	}
	lim := snapshot.Limits{MaxKey: MaxKeySizeLimit, MaxValue: MaxValueSizeLimit}
	return snapshot.Read(f, fi.Size(), lim, func(key, value []byte) error {
		ld.add(ownedMutation(key, value))
		return nil
	})
}

type snapshotFile struct {
	path string
	seq  uint64
	size int64 // as listed
}

const (
	snapPrefix = "snap-"
	snapSuffix = ".snap"
	tmpSuffix  = ".tmp"
)

func snapshotName(seq uint64) string { return fmt.Sprintf("%s%020d%s", snapPrefix, seq, snapSuffix) }

// listSnapshots returns the snapshot files of the directory, oldest first.
func (db *DB) listSnapshots() ([]snapshotFile, error) {
	entries, err := db.opts.fs.ReadDir(db.dir)
	if err != nil {
		return nil, fmt.Errorf("kvstore: list %s: %w", db.dir, err)
	}
	var out []snapshotFile
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, snapPrefix) || !strings.HasSuffix(name, snapSuffix) {
			continue
		}
		var seq uint64
		if _, err := fmt.Sscanf(strings.TrimSuffix(strings.TrimPrefix(name, snapPrefix), snapSuffix), "%d", &seq); err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("kvstore: list %s: %w", db.dir, err)
		}
		out = append(out, snapshotFile{path: filepath.Join(db.dir, name), seq: seq, size: info.Size()})
	}
	// Names are zero-padded, so ReadDir's name order is sequence order.
	return out, nil
}

// removeTempFiles deletes snapshots that were being written when the
// process died; they were never renamed into place, so nothing needs them.
func (db *DB) removeTempFiles() {
	entries, err := db.opts.fs.ReadDir(db.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), tmpSuffix) {
			if err := db.opts.fs.Remove(filepath.Join(db.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				db.opts.Logger.Warn("kvstore: cannot remove an abandoned temp file", "file", e.Name(), "err", err)
			}
		}
	}
}
