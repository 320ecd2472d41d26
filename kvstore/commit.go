package kvstore

import (
	"sync"
	"unsafe"
)

// The commit pipeline.
//
// Invariant: a write is acknowledged only after the group that holds its
// record has been written to the log, synced (under the policy) and applied;
// groups are written, synced and applied in log order, by one leader at a
// time, and a group after a failed one is never written. Records get their
// sequence numbers, and their place in a group, in the order enqueue is
// called. afterCommit (compaction) runs after a leader gave up the lead,
// never inside a group write.
//
// Writers enqueue a record under the pipeline lock and then wait for its
// group. The first waiter of a group is its candidate leader: once no one
// leads, it takes the lead and writes the open group (sealing it) until its
// own is done, then up to maxExtraGroups more that gathered meanwhile (the
// disk stays busy without waking another goroutine). Every
// other waiter sleeps on the group's done channel. A lone writer never waits
// for anyone, so grouping costs it nothing; a writer that enqueues without
// waiting (WriteOptions.NoSyncWait) leaves its group open: later records
// join it until some writer waits for it and seals it.
//
// The pipeline also answers for the writes enqueued but not yet applied
// (pendingWrite): a transaction (Update) sees every write ordered before it
// without waiting for the disk. They are the records of at most two groups
// (the one being written and the open one); a group indexes its keys only
// when a transaction first looks into it, so writes pay nothing for it
// (an index kept up to date at every write cost four map operations per
// SET: 8-12 % of a pipelined SET's CPU).

// commitEnv is what the pipeline drives: the engine's log and memtable, or a
// fake in tests.
type commitEnv interface {
	// write appends the group's encoded records to the log.
	write(g *group) error
	// sync makes what write wrote durable as the sync policy requires.
	sync(g *group) error
	// apply makes the group visible to readers.
	apply(g *group)
	// afterCommit runs after a leader's round, outside the lead.
	afterCommit()
}

// group is a run of records written with one write and one sync.
type group struct {
	// id is unique to the group (from 1): what a big collection's owner
	// names (bigcoll.go).
	id   uint64
	buf  []byte     // encoded records
	muts []mutation // what to apply, in order
	refs []bufRef   // where each mutation's key and value sit in buf
	last uint64     // sequence number of the last record
	// count is the number of writes (records) in the group.
	count int
	// waitFor is p.wait(g), made once with the group: what every writer
	// that joins it returns as its wait function, so that a NoSyncWait
	// write allocates no closure of its own.
	waitFor func() error
	// pooled is the holder the buffers came from, handed back with them
	// (nil: the group's buffers are its own).
	pooled *groupBuf
	// index maps a key to the newest of the group's mutations of it after
	// its last flush, for muts[:indexed]; flushSeq is the sequence number
	// of that flush (0: none). Built by pendingWrite, under the pipeline's
	// mu (nil until then).
	index    map[string]int
	indexed  int
	flushSeq uint64

	// Guarded by the pipeline's mu.
	candidate bool          // a waiter will lead it
	taken     bool          // a leader is writing it
	finished  bool          // written, synced and applied, or failed
	err       error         // set when finished
	done      chan struct{} // closed when finished; made by the first non-candidate waiter
}

// bufRef locates a mutation's key and value in the group buffer.
type bufRef struct{ keyOff, keyLen, valOff, valLen int }

// groupBuf are a finished group's buffers, reused by a later group: the
// memtable copies what it keeps, and pendingWrite never looks into a
// finished group (its index, whose keys alias buf, is cleared with it), so
// nothing points into them once the group is finished.
type groupBuf struct {
	buf   []byte
	muts  []mutation
	refs  []bufRef
	index map[string]int
}

// maxPooledBuf bounds the buffers kept for reuse (a huge batch's are not).
const maxPooledBuf = 1 << 20

// recycle hands a finished group's buffers to the pool; called with mu held.
func (p *commitPipeline) recycle(g *group) {
	if cap(g.buf) <= maxPooledBuf {
		clear(g.muts)
		clear(g.index)
		b := g.pooled
		if b == nil {
			b = new(groupBuf)
		}
		*b = groupBuf{buf: g.buf[:0], muts: g.muts[:0], refs: g.refs[:0], index: g.index}
		p.buffers.Put(b)
	}
	g.buf, g.muts, g.refs, g.pooled, g.index = nil, nil, nil, nil, nil
}

// maxExtraGroups is how many groups after its own a leader writes.
const maxExtraGroups = 2

// pendingWrite is an enqueued, not yet applied write of a key; flushed:
// a pending flush hides the key (del is set, seq is the flush's).
type pendingWrite struct {
	kind     Kind
	value    []byte
	big      *bigColl
	expireAt int64
	seq      uint64
	del      bool
	flushed  bool
}

type commitPipeline struct {
	env commitEnv

	mu   sync.Mutex
	cond *sync.Cond // a leader finished; candidates and exclusive() wait on it
	// open is the group new records join, nil when none. It is sealed when
	// a leader takes it, so at most one group gathers records while at
	// most one is being written: log order is enqueue order by construction.
	open    *group
	writing *group // taken by the leader, not yet finished
	leading bool
	// exclusiveWaiting counts exclusive() callers waiting for the lead:
	// they go before the next group, or a stream of writers would starve
	// them (a snapshot waiting seconds to rotate the log).
	exclusiveWaiting int
	closed           bool
	nextSeq          uint64
	groups           uint64 // the last group id given
	failed           error  // sticky: the first write or sync error

	buffers sync.Pool // of *groupBuf
}

func newCommitPipeline(env commitEnv, nextSeq uint64) *commitPipeline {
	p := &commitPipeline{env: env, nextSeq: nextSeq}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// enqueue gives the next sequence number to one record that encode appends
// to the open group, under the pipeline lock, and returns the group to wait
// for. encode may refuse (an error, nothing appended: no sequence number is
// used).
func (p *commitPipeline) enqueue(encode func(g *group, seq uint64) error) (*group, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if p.failed != nil {
		return nil, p.failed
	}
	g := p.open
	fresh := g == nil
	if fresh {
		p.groups++
		g = &group{id: p.groups}
		g.waitFor = func() error { return p.wait(g) }
		if b, ok := p.buffers.Get().(*groupBuf); ok {
			g.buf, g.muts, g.refs, g.pooled, g.index = b.buf[:0], b.muts[:0], b.refs[:0], b, b.index
			*b = groupBuf{} // the group owns the buffers until recycle
		}
	}
	seq := p.nextSeq
	if err := encode(g, seq); err != nil {
		return nil, err
	}
	if fresh {
		p.open = g
	}
	p.nextSeq++
	g.last = seq
	g.count++
	return g, nil
}

// pendingWrite returns the newest enqueued, not yet applied write of key:
// the open group's, else the one being written's; a flush in a group
// after the key's last write there hides the writes before it, in that
// group and the older one (flushed). The value aliases the group's
// buffer: valid while mu is held. Called with mu held.
func (p *commitPipeline) pendingWrite(key []byte) (pendingWrite, bool) {
	for _, g := range [2]*group{p.open, p.writing} {
		if g == nil {
			continue
		}
		g.catchUp()
		if i, ok := g.index[string(key)]; ok {
			mu, r := &g.muts[i], g.refs[i]
			w := pendingWrite{kind: mu.kind, seq: mu.seq, del: mu.del, expireAt: mu.expireAt}
			switch {
			case mu.del:
			case r.valLen < 0:
				w.value, w.big = mu.value, mu.big // a collection's whole value, the mutation's own
			default:
				w.value = g.buf[r.valOff : r.valOff+r.valLen : r.valOff+r.valLen]
			}
			return w, true
		}
		if g.flushSeq != 0 {
			return pendingWrite{seq: g.flushSeq, del: true, flushed: true}, true
		}
	}
	return pendingWrite{}, false
}

// catchUp indexes the mutations enqueued since the last look. Keys alias
// the group buffer as it is now: a later append may move the buffer, but
// never writes the bytes they point to. Called with the pipeline's mu
// held; a group being written only has its keys and values set outside
// it (logEnv.apply), which this does not read.
func (g *group) catchUp() {
	if g.indexed == len(g.muts) {
		return
	}
	if g.index == nil {
		g.index = make(map[string]int)
	}
	for i := g.indexed; i < len(g.muts); i++ {
		if g.muts[i].flush {
			clear(g.index)
			g.flushSeq = g.muts[i].seq
			continue
		}
		r := g.refs[i]
		g.index[unsafe.String(unsafe.SliceData(g.buf[r.keyOff:]), r.keyLen)] = i
	}
	g.indexed = len(g.muts)
}

// lastPending is the newest group not yet finished, or nil: what a reader
// that may have seen a pending write waits for before it answers. Called with
// mu held.
func (p *commitPipeline) lastPending() *group {
	if p.open != nil {
		return p.open
	}
	return p.writing
}

// wait returns once g is finished: written, synced and applied, or failed.
// The caller may be asked to lead.
func (p *commitPipeline) wait(g *group) error {
	p.mu.Lock()
	for {
		if g.finished {
			err := g.err
			p.mu.Unlock()
			return err
		}
		if !p.leading && p.exclusiveWaiting == 0 {
			break
		}
		if g.candidate || g.taken {
			if g.done == nil {
				g.done = make(chan struct{})
			}
			done := g.done
			p.mu.Unlock()
			<-done
			return g.err
		}
		g.candidate = true
		p.cond.Wait()
		g.candidate = false
	}
	p.leading = true
	p.writeQueued(func() bool { return g.finished })
	p.leading = false
	p.cond.Broadcast()
	err := g.err
	p.mu.Unlock()
	p.env.afterCommit()
	return err
}

// writeQueued seals and writes the open group, again and again, until
// enough says so, then up to maxExtraGroups more that gathered meanwhile.
// Called and returns with mu held, by the leader.
func (p *commitPipeline) writeQueued(enough func() bool) {
	extra := 0
	for p.open != nil {
		if enough() {
			if extra == maxExtraGroups || p.exclusiveWaiting > 0 {
				return
			}
			extra++
		}
		g := p.open
		p.open = nil // sealed: later records open the next group
		g.taken = true
		p.writing = g
		err := p.failed
		p.mu.Unlock()
		if err == nil {
			err = p.commitGroup(g)
		}
		p.mu.Lock()
		if err != nil && p.failed == nil {
			p.failed = err
		}
		g.finished, g.err = true, err
		p.writing = nil
		p.recycle(g)
		if g.done != nil {
			close(g.done)
		}
		if g.candidate {
			p.cond.Broadcast() // its candidate sleeps on cond
		}
	}
}

// commitGroup writes, syncs and applies one group, outside the lock.
func (p *commitPipeline) commitGroup(g *group) error {
	if err := p.env.write(g); err != nil {
		return err
	}
	if err := p.env.sync(g); err != nil {
		return err
	}
	p.env.apply(g)
	return nil
}

// exclusive runs fn as the only one touching the log: the current leader
// finishes first, and no group is written until fn returns. Records keep
// being enqueued meanwhile.
func (p *commitPipeline) exclusive(fn func() error) error {
	p.mu.Lock()
	p.exclusiveWaiting++
	for p.leading {
		p.cond.Wait()
	}
	p.exclusiveWaiting--
	p.leading = true
	p.mu.Unlock()
	err := fn()
	p.mu.Lock()
	p.leading = false
	p.cond.Broadcast()
	p.mu.Unlock()
	return err
}

// close refuses new records, writes every queued one, and keeps the lead for
// good: nothing touches the log after it returns. It returns the sticky
// failure, if any.
func (p *commitPipeline) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for p.leading {
		p.cond.Wait()
	}
	p.leading = true
	p.writeQueued(func() bool { return false })
	return p.failed
}

// setFailed makes the pipeline refuse every later write with err (a failure
// found outside it: the periodic fsync).
func (p *commitPipeline) setFailed(err error) {
	p.mu.Lock()
	if p.failed == nil {
		p.failed = err
	}
	p.mu.Unlock()
}
