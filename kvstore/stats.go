package kvstore

import (
	"sync/atomic"
	"time"
)

// counters are updated with atomics on the paths that move them.
type counters struct {
	sets, deletes   atomic.Uint64
	batches         atomic.Uint64
	fsyncs          atomic.Uint64
	syncedRecords   atomic.Uint64
	logBytes        atomic.Int64
	sinceSnapshot   atomic.Int64
	segments        atomic.Int64
	preallocated    atomic.Uint64
	compactions     atomic.Uint64
	compactionFails atomic.Uint64
	snapshotSeq     atomic.Uint64
	snapshotPath    atomic.Pointer[string]
	// lastSnapshotBytes is the size of the newest good snapshot: compaction
	// starts when the log since it outgrows it.
	lastSnapshotBytes atomic.Int64
	lastSnapshot      atomic.Pointer[SnapshotInfo] // written by this process
	expired           atomic.Uint64
}

// Stats is a point-in-time view of the engine's counters.
type Stats struct {
	Keys      int64 `json:"keys"`
	DataBytes int64 `json:"data_bytes"` // sum of key and value lengths
	// MemoryBytes is what the memtable holds: its arena chunks, hash slots,
	// B-tree items and big collections' trees (estimated; for INFO memory).
	MemoryBytes int64 `json:"memory_bytes"`
	// KeysWithTTL counts keys that have a TTL (INFO keyspace's expires=).
	KeysWithTTL int64 `json:"keys_with_ttl"`
	// AvgTTLSeconds estimates the time left to the keys with a TTL from a
	// sample of them, as Redis's avg_ttl does (INFO keyspace, in ms there);
	// 0 when none is left to expire.
	AvgTTLSeconds float64 `json:"avg_ttl_seconds"`
	Seq           uint64  `json:"seq"` // last acknowledged sequence number
	SyncPolicy    string  `json:"sync_policy"`
	// MemoryOnly: the store keeps nothing on disk (Options.MemoryOnly).
	MemoryOnly bool `json:"memory_only"`

	Sets    uint64 `json:"sets"`
	Deletes uint64 `json:"deletes"`
	Gets    uint64 `json:"gets"`
	Hits    uint64 `json:"hits"`
	Misses  uint64 `json:"misses"`

	LogBytes        int64   `json:"log_bytes"` // bytes in live log segments
	LogSegments     int64   `json:"log_segments"`
	Batches         uint64  `json:"batches"` // group-commit batches written
	Fsyncs          uint64  `json:"fsyncs"`
	RecordsPerFsync float64 `json:"records_per_fsync"`
	// PreallocatedSegments counts the log segments this process started
	// over zeros prepared ahead (written in place: cheaper fsyncs).
	PreallocatedSegments uint64 `json:"preallocated_segments"`

	Compactions        uint64    `json:"compactions"`
	CompactionFailures uint64    `json:"compaction_failures"`
	SnapshotSeq        uint64    `json:"snapshot_seq"`
	LastSnapshot       time.Time `json:"last_snapshot,omitzero"`
	// Snapshot is the newest snapshot the log is replayed from: the one
	// recovery used, or the last one written since.
	Snapshot string `json:"snapshot,omitempty"`
	// ExpiredKeys is how many expired keys the sweep deleted.
	ExpiredKeys uint64 `json:"expired_keys"`

	ReplayedRecords  uint64        `json:"replayed_records"`
	ReplayDuration   time.Duration `json:"replay_duration_seconds"`
	TornTailBytes    int64         `json:"torn_tail_bytes"`   // cut from the log at open
	DroppedBytes     int64         `json:"dropped_bytes"`     // of log cut by RecoverTruncate at open
	SnapshotsSkipped int           `json:"snapshots_skipped"` // damaged snapshots passed over at open

	ReadOnly       bool   `json:"read_only"`
	ReadOnlyReason string `json:"read_only_reason,omitempty"`
}

// Stats returns the engine's counters.
func (db *DB) Stats() Stats {
	c := &db.stats
	s := Stats{
		Keys:                 db.mem.keys.Load(),
		DataBytes:            db.mem.bytes.Load(),
		MemoryBytes:          db.mem.memoryBytes(),
		SyncPolicy:           db.opts.Sync.String(),
		MemoryOnly:           db.opts.MemoryOnly,
		Sets:                 c.sets.Load(),
		Deletes:              c.deletes.Load(),
		LogBytes:             c.logBytes.Load(),
		LogSegments:          c.segments.Load(),
		Batches:              c.batches.Load(),
		Fsyncs:               c.fsyncs.Load(),
		PreallocatedSegments: c.preallocated.Load(),
		Compactions:          c.compactions.Load(),
		CompactionFailures:   c.compactionFails.Load(),
		SnapshotSeq:          c.snapshotSeq.Load(),
		ReplayedRecords:      db.recovery.Records,
		ReplayDuration:       db.recovery.Duration,
		TornTailBytes:        db.recovery.TornTailBytes,
		DroppedBytes:         db.recovery.DroppedBytes,
		SnapshotsSkipped:     db.recovery.SnapshotsSkipped,
		Snapshot:             db.recovery.Snapshot,
		ExpiredKeys:          c.expired.Load(),
	}
	if p := c.snapshotPath.Load(); p != nil {
		s.Snapshot = *p
	}
	db.mem.treeMu.RLock()
	s.Seq = db.mem.seq
	db.mem.treeMu.RUnlock()
	for i := range db.mem.shards {
		s.Hits += db.mem.shards[i].hits.Load()
		s.Misses += db.mem.shards[i].misses.Load()
	}
	s.Gets = s.Hits + s.Misses
	if s.Fsyncs > 0 {
		s.RecordsPerFsync = float64(c.syncedRecords.Load()) / float64(s.Fsyncs)
	}
	if last := c.lastSnapshot.Load(); last != nil {
		s.LastSnapshot = last.At
	}
	if err := db.failure(); err != nil {
		s.ReadOnly = true
		s.ReadOnlyReason = err.Error()
	}
	keys, avg := db.mem.ttlStats(db.opts.now().UnixNano(), avgTTLSample)
	s.KeysWithTTL, s.AvgTTLSeconds = keys, avg.Seconds()
	return s
}

// Recovery returns what Open found in the directory and did with it: the
// snapshot it started from, the damaged snapshots it passed over, the log
// it replayed and what it cut.
func (db *DB) Recovery() RecoveryReport { return db.recovery }
