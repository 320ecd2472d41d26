package kvstore

import (
	"errors"
	"fmt"
	"os"
)

// VerifyReport is what Verify found in a data directory.
type VerifyReport struct {
	Dir              string `json:"dir"`
	SnapshotSeq      uint64 `json:"snapshot_seq"`      // sequence number of the snapshot recovery starts from
	SnapshotsSkipped int    `json:"snapshots_skipped"` // damaged snapshots passed over
	LogSegments      int64  `json:"log_segments"`
	LogBytes         int64  `json:"log_bytes"`
	Records          uint64 `json:"records"`  // log records after the snapshot
	LastSeq          uint64 `json:"last_seq"` // sequence number of the last valid record
	Keys             int64  `json:"keys"`
	TornTailBytes    int64  `json:"torn_tail_bytes"` // what the next Open would cut
}

// Verify checks a data directory the way Open recovers it — every snapshot
// and log record against its checksum, the sequence numbers for gaps —
// without changing anything: it takes no lock, cuts no torn tail and removes
// no file, so it is safe on a copy, on a backup, or on a directory in use
// (where a torn tail may just be a write in flight). Mid-log corruption is
// returned as a *CorruptionError; the report says what came before it.
func Verify(dir string, opts Options) (VerifyReport, error) {
	rep := VerifyReport{Dir: dir}
	o, err := opts.withDefaults()
	if err != nil {
		return rep, err
	}
	if fi, err := os.Stat(dir); err != nil {
		return rep, fmt.Errorf("kvstore: verify: %w", err)
	} else if !fi.IsDir() {
		return rep, fmt.Errorf("kvstore: verify: %s is not a directory", dir)
	}
	db := &DB{dir: dir, opts: o, verifyOnly: true}
	err = db.recover()
	c := &db.stats
	rep.SnapshotSeq = c.snapshotSeq.Load()
	rep.SnapshotsSkipped = c.snapshotsSkip
	rep.LogSegments = c.segments.Load()
	rep.LogBytes = c.logBytes.Load()
	rep.Records = c.replayed
	rep.LastSeq = db.lastWritten
	rep.TornTailBytes = c.tornBytes
	if db.mem != nil {
		rep.Keys = db.mem.keys.Load()
	}
	var ce *CorruptionError
	if err != nil && !errors.As(err, &ce) && !errors.Is(err, ErrCorrupt) {
		err = fmt.Errorf("kvstore: verify %s: %w", dir, err)
	}
	return rep, err
}
