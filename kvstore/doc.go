// Package kvstore is a durable, embedded key-value engine: a write-ahead log
// of checksummed records, group commit, snapshots with compaction, and crash
// recovery that keeps the last clean prefix of the log.
//
// # Durability
//
// Under SyncAlways (the default) Set and Delete return only after the log
// record holding the write is fdatasynced; concurrent writers share fsyncs
// (group commit, see commitPipeline), and a lone writer never waits for
// batching. Apply with WriteOptions{NoSyncWait: true} returns once a batch
// has its place in the log order and lets the caller wait once for a burst.
// Update runs a read-modify-write transaction atomically against every
// other write without serialising on the disk. Keys may carry a TTL
// (SetWithTTL), logged as an absolute time. Under
// SyncPeriodic and SyncNone a write is acknowledged once it is handed to the
// OS with a write system call — there is no buffering in the process, so a
// crash of the process loses nothing; a power loss can lose the last
// SyncInterval (periodic) or what the OS had not flushed yet (none).
//
// Options.MemoryOnly, opened with Open("", …), makes a cache instead: the
// same engine without a data directory, log or snapshot, writing no file at
// all; nothing survives Close.
//
// # Recovery
//
// Open loads the newest snapshot that passes its checksum (falling back to
// an older one; a damaged snapshot is never used or kept as the fallback),
// then replays the log after it; Recovery reports which snapshot it used. A torn tail — a partial
// or damaged record with nothing valid after it, a zero-filled tail included —
// is cut off the newest segment before anything is appended. Damage followed
// by valid records is mid-log corruption: Open fails with a *CorruptionError
// naming the file and offset and the command that repairs it (Repair, or
// `devkit kv repair`).
//
// # Concurrency
//
// A DB is safe for concurrent use. Reads (Get, Scan) never wait for disk I/O.
// One process owns a data directory: a second Open fails with ErrLocked and
// the holder's PID. After a failed write or fsync the engine is read-only:
// every later write returns an error matching ErrReadOnly, and
// Stats().ReadOnlyReason says why.
//
// See docs/kvstore.md for the on-disk format.
package kvstore
