package kvstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/snapshot"
	"github.com/devkit-go/devkit/kvstore/internal/vfs"
	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Recovery.
//
// Invariant: the state after Open is the newest valid snapshot plus every
// record after its sequence number, in order, with no gap; a damaged tail of
// the newest segment is cut off on disk before anything new is appended, and
// damage that valid records follow is an error, never silently dropped. A
// snapshot that fails its checksum is never used.
//
// Recovery is a value that reads the directory and decides; the changes it
// makes on disk go through its recoveryActions: Open passes diskActions,
// Verify passes readOnlyActions, so the check and the open share every
// decision and differ only in whether they act on it.

// recoveryActions are the disk changes recovery makes.
type recoveryActions interface {
	// removeTemp removes an abandoned temp file.
	removeTemp(path string)
	// removeSegment removes a log segment (why says why, for the log).
	removeSegment(path, why string) error
	// damagedSnapshot is told of a snapshot that failed its checksum.
	damagedSnapshot(path string, err error) error
	// syncDir makes removals durable.
	syncDir() error
}

// diskActions are Open's: they change the directory.
type diskActions struct {
	fs     vfs.FS
	dir    string
	logger *slog.Logger
	// quarantine renames damaged snapshots aside (Repair); Open leaves them.
	quarantine bool
}

func (a diskActions) removeTemp(path string) {
	if err := a.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		a.logger.Warn("kvstore: cannot remove an abandoned temp file", "file", path, "err", err)
	}
}

func (a diskActions) removeSegment(path, why string) error {
	a.logger.Warn("kvstore: removing a log segment", "file", path, "reason", why)
	if err := a.fs.Remove(path); err != nil {
		return fmt.Errorf("kvstore: remove %s: %w", path, err)
	}
	return nil
}

func (a diskActions) damagedSnapshot(path string, err error) error {
	if !a.quarantine {
		return nil
	}
	a.logger.Warn("kvstore: moving a damaged snapshot aside", "file", path, "to", path+damagedSuffix, "err", err)
	if rerr := a.fs.Rename(path, path+damagedSuffix); rerr != nil {
		return fmt.Errorf("kvstore: move damaged snapshot %s aside: %w", path, rerr)
	}
	return nil
}

func (a diskActions) syncDir() error { return a.fs.SyncDir(a.dir) }

// readOnlyActions are Verify's: nothing changes.
type readOnlyActions struct{}

func (readOnlyActions) removeTemp(string)                   {}
func (readOnlyActions) removeSegment(string, string) error  { return nil }
func (readOnlyActions) damagedSnapshot(string, error) error { return nil }
func (readOnlyActions) syncDir() error                      { return nil }

// RecoveryReport is what recovery found in a data directory and did with it.
type RecoveryReport struct {
	Dir string `json:"dir"`
	// Snapshot is the snapshot recovery started from ("" when none) and
	// SnapshotSeq its sequence number.
	Snapshot    string `json:"snapshot,omitempty"`
	SnapshotSeq uint64 `json:"snapshot_seq"`
	// DamagedSnapshots failed their checksum and were passed over.
	DamagedSnapshots []DamagedFile `json:"damaged_snapshots,omitempty"`
	SnapshotsSkipped int           `json:"snapshots_skipped"` // len(DamagedSnapshots)
	LogSegments      int64         `json:"log_segments"`
	LogBytes         int64         `json:"log_bytes"`
	Records          uint64        `json:"records"`  // log records after the snapshot
	LastSeq          uint64        `json:"last_seq"` // sequence number of the last valid record
	Keys             int64         `json:"keys"`
	TornTailBytes    int64         `json:"torn_tail_bytes"` // cut from the newest segment (Verify: what Open would cut)
	DroppedBytes     int64         `json:"dropped_bytes"`   // of log cut by RecoverTruncate
	Duration         time.Duration `json:"duration_seconds"`
}

// DamagedFile is a file that failed its checksum.
type DamagedFile struct {
	Path string `json:"path"`
	Err  string `json:"error"`
}

// VerifyReport is what Verify found: the recovery report of a run that
// changed nothing.
type VerifyReport = RecoveryReport

// recovery rebuilds the state of a data directory.
type recovery struct {
	fs       vfs.FS
	dir      string
	mode     RecoveryMode
	logger   *slog.Logger
	act      recoveryActions
	progress recoveryProgress
	now      int64 // sets expired at now load as deletes

	// Results.
	mem       *memtable
	tail      *tailSegment // the segment to go on appending to; nil: start a new one
	next      uint64       // the sequence number of the next record
	segs      []wal.SegmentInfo
	snapshots []snapshotFile
	report    RecoveryReport
	started   time.Time
}

func newRecovery(dir string, o Options, act recoveryActions) *recovery {
	return &recovery{fs: o.fs, dir: dir, mode: o.Recovery, logger: o.Logger, act: act,
		progress: recoveryProgress{fn: o.Progress}, now: o.now().UnixNano(), report: RecoveryReport{Dir: dir}}
}

// recoverForOpen recovers db's directory with real disk actions and opens
// the log for append.
func (db *DB) recoverForOpen(act recoveryActions) error {
	rc := newRecovery(db.dir, db.opts, act)
	err := rc.run()
	db.recovery = rc.report
	if err != nil {
		return err
	}
	db.mem = rc.mem
	db.lastWritten = rc.next - 1
	db.stats.snapshotSeq.Store(rc.report.SnapshotSeq)
	db.stats.logBytes.Store(rc.report.LogBytes)
	db.stats.segments.Store(int64(len(rc.segs)))
	db.stats.sinceSnapshot.Store(rc.report.LogBytes)
	db.stats.lastSnapshotBytes.Store(rc.snapshotBytes())
	if rc.report.Snapshot != "" {
		db.stats.snapshotPath.Store(&rc.report.Snapshot)
	}
	if rc.tail != nil {
		db.seg, err = wal.OpenSegmentForAppend(db.opts.fs, rc.tail.path, rc.tail.header, rc.tail.size, rc.tail.zeroTail)
		if err == nil && rc.tail.header.Version < wal.Version {
			err = db.retireOlderFormatTail(rc)
		}
	} else {
		db.seg, err = wal.CreateSegment(db.opts.fs, db.dir, rc.next, true)
		db.stats.segments.Add(1)
	}
	if err != nil {
		return fmt.Errorf("kvstore: open log for append: %w", err)
	}
	db.curSeg.Store(db.seg)
	if rc.report.Records > 0 || rc.report.TornTailBytes > 0 {
		db.opts.Logger.Info("kvstore: recovered", "dir", db.dir, "snapshot", rc.report.Snapshot,
			"snapshot_seq", rc.report.SnapshotSeq, "replayed", rc.report.Records, "seq", db.lastWritten,
			"duration", rc.report.Duration)
	}
	return nil
}

// retireOlderFormatTail ends the newest segment, written in a format
// before collections, at its last record and starts a segment in this
// build's format: a collection op is never appended where a reader of the
// older format would take it for damage. OpenSegmentForAppend has cut any
// torn tail already.
func (db *DB) retireOlderFormatTail(rc *recovery) error {
	old := db.seg
	err := old.TrimTail()
	if err == nil {
		err = old.Sync()
	}
	if cerr := old.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if old.HasRecords() {
		db.stats.segments.Add(1)
	}
	// With no record in it, the old segment has the new one's name and is
	// replaced by it.
	db.seg, err = wal.CreateSegment(db.opts.fs, db.dir, rc.next, true)
	return err
}

// snapshotBytes is the size of the snapshot recovery used, 0 without one.
func (rc *recovery) snapshotBytes() int64 {
	for _, s := range rc.snapshots {
		if s.path == rc.report.Snapshot {
			return s.size
		}
	}
	return 0
}

// run reads the directory: the newest good snapshot, then the log after it.
func (rc *recovery) run() error {
	rc.started = time.Now()
	defer func() { rc.report.Duration = time.Since(rc.started) }()
	rc.removeTempFiles()
	segs, err := wal.ListSegments(rc.fs, rc.dir)
	if err != nil {
		return fmt.Errorf("kvstore: list log segments: %w", err)
	}
	ld, snapSeq, err := rc.loadSnapshot(segs)
	if err != nil {
		return err
	}
	rc.report.SnapshotSeq = snapSeq

	// Skip segments wholly covered by the snapshot: the next one starts at
	// or before the first record the snapshot lacks.
	for len(segs) > 1 && segs[1].FirstSeq <= snapSeq+1 {
		segs = segs[1:]
	}
	rc.progress.snapshotDone(segmentBytes(segs))
	rp := replay{rc: rc, next: snapSeq + 1, load: ld}
	for i, seg := range segs {
		newest := i == len(segs)-1
		stop, removed, err := rp.segment(seg, newest)
		if err != nil {
			ld.abort()
			// Keep what was read before the damage for Verify's report.
			rc.report.Records, rc.report.LastSeq = rp.applied, rp.next-1
			rc.report.Keys = rc.mem.keys.Load()
			rc.report.LogSegments, rc.report.LogBytes = int64(len(segs)), segmentBytes(segs)
			return err
		}
		rc.progress.report(int64(len(rp.buf)))
		if stop {
			if err := rc.dropSegments(segs[i+1:]); err != nil {
				ld.abort()
				return err
			}
		}
		if removed {
			segs = segs[:i]
			break
		}
		if stop {
			segs = segs[:i+1]
			break
		}
	}
	ld.finish(rp.next - 1)
	rc.next = rp.next
	rc.tail = rp.tail
	rc.segs = segs
	rc.report.Records = rp.applied
	rc.report.LastSeq = rp.next - 1
	rc.report.Keys = rc.mem.keys.Load()
	rc.report.LogSegments = int64(len(segs))
	for _, s := range segs {
		size := s.Size
		if end, ok := rp.dataEnd[s.Path]; ok {
			size = end // not its zero tail
		}
		if rc.tail != nil && rc.tail.path == s.Path {
			size = rc.tail.size
		}
		rc.report.LogBytes += size
	}
	return nil
}

// replay applies log segments to the memtable in order.
type replay struct {
	rc      *recovery
	next    uint64 // the sequence number the next record must carry
	applied uint64
	load    *loader
	buf     []byte
	tail    *tailSegment // the segment to keep appending to
	header  wal.Header   // of the segment being replayed
	// dataEnd is where the records of a segment with a zero tail end.
	dataEnd map[string]int64
}

type tailSegment struct {
	path   string
	header wal.Header
	size   int64
	// zeroTail: only zeros follow size (a preallocated segment); they are
	// kept and written over.
	zeroTail bool
}

// segment replays one segment. stop reports that the log was cut here and
// later segments must go (RecoverTruncate); removed that the segment itself
// went (a torn header: the trace of a crash while it was created).
func (rp *replay) segment(seg wal.SegmentInfo, newest bool) (stop, removed bool, err error) {
	rc := rp.rc
	buf, err := wal.ReadSegment(rc.fs, seg.Path, rp.buf)
	rp.buf = buf // reused for the next segment: records are copied out
	if err != nil {
		return false, false, fmt.Errorf("kvstore: read %s: %w", seg.Path, err)
	}
	maxPayload := wal.MaxPayload(MaxKeySizeLimit, MaxValueSizeLimit)
	h, herr := wal.DecodeHeader(buf)
	if errors.Is(herr, wal.ErrNewerFormat) {
		// Never damage, whatever the mode: a newer build's records.
		return false, false, fmt.Errorf("%w: %s: %w", ErrNewerFormat, seg.Path, herr)
	}
	if herr == nil && h.FirstSeq != seg.FirstSeq {
		herr = fmt.Errorf("header says first record %d, the file name says %d", h.FirstSeq, seg.FirstSeq)
	}
	rp.header = h
	if herr != nil {
		if _, valid := wal.ValidRecordAfter(buf, -1, rp.next-1, maxPayload); newest && !valid {
			// A crash while the segment was being created: nothing in it.
			rc.report.TornTailBytes += int64(len(buf))
			if err := rc.act.removeSegment(seg.Path, "torn header: the segment was being created when the process died"); err != nil {
				return false, false, err
			}
			return false, true, rc.act.syncDir()
		}
		stop, err := rp.damaged(seg, buf, 0, herr)
		return stop, stop && rp.tail == nil, err
	}
	if seg.FirstSeq > rp.next {
		// A hole: nothing from here on can be replayed in order.
		stop, err := rp.damaged(seg, buf, 0, fmt.Errorf("records %d..%d are missing from the log", rp.next, seg.FirstSeq-1))
		return stop, stop && rp.tail == nil, err
	}
	off := h.Size
	prealloc, zeroTail := h.Preallocated(), false
	for off < len(buf) {
		rec, n, err := wal.DecodeRecord(buf[off:], maxPayload)
		if err == nil && rec.Seq >= rp.next && rec.Seq != rp.next {
			err = fmt.Errorf("%w: sequence %d where %d was expected", wal.ErrBadRecord, rec.Seq, rp.next)
		}
		if err != nil {
			// end is where the non-zero bytes end: in a preallocated
			// segment the zero tail follows.
			end := len(buf)
			if prealloc {
				end = wal.NonZeroEnd(buf)
			}
			if prealloc && end <= off {
				// The zero tail of a preallocated segment: the clean end.
				zeroTail = true
				if rp.dataEnd == nil {
					rp.dataEnd = make(map[string]int64)
				}
				rp.dataEnd[seg.Path] = int64(off)
				break
			}
			// A torn tail: nothing valid follows the damage, or (written
			// over zeros) a sector the write never reached lies before
			// what does — the one write in flight at a power loss, whose
			// sectors landed out of order. An acknowledged write's
			// fdatasync made every sector before it durable, so no
			// acknowledged record is after such a hole.
			after, valid := wal.ValidRecordAfter(buf, off, rp.next-1, maxPayload)
			if newest && (!valid || prealloc && wal.ZeroSectorIn(buf, off, after)) {
				// Zeros after the torn bytes are a preallocated segment's
				// zero tail: cut with them, but not counted as torn.
				rc.report.TornTailBytes += int64(max(end, off) - off)
				rp.tail = &tailSegment{path: seg.Path, header: h, size: int64(off)}
				return false, false, nil
			}
			stop, err := rp.damaged(seg, buf, off, err)
			return stop, false, err
		}
		if rec.Seq == rp.next {
			switch rec.Type {
			case wal.TypeBatch:
				// DecodeRecord has checked the batch; an error here is a bug.
				var loadErr error
				if err := wal.ForEachOp(rec.Batch, func(op wal.Op) {
					if err := rp.loadOp(op, rec.Seq); err != nil && loadErr == nil {
						loadErr = err
					}
				}); err != nil {
					loadErr = err
				}
				if loadErr != nil {
					return false, false, &CorruptionError{File: seg.Path, Offset: int64(off), Err: loadErr}
				}
			case wal.TypeFlush:
				rp.load.add(mutation{flush: true, seq: rec.Seq})
			default:
				if err := rp.loadOp(wal.Op{Type: rec.Type, Key: rec.Key, Value: rec.Value, ExpireAt: rec.ExpireAt}, rec.Seq); err != nil {
					return false, false, &CorruptionError{File: seg.Path, Offset: int64(off), Err: err}
				}
			}
			rp.next++
			rp.applied++
		}
		off += n
	}
	if newest {
		rp.tail = &tailSegment{path: seg.Path, header: h, size: int64(off), zeroTail: zeroTail}
	}
	return false, false, nil
}

// loadOp loads one op; a set already expired loads as a delete. A
// collection's delta or expiry applies to the value the key has now (see
// collection.go).
func (rp *replay) loadOp(op wal.Op, seq uint64) error {
	kind, value, expireAt := KindString, op.Value, op.ExpireAt
	var big *bigColl
	switch op.Type {
	case wal.TypeDelete:
		rp.load.add(mutation{key: op.Key, del: true, seq: seq})
		return nil
	case wal.TypeTyped:
		if len(value) == 0 || Kind(value[0]) > maxKind {
			return fmt.Errorf("%w: a typed value of no known kind", wal.ErrBadRecord)
		}
		kind, value = Kind(value[0]), value[1:]
		var err error
		if value, big, err = settlePacked(kind, value); err != nil {
			return err
		}
	case wal.TypeDelta, wal.TypeExpire:
		e, ok := rp.load.m.get(nil, op.Key)
		if op.Type == wal.TypeExpire {
			if !ok {
				return nil // expired since
			}
			kind, value, big = e.kind, e.value, e.big
			break
		}
		r, err := replayDelta(op.Value, ok, e.kind, e.value, e.big, e.expireAt)
		switch {
		case err != nil:
			return err
		case r.skip:
			return nil
		case r.del:
			rp.load.add(mutation{key: op.Key, del: true, seq: seq})
			return nil
		}
		kind, value, big, expireAt = Kind(op.Value[0]), r.packed, r.big, r.expireAt
	}
	if expireAt != 0 && expireAt <= rp.rc.now {
		rp.load.add(mutation{key: op.Key, del: true, seq: seq})
		return nil
	}
	rp.load.add(mutation{key: op.Key, value: value, kind: kind, big: big, expireAt: expireAt, seq: seq})
	return nil
}

// damaged handles damage that is not a torn tail: an error naming the file
// and offset, or, under RecoverTruncate, a cut at that offset.
func (rp *replay) damaged(seg wal.SegmentInfo, buf []byte, off int, cause error) (bool, error) {
	path := seg.Path
	rc := rp.rc
	if rc.mode != RecoverTruncate {
		return false, &CorruptionError{File: path, Offset: int64(off), Err: cause}
	}
	rc.logger.Error("kvstore: RecoverTruncate: dropping the log from a damaged record on",
		"file", path, "offset", off, "bytes", len(buf)-off, "reason", cause)
	rc.report.DroppedBytes += int64(len(buf) - off)
	if off < max(rp.header.Size, wal.HeaderSize) {
		// Nothing usable in this segment: start a fresh one in its place.
		if err := rc.act.removeSegment(path, "RecoverTruncate: damaged header"); err != nil {
			return false, err
		}
		return true, rc.act.syncDir()
	}
	rp.tail = &tailSegment{path: path, header: rp.header, size: int64(off)}
	return true, nil
}

// dropSegments removes segments after a RecoverTruncate cut.
func (rc *recovery) dropSegments(segs []wal.SegmentInfo) error {
	for _, s := range segs {
		rc.report.DroppedBytes += s.Size
		if err := rc.act.removeSegment(s.Path, "RecoverTruncate: after the cut"); err != nil {
			return err
		}
	}
	if len(segs) > 0 {
		return rc.act.syncDir()
	}
	return nil
}

// loadSnapshot loads the newest snapshot that passes its checksum, falling
// back to older ones, into a memtable whose load goes on with the log.
// Without a usable snapshot the log must start at the first record.
func (rc *recovery) loadSnapshot(segs []wal.SegmentInfo) (*loader, uint64, error) {
	snaps, err := listSnapshots(rc.fs, rc.dir)
	if err != nil {
		return nil, 0, err
	}
	rc.snapshots = snaps
	total := segmentBytes(segs)
	if len(snaps) > 0 {
		total += snaps[len(snaps)-1].size
	}
	rc.progress.start(total)
	// Guess the number of keys at 128 bytes each: enough to skip most map
	// growth without reserving much more than the data needs.
	hint := int(min(total/128, 1<<26))
	for i := len(snaps) - 1; i >= 0; i-- {
		mem := newMemtable()
		ld := mem.startLoad(hint)
		h, err := readSnapshot(rc.fs, snaps[i].path, func(key, value []byte, expireAt int64, kind Kind) {
			if expireAt != 0 && expireAt <= rc.now {
				return // expired: not loaded at all
			}
			// The snapshot is read first, into an empty memtable, and its
			// keys are unique (snapshot.Read checks their order). A large
			// collection is loaded in its big form (one that does not
			// decode stays packed, refused when read, as before).
			mu := mutation{key: key, value: value, kind: kind, expireAt: expireAt, seq: snaps[i].seq}
			if packed, big, err := settlePacked(kind, value); err == nil {
				mu.value, mu.big = packed, big
			}
			ld.addNew(mu, true)
		})
		rc.progress.report(snaps[i].size)
		if err == nil && h.Seq != snaps[i].seq {
			err = fmt.Errorf("%w: the header says sequence %d, the file name %d", snapshot.ErrCorrupt, h.Seq, snaps[i].seq)
		}
		if err == nil {
			rc.mem = mem
			rc.report.Snapshot = snaps[i].path
			return ld, h.Seq, nil
		}
		ld.abort()
		if errors.Is(err, snapshot.ErrNewerFormat) {
			// An older snapshot would be a silent step back in time.
			return nil, 0, fmt.Errorf("%w: %s: %w", ErrNewerFormat, snaps[i].path, err)
		}
		rc.report.DamagedSnapshots = append(rc.report.DamagedSnapshots, DamagedFile{Path: snaps[i].path, Err: err.Error()})
		rc.report.SnapshotsSkipped++
		rc.logger.Error("kvstore: skipping a damaged snapshot", "file", snaps[i].path, "err", err)
		if aerr := rc.act.damagedSnapshot(snaps[i].path, err); aerr != nil {
			return nil, 0, aerr
		}
	}
	if len(snaps) > 0 && (len(segs) == 0 || segs[0].FirstSeq != 1) {
		return nil, 0, &UnrecoverableError{Dir: rc.dir, Damaged: rc.report.DamagedSnapshots}
	}
	rc.mem = newMemtable()
	return rc.mem.startLoad(hint), 0, nil
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

func (p *recoveryProgress) start(total int64) {
	p.total = total
	if p.fn != nil {
		p.fn(0, total)
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

// readSnapshot reads and checks a whole snapshot, calling fn for each entry.
func readSnapshot(fs vfs.FS, path string, fn func(key, value []byte, expireAt int64, kind Kind)) (snapshot.Header, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return snapshot.Header{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return snapshot.Header{}, err
	}
	lim := snapshot.Limits{MaxKey: MaxKeySizeLimit, MaxValue: MaxValueSizeLimit}
	return snapshot.Read(f, fi.Size(), lim, func(key, value []byte, expireAt int64, kind uint8) error {
		if Kind(kind) > maxKind {
			return fmt.Errorf("%w: a value of unknown kind %d", snapshot.ErrCorrupt, kind)
		}
		fn(key, value, expireAt, Kind(kind))
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
	// damagedSuffix marks a snapshot Repair moved aside: kept for a
	// post-mortem, never read again.
	damagedSuffix = ".damaged"
)

func snapshotName(seq uint64) string { return fmt.Sprintf("%s%020d%s", snapPrefix, seq, snapSuffix) }

// listSnapshots returns the snapshot files of dir, oldest first.
func listSnapshots(fs vfs.FS, dir string) ([]snapshotFile, error) {
	entries, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("kvstore: list %s: %w", dir, err)
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
			return nil, fmt.Errorf("kvstore: list %s: %w", dir, err)
		}
		out = append(out, snapshotFile{path: filepath.Join(dir, name), seq: seq, size: info.Size()})
	}
	// Names are zero-padded, so ReadDir's name order is sequence order.
	return out, nil
}

// removeTempFiles deletes snapshots that were being written when the
// process died; they were never renamed into place, so nothing needs them.
func (rc *recovery) removeTempFiles() {
	entries, err := rc.fs.ReadDir(rc.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), tmpSuffix) {
			rc.act.removeTemp(filepath.Join(rc.dir, e.Name()))
		}
	}
}
