package kvstore

import "context"

// A memory-only store (Options.MemoryOnly): the commit pipeline without a
// log.
//
// Invariant: a memory-only store creates, opens and writes no file. Writes
// take the same pipeline as a durable store's (sequence numbers, groups,
// pendingWrite for transactions, apply in order), so the two answer alike;
// only the environment differs: nothing is written or synced, and no
// compaction is ever due.

// openMemoryOnly opens an empty store that lives in memory only.
func openMemoryOnly(o Options) *DB {
	mem := newMemtable()
	mem.lazyOrder = true // no snapshot needs the key order: built at its first use
	db := &DB{opts: o, mem: mem, expiredSeen: make(chan string, expiredSeenQueue)}
	db.bgCtx, db.bgCancel = context.WithCancel(context.Background())
	db.pipe = newCommitPipeline(memoryEnv{logEnv{db}}, 1)
	db.startSweep()
	return db
}

// memoryEnv is the commit pipeline's environment in a memory-only store:
// a group is applied to the memtable and nothing else.
type memoryEnv struct{ logEnv }

func (e memoryEnv) write(g *group) error {
	if err := e.db.failure(); err != nil {
		return err
	}
	e.db.lastWritten = g.last
	return nil
}

func (memoryEnv) sync(*group) error { return nil }

func (memoryEnv) afterCommit() {}
