package kvstore

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/vfs"
)

// SyncPolicy says when a write is acknowledged.
type SyncPolicy int

const (
	// SyncAlways acknowledges a write only after the log record holding it is
	// durable (fdatasync). Concurrent writers share fsyncs (group commit).
	// It is the zero value and the default.
	SyncAlways SyncPolicy = iota
	// SyncPeriodic acknowledges a write once it is handed to the OS; a
	// background fsync runs every Options.SyncInterval. Killing the process
	// loses nothing; a power loss can lose the last interval.
	SyncPeriodic
	// SyncNone acknowledges a write once it is handed to the OS and leaves
	// flushing to the OS. Killing the process loses nothing.
	SyncNone
)

var syncPolicyNames = [...]string{"always", "periodic", "none"}

func (p SyncPolicy) String() string {
	if p < 0 || int(p) >= len(syncPolicyNames) {
		return fmt.Sprintf("SyncPolicy(%d)", int(p))
	}
	return syncPolicyNames[p]
}

// ParseSyncPolicy parses "always", "periodic" or "none".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	for i, name := range syncPolicyNames {
		if strings.EqualFold(s, name) {
			return SyncPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("kvstore: unknown sync policy %q (want always, periodic or none)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (p SyncPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *SyncPolicy) UnmarshalText(b []byte) error {
	v, err := ParseSyncPolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// RecoveryMode says what Open does with a damaged log.
type RecoveryMode int

const (
	// RecoverStrict truncates a torn tail of the newest segment (damage with
	// nothing valid after it: the trace of a crash mid-write) and refuses to
	// open a log that is damaged in the middle, naming the file and offset.
	RecoverStrict RecoveryMode = iota
	// RecoverTruncate also cuts the log at mid-log damage, dropping every
	// record after it. Use it to get a damaged store back online after
	// saving a copy of the directory; the dropped count is logged.
	RecoverTruncate
)

// Format bounds: the largest key and value the on-disk format admits, and
// so the decoders' bounds on any length field.
const (
	MaxKeySizeLimit   = 64 << 10
	MaxValueSizeLimit = 256 << 20
)

// Defaults of Options.
const (
	DefaultSyncInterval        = time.Second
	DefaultMaxKeySize          = 4 << 10
	DefaultMaxValueSize        = 8 << 20
	DefaultSegmentSize         = 64 << 20
	DefaultCompactionThreshold = 64 << 20
	DefaultCompactionRatio     = 1.0
	DefaultExpirySweepInterval = 100 * time.Millisecond
)

// Options configure an engine. The zero value is the strict default.
type Options struct {
	// MemoryOnly keeps the store in memory and nowhere else, as a cache:
	// no data directory, no log, no snapshots, no file of any kind, and
	// nothing survives Close or the process. Open takes "" as its
	// directory. A write is acknowledged once it is applied in memory
	// (Sync and the log's options are ignored; SyncPolicy reports
	// SyncNone), and Snapshot returns ErrMemoryOnly. Checkpoint and
	// StreamCheckpoint still copy the store where the caller asks, as a
	// Redis without persistence still answers a replica's or redis-cli
	// --rdb's request for a copy.
	MemoryOnly bool
	// Sync is the durability policy; SyncAlways when zero.
	Sync SyncPolicy
	// SyncInterval is the fsync period under SyncPeriodic; 1s when zero.
	SyncInterval time.Duration
	// MaxKeySize bounds keys, in bytes (1..MaxKeySizeLimit); 4 KiB when zero.
	MaxKeySize int
	// MaxValueSize bounds values, in bytes (up to MaxValueSizeLimit); 8 MiB when zero.
	MaxValueSize int
	// SegmentSize is the size at which the log moves to a new segment; 64 MiB when zero.
	SegmentSize int64
	// CompactionThreshold is the floor of the log growth since the last
	// snapshot that starts a snapshot in the background; 64 MiB when zero,
	// never when negative. Above the floor, compaction starts once the
	// last snapshot and the log since it reach 1+CompactionRatio times the
	// live data (Redis's auto-aof-rewrite-percentage and -min-size).
	CompactionThreshold int64
	// CompactionRatio is the history, relative to the live data, that the
	// last snapshot and the log after it may hold before a compaction
	// starts; 1 when zero (Redis's auto-aof-rewrite-percentage 100).
	CompactionRatio float64
	// Recovery says what Open does with a damaged log; RecoverStrict when zero.
	Recovery RecoveryMode
	// Logger receives recovery and failure events; slog.Default() when nil.
	Logger *slog.Logger
	// Progress, when set, is called during recovery after each file is
	// read, with the bytes read so far and the total to read.
	Progress func(read, total int64)
	// ExpirySweepInterval is how often the background sweep looks for
	// expired keys to delete (a bounded sample each time, as Redis does);
	// 100ms when zero, never when negative (expired keys then go only
	// when a reader or writer meets them).
	ExpirySweepInterval time.Duration

	// fs is the file-system seam; tests inject faults through it.
	fs vfs.FS
	// clock is the time expiry is judged by; time.Now when nil (tests move it).
	clock func() time.Time
	// noPrealloc turns preallocated log segments off (the benchmark that
	// measures them runs an engine without them side by side).
	noPrealloc bool
	// preallocAfter is how many groups the engine syncs before it prepares
	// segments: preallocAfterGroups unless set (the kill -9 test of
	// preallocated segments prepares from the first group on).
	preallocAfter int
}

// withDefaultsFS is the file system of the default options.
func (o Options) withDefaultsFS() vfs.FS {
	if o.fs == nil {
		return vfs.OS{}
	}
	return o.fs
}

// now is the time expiry is judged by.
func (o *Options) now() time.Time {
	if o.clock != nil {
		return o.clock()
	}
	return time.Now()
}

func (o Options) withDefaults() (Options, error) {
	if o.Sync < SyncAlways || o.Sync > SyncNone {
		return o, fmt.Errorf("kvstore: invalid sync policy %d", o.Sync)
	}
	if o.MemoryOnly {
		o.Sync = SyncNone // acknowledged once applied: there is no disk to wait for
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.SyncInterval < 0 {
		return o, fmt.Errorf("kvstore: negative sync interval %v", o.SyncInterval)
	}
	if o.MaxKeySize == 0 {
		o.MaxKeySize = DefaultMaxKeySize
	}
	if o.MaxValueSize == 0 {
		o.MaxValueSize = DefaultMaxValueSize
	}
	if o.MaxKeySize < 1 || o.MaxKeySize > MaxKeySizeLimit {
		return o, fmt.Errorf("kvstore: MaxKeySize %d out of range 1..%d", o.MaxKeySize, MaxKeySizeLimit)
	}
	if o.MaxValueSize < 0 || o.MaxValueSize > MaxValueSizeLimit {
		return o, fmt.Errorf("kvstore: MaxValueSize %d out of range 0..%d", o.MaxValueSize, MaxValueSizeLimit)
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.SegmentSize < 0 {
		return o, fmt.Errorf("kvstore: negative segment size %d", o.SegmentSize)
	}
	if o.CompactionThreshold == 0 {
		o.CompactionThreshold = DefaultCompactionThreshold
	}
	if o.CompactionRatio == 0 {
		o.CompactionRatio = DefaultCompactionRatio
	}
	if o.CompactionRatio < 0 {
		return o, fmt.Errorf("kvstore: negative compaction ratio %v", o.CompactionRatio)
	}
	if o.Recovery != RecoverStrict && o.Recovery != RecoverTruncate {
		return o, fmt.Errorf("kvstore: invalid recovery mode %d", o.Recovery)
	}
	if o.ExpirySweepInterval == 0 {
		o.ExpirySweepInterval = DefaultExpirySweepInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.preallocAfter <= 0 {
		o.preallocAfter = preallocAfterGroups
	}
	if o.fs == nil {
		o.fs = vfs.OS{}
	}
	return o, nil
}
