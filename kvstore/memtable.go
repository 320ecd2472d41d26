package kvstore

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/google/btree"
)

// The memtable holds every live key once, as a record in the arena (see
// arena.go), indexed twice by 8-byte references: sharded open-addressing
// hash tables for point reads and a copy-on-write B-tree for ordered scans
// and snapshots. Keys with a TTL are also in their shard's ttl map, which
// the expiry sweep samples.
//
// Invariant: only the commit leader mutates it, after the batch is in the
// log (and durable under SyncAlways); a replaced or deleted record is freed
// only after both indexes stopped pointing to it. Readers copy what they
// return while holding the lock of the index they read, never across disk
// I/O. An expired entry stays until a logged delete removes it; readers
// treat it as missing.

const numShards = 64

const (
	emptySlot = 0
	tombSlot  = 1 // a deleted entry: probing goes on past it
	// probeRef stands in the tree's comparisons for the key a scan seeks.
	probeRef ref = refMask
)

// shard is one open-addressing hash table of tag<<48|ref slots, probed
// linearly; the tag (16 bits of the hash) spares most key comparisons.
type shard struct {
	mu     sync.RWMutex
	slots  []uint64
	used   int              // live entries
	tombs  int              // tombstones
	ttl    map[string]int64 // keys with a TTL, and when they expire
	hits   atomic.Uint64
	misses atomic.Uint64
	_      [64]byte // keep neighbouring shards' locks off one cache line
}

// entry is a key's state as a reader copies it out.
type entry struct {
	kind     Kind
	value    []byte
	expireAt int64    // unix nanoseconds; 0: no TTL
	seq      uint64   // sequence number of the write that made it: the key's version
	big      *bigColl // a big collection (value nil), never changed
}

// expired reports whether the entry is past its TTL at now (unix nanoseconds).
func (e entry) expired(now int64) bool { return e.expireAt != 0 && e.expireAt <= now }

// versionBuckets spread the versions of deleted keys: a missing key's
// version is the newest delete among the keys of its bucket, so a delete
// always changes the version a WATCH saw (rarely, a delete of another key
// of the bucket does too: an extra retry, never a missed change).
const versionBuckets = 4096

type memtable struct {
	seed   maphash.Seed
	arena  *arena
	shards [numShards]shard
	keys   atomic.Int64
	bytes  atomic.Int64 // sum of key and value lengths

	delSeq [versionBuckets]atomic.Uint64

	treeMu   sync.RWMutex
	tree     *btree.BTreeG[ref]
	scanTree *btree.BTreeG[scanItem] // the scan order (scanorder.go)
	seq      uint64                  // last sequence number applied; guarded by treeMu
	// lazyOrder: the key order (tree) is not kept up to date, and is empty,
	// until its first use (an ordered Scan or a checkpoint), which builds it
	// from the scan order; from then on it is kept like a durable store's.
	// A memory-only store starts so: it writes no snapshot, and a new key's
	// insert into the key order was its largest cost after the system calls
	// (cache misses on the keys it compares). Guarded by treeMu.
	lazyOrder bool

	probeMu sync.Mutex // one scan seeks at a time
	probe   []byte

	scratch []treeOp // apply's, reused
}

// treeOp is what a mutation does to the tree, and which record it frees.
type treeOp struct {
	put   ref // the new record (0: none)
	old   ref // the record it replaces or deletes (0: none)
	flush bool
	freed []ref // a flush frees every record
	// ordered (loads only): put's key and its reference are both greater
	// than every key and reference in the tree, so the tree may place it
	// by comparing references (see loader).
	ordered bool
}

func newMemtable() *memtable {
	m := &memtable{seed: maphash.MakeSeed(), arena: newArena()}
	m.tree = btree.NewG(32, m.less)
	m.scanTree = m.newScanTree()
	for i := range m.shards {
		m.shards[i].slots = make([]uint64, 8)
		m.shards[i].ttl = make(map[string]int64)
	}
	return m
}

func (m *memtable) keyOf(r ref) []byte {
	if r == probeRef {
		return m.probe
	}
	return m.arena.key(r)
}

func (m *memtable) less(a, b ref) bool { return bytes.Compare(m.keyOf(a), m.keyOf(b)) < 0 }

func (m *memtable) hash(key []byte) uint64 { return maphash.Bytes(m.seed, key) }

func (m *memtable) shardOf(h uint64) *shard { return &m.shards[h>>58] }

func tagOf(h uint64) uint64 { return (h >> 32) & 0xffff }

// find returns the slot index holding key, or -1; called with s.mu held.
func (m *memtable) find(s *shard, h uint64, key []byte) int {
	mask := uint64(len(s.slots) - 1)
	tag := tagOf(h)
	for i := h & mask; ; i = (i + 1) & mask {
		v := s.slots[i]
		switch {
		case v == emptySlot:
			return -1
		case v != tombSlot && v>>refBits == tag && bytes.Equal(m.arena.key(ref(v&refMask)), key):
			return int(i)
		}
	}
}

// insertNew adds an entry for a key not in s; s.mu held.
func (m *memtable) insertNew(s *shard, h uint64, r ref) {
	if (s.used+s.tombs+1)*5 > len(s.slots)*4 {
		m.rehash(s, s.used+1)
	}
	mask := uint64(len(s.slots) - 1)
	i := h & mask
	for s.slots[i] != emptySlot && s.slots[i] != tombSlot {
		i = (i + 1) & mask
	}
	if s.slots[i] == tombSlot {
		s.tombs--
	}
	s.slots[i] = tagOf(h)<<refBits | uint64(r)
	s.used++
}

// remove drops key and returns its record; s.mu held.
func (m *memtable) remove(s *shard, h uint64, key []byte) (old ref) {
	i := m.find(s, h, key)
	if i < 0 {
		return 0
	}
	old = ref(s.slots[i] & refMask)
	s.slots[i] = tombSlot
	s.used--
	s.tombs++
	return old
}

// rehash resizes s for n live entries (at most 5/8 full) and drops the
// tombstones; s.mu held.
func (m *memtable) rehash(s *shard, n int) {
	size := 8
	for size*5 < n*8 {
		size *= 2
	}
	slots := make([]uint64, size)
	mask := uint64(size - 1)
	for _, v := range s.slots {
		if v == emptySlot || v == tombSlot {
			continue
		}
		h := m.hash(m.arena.key(ref(v & refMask)))
		i := h & mask
		for slots[i] != emptySlot {
			i = (i + 1) & mask
		}
		slots[i] = v
	}
	s.slots, s.tombs = slots, 0
}

// get copies key's entry (expired or not), appending its value to dst.
func (m *memtable) get(dst, key []byte) (entry, bool) {
	e, ok, _ := m.getIn(dst, key)
	return e, ok
}

// getIn is get that also returns the key's shard.
func (m *memtable) getIn(dst, key []byte) (entry, bool, *shard) {
	h := m.hash(key)
	s := m.shardOf(h)
	s.mu.RLock()
	i := m.find(s, h, key)
	if i < 0 {
		s.mu.RUnlock()
		return entry{}, false, s
	}
	r := ref(s.slots[i] & refMask)
	_, v, exp, seq := m.arena.record(r)
	e := entry{kind: m.arena.kind(r), expireAt: exp, seq: seq}
	if e.big = m.arena.big(r); e.big == nil {
		e.value = append(dst, v...)
	}
	s.mu.RUnlock()
	return e, true, s
}

// metaIn is key's entry without its value (expired or not), and its shard:
// getIn without the copy (the two differ only there; a shared helper would
// put a callback or a flag on Get's path).
func (m *memtable) metaIn(key []byte) (entry, bool, *shard) {
	h := m.hash(key)
	s := m.shardOf(h)
	s.mu.RLock()
	i := m.find(s, h, key)
	if i < 0 {
		s.mu.RUnlock()
		return entry{}, false, s
	}
	r := ref(s.slots[i] & refMask)
	_, _, exp, seq := m.arena.record(r)
	kind := m.arena.kind(r)
	s.mu.RUnlock()
	return entry{kind: kind, expireAt: exp, seq: seq}, true, s
}

// meta is key's entry without its value (see metaIn).
func (m *memtable) meta(key []byte) (entry, bool) {
	e, ok, _ := m.metaIn(key)
	return e, ok
}

// avgTTLSample is how many keys with a TTL of each shard ttlStats samples.
const avgTTLSample = 16

// ttlStats counts the keys that have a TTL (expired ones not yet swept
// included) and estimates the time they have left at now from up to
// perShard of each shard's (map iteration starts at a random place, as
// Redis samples its expires dict), leaving out keys already past their
// time; avg is 0 when none is sampled. One pass, one read lock a shard.
func (m *memtable) ttlStats(now int64, perShard int) (keys int64, avg time.Duration) {
	var sum, n int64
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.RLock()
		keys += int64(len(s.ttl))
		seen := 0
		for _, at := range s.ttl {
			if seen == perShard {
				break
			}
			seen++
			if at > now {
				sum += at - now
				n++
			}
		}
		s.mu.RUnlock()
	}
	if n > 0 {
		avg = time.Duration(sum / n)
	}
	return keys, avg
}

// memoryBytes estimates the memory the memtable holds: arena chunks, hash
// slots, 8 bytes per B-tree item (node overhead aside) and the big
// collections' trees (an estimate per entry).
func (m *memtable) memoryBytes() int64 {
	n := m.arena.bigBytes.Load()
	for _, c := range *m.arena.chunks.Load() {
		n += int64(cap(c))
	}
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.RLock()
		n += int64(len(s.slots)) * 8
		s.mu.RUnlock()
	}
	m.treeMu.RLock()
	n += int64(m.scanTree.Len()) * (8 + 16) // the key order's and the scan order's items
	m.treeMu.RUnlock()
	return n
}

// countRead records a hit or a miss of a point read in s.
func (s *shard) countRead(hit bool) {
	if hit {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
}

// version is the key's raw version: the sequence number of its last write,
// or for a missing key deletedVersion (Tx.Version encodes the two apart).
func (m *memtable) version(key []byte) uint64 {
	if e, ok := m.meta(key); ok {
		return e.seq
	}
	return m.deletedVersion(key)
}

// deletedVersion is the newest write sequence number among the records
// deleted from key's version bucket (by a delete, an expiry sweep, or a
// flush of a record with a TTL).
func (m *memtable) deletedVersion(key []byte) uint64 {
	return m.delSeq[m.hash(key)%versionBuckets].Load()
}

// noteDeleted raises the deleted version of hash h's bucket to seq, the
// write sequence number of a record deleted; only the commit leader (or
// the loader) calls it.
func (m *memtable) noteDeleted(h, seq uint64) {
	b := &m.delSeq[h%versionBuckets]
	if seq > b.Load() {
		b.Store(seq)
	}
}

// mutation is one change to apply: a set, a delete (del) or, with flush,
// the removal of every key. Key and value are copied into the arena; a big
// collection (big, value nil) is referenced.
type mutation struct {
	key      []byte
	value    []byte
	kind     Kind
	big      *bigColl
	expireAt int64
	seq      uint64
	del      bool
	flush    bool
}

// apply makes a committed batch visible, in log order, and records seq.
//
// The tree lock is held for the whole group, so that a scan never reads a
// record that is being rewritten in place, and so that no snapshot can be
// frozen between the check that none holds the arena and the rewrite.
func (m *memtable) apply(muts []mutation, seq uint64) {
	ops := m.scratch[:0]
	m.treeMu.Lock()
	inPlace := !m.arena.held()
	for i := range muts {
		ops = append(ops, m.applyToMap(&muts[i], false, inPlace))
	}
	for i := range ops {
		if !m.lazyOrder {
			m.applyToTree(m.tree, &ops[i])
		}
		m.applyToScanTree(m.scanTree, &ops[i])
	}
	m.seq = seq
	m.treeMu.Unlock()
	m.releaseAll(ops)
	clear(ops)
	m.scratch = ops[:0]
}

func (m *memtable) releaseAll(ops []treeOp) {
	for i := range ops {
		if ops[i].old != 0 {
			m.arena.release(ops[i].old)
		}
		for _, r := range ops[i].freed {
			m.arena.release(r)
		}
	}
}

func (m *memtable) applyToTree(t *btree.BTreeG[ref], op *treeOp) {
	switch {
	case op.flush:
		t.Clear(false)
	case op.put != 0:
		t.ReplaceOrInsert(op.put)
	case op.old != 0:
		t.Delete(op.old)
	}
}

// applyToMap stores a set's record and points its shard at it, or removes
// a deleted key, and says what the tree must do; no lock held by the caller.
// isNew says the key is known to be absent (a snapshot's keys are unique),
// which spares the lookup. inPlace allows an
// overwrite to rewrite its record's slot when the new record has the same
// size class: no new slot, no tree operation. The caller guarantees that
// nothing can read the slot meanwhile but through the shard (held here)
// or the tree (treeMu held by the caller), and that no frozen view exists.
func (m *memtable) applyToMap(mu *mutation, isNew, inPlace bool) treeOp {
	if mu.flush {
		return treeOp{flush: true, freed: m.clearMaps()}
	}
	h := m.hash(mu.key)
	s := m.shardOf(h)
	var op treeOp
	s.mu.Lock()
	var oldValueLen int
	switch {
	case mu.del:
		op.old = m.remove(s, h, mu.key)
	case isNew:
		op.put = m.arena.alloc(mu.key, mu.value, mu.kind, mu.big, mu.expireAt, mu.seq)
		m.insertNew(s, h, op.put)
	default:
		if i := m.find(s, h, mu.key); i >= 0 {
			op.old = ref(s.slots[i] & refMask)
			_, _, oldExp, _ := m.arena.record(op.old)
			if inPlace && m.arena.rewrite(op.old, mu.key, mu.value, mu.kind, mu.big, mu.expireAt, mu.seq, &oldValueLen) {
				op.old = 0 // same slot: nothing for the tree, nothing to free
				m.updateTTL(s, mu, true, oldExp)
				s.mu.Unlock()
				m.account(mu, oldValueLen, true)
				return op
			}
			op.put = m.arena.alloc(mu.key, mu.value, mu.kind, mu.big, mu.expireAt, mu.seq)
			s.slots[i] = tagOf(h)<<refBits | uint64(op.put)
		} else {
			op.put = m.arena.alloc(mu.key, mu.value, mu.kind, mu.big, mu.expireAt, mu.seq)
			m.insertNew(s, h, op.put)
		}
	}
	var oldSeq uint64
	var oldExp int64
	if op.old != 0 {
		var v []byte
		_, v, oldExp, oldSeq = m.arena.record(op.old)
		oldValueLen = len(v)
	}
	m.updateTTL(s, mu, op.old != 0, oldExp)
	s.mu.Unlock()
	if mu.del && op.old != 0 {
		m.noteDeleted(h, oldSeq)
	}
	m.account(mu, oldValueLen, op.old != 0)
	return op
}

// updateTTL keeps s.ttl in step with a set or delete of a key whose
// record, when it had one (had), expired at oldExp; s.mu held.
//
// Invariant: s.ttl holds a key, with its record's expiry, exactly while the
// key's record has one; updateTTL is the only writer but for a flush. So a
// write that keeps the expiry (INCRBY, SET KEEPTTL: the rate limiter's
// counters) or one of a key without any leaves the map as it is, with no
// lookup (that lookup was 6 % of the server's CPU under the rate limiter's
// store: BenchmarkStore_DevkitKVVsRedis, profile of the devkit process).
func (m *memtable) updateTTL(s *shard, mu *mutation, had bool, oldExp int64) {
	newExp := mu.expireAt
	if mu.del {
		newExp = 0
	}
	if oldExp == newExp && (had || newExp == 0) {
		return
	}
	switch {
	case mu.expireAt != 0 && !mu.del:
		// A write that keeps the key's expiry (INCRBY, SET KEEPTTL) finds it
		// there: the lookup allocates nothing, an assignment a string key.
		if at, ok := s.ttl[string(mu.key)]; !ok || at != mu.expireAt {
			s.ttl[string(mu.key)] = mu.expireAt
		}
	case len(s.ttl) > 0:
		delete(s.ttl, string(mu.key))
	}
}

// clearMaps empties every shard (a flush) and returns the records they held.
func (m *memtable) clearMaps() []ref {
	var freed []ref
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for _, v := range s.slots {
			if v != emptySlot && v != tombSlot {
				r := ref(v & refMask)
				freed = append(freed, r)
				// A record with a TTL may be expired already: its watchers
				// saw the deleted version it adds (Tx.Version). A live one's
				// watchers see any odd version differ from theirs.
				if k, _, exp, seq := m.arena.record(r); exp != 0 {
					m.noteDeleted(m.hash(k), seq)
				}
			}
		}
		s.slots, s.used, s.tombs = make([]uint64, 8), 0, 0
		s.ttl = make(map[string]int64)
		s.mu.Unlock()
	}
	m.keys.Store(0)
	m.bytes.Store(0)
	return freed
}

// account counts the record's bytes (a big collection's: its handle's).
func (m *memtable) account(mu *mutation, oldLen int, had bool) {
	newLen := len(mu.value)
	if mu.big != nil {
		newLen = 8
	}
	switch {
	case mu.del && had:
		m.keys.Add(-1)
		m.bytes.Add(-int64(len(mu.key) + oldLen))
	case !mu.del && had:
		m.bytes.Add(int64(newLen - oldLen))
	case !mu.del:
		m.keys.Add(1)
		m.bytes.Add(int64(len(mu.key) + newLen))
	}
}

// expiredKeys returns up to limit keys whose TTL has passed at now,
// sampling each shard's ttl map from a random point (map iteration order),
// as Redis samples its expires dict.
func (m *memtable) expiredKeys(now int64, perShard, limit int) []string {
	var out []string
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.RLock()
		seen := 0
		for k, at := range s.ttl {
			if seen == perShard || len(out) == limit {
				break
			}
			seen++
			if at <= now {
				out = append(out, k)
			}
		}
		s.mu.RUnlock()
		if len(out) == limit {
			break
		}
	}
	return out
}

// loader fills a memtable during recovery, before any reader exists: the
// hash tables on the caller's goroutine, the B-tree on a second one fed
// with the same operations in log order, so both indexes are built at once.
//
// A snapshot comes in key order into an empty memtable, and the arena
// mostly hands out ascending references (nothing is freed during a load):
// while each record's reference is greater than the one before, the order
// of references is the order of keys, and the tree builder compares
// references (one integer compare) instead of keys (two arena decodes and a
// bytes.Compare each, which made the B-tree the slower half of a snapshot
// load and the load no faster than replaying the log it replaces). The
// first record out of that order (the small record after a large one got a
// chunk of its own goes back to the chunk being filled; any log record)
// ends the run for good: the tree so far is in key order either way, and
// from then on keys are compared.
// The arena is held meanwhile: a record the tables already dropped may
// still be waiting in the tree builder's queue. Every loadBarrier chunks the
// loader waits for the builder to catch up and lets the held frees go, so a
// log that overwrites its keys many times does not hold every version.
// loaded is what a load's tree builder built: both orders.
type loaded struct {
	tree     *btree.BTreeG[ref]
	scanTree *btree.BTreeG[scanItem]
}

type loader struct {
	m      *memtable
	unhold func()
	chunk  []treeOp
	sent   int
	feed   chan []treeOp // a nil chunk asks the builder to report on caught
	caught chan struct{}
	free   chan []treeOp // chunks the tree builder is done with
	done   chan loaded

	lastPut   ref  // the greatest reference of the ordered run
	unordered bool // the ordered run has ended
}

const (
	loadChunk   = 4096
	loadBarrier = 16
)

// startLoad starts filling an empty memtable; sizeHint is the expected
// number of keys, used to size the tables once instead of growing them.
func (m *memtable) startLoad(sizeHint int) *loader {
	if per := sizeHint / numShards; per > 0 {
		for i := range m.shards {
			m.rehash(&m.shards[i], per)
		}
	}
	l := &loader{m: m, unhold: m.arena.hold(), chunk: make([]treeOp, 0, loadChunk), feed: make(chan []treeOp, 8),
		caught: make(chan struct{}), free: make(chan []treeOp, 8), done: make(chan loaded, 1)}
	go func() {
		// byRef is the builder's own: set for each operation before the
		// tree compares, false once the load is done (the tree keeps this
		// less function for its life).
		byRef := false
		t := btree.NewG(32, func(a, b ref) bool {
			if byRef {
				return a < b
			}
			return m.less(a, b)
		})
		st := m.newScanTree()
		for chunk := range l.feed {
			if chunk == nil {
				l.caught <- struct{}{}
				continue
			}
			for i := range chunk {
				byRef = chunk[i].ordered
				m.applyToTree(t, &chunk[i])
				m.applyToScanTree(st, &chunk[i])
			}
			byRef = false
			clear(chunk)
			select {
			case l.free <- chunk[:0]:
			default:
			}
		}
		l.done <- loaded{t, st}
	}()
	return l
}

// add applies one loaded mutation; key and value are copied.
func (l *loader) add(mu mutation) { l.addNew(mu, false) }

// addNew is add for a key known to be absent when isNew.
func (l *loader) addNew(mu mutation, isNew bool) {
	op := l.m.applyToMap(&mu, isNew, false)
	// isNew: a snapshot's record, in key order (see loader).
	if isNew && !l.unordered && op.put > l.lastPut {
		op.ordered, l.lastPut = true, op.put
	} else {
		l.unordered = true
	}
	if op.old != 0 {
		l.m.arena.release(op.old) // deferred: the tree may not have seen it yet
	}
	for _, r := range op.freed {
		l.m.arena.release(r)
	}
	op.freed = nil
	l.chunk = append(l.chunk, op)
	if len(l.chunk) == loadChunk {
		l.feed <- l.chunk
		select {
		case l.chunk = <-l.free:
		default:
			l.chunk = make([]treeOp, 0, loadChunk)
		}
		if l.sent++; l.sent%loadBarrier == 0 {
			l.feed <- nil
			<-l.caught // the tree has seen every op so far: its frees may go
			l.unhold()
			l.unhold = l.m.arena.hold()
		}
	}
}

// finish installs the B-tree and the sequence number the memtable is at.
func (l *loader) finish(seq uint64) {
	l.feed <- l.chunk
	close(l.feed)
	t := <-l.done
	l.m.treeMu.Lock()
	l.m.tree, l.m.scanTree = t.tree, t.scanTree
	l.m.seq = seq
	l.m.treeMu.Unlock()
	l.unhold()
}

// abort stops the tree builder of a load that failed.
func (l *loader) abort() {
	close(l.feed)
	<-l.done
	l.unhold()
}

// frozen is a point-in-time view of the memtable for a snapshot. Its
// records stay readable until release is called.
type frozen struct {
	tree    *btree.BTreeG[ref]
	arena   *arena
	seq     uint64
	count   int
	release func()
}

// freeze clones the ordered index in O(1); later writes copy the nodes they
// touch, and the arena reuses no slot until release, so the snapshot writer
// reads a stable view without blocking them.
func (m *memtable) freeze() frozen {
	m.treeMu.Lock()
	defer m.treeMu.Unlock()
	m.buildOrder()
	return frozen{tree: m.tree.Clone(), arena: m.arena, seq: m.seq, count: m.tree.Len(), release: m.arena.hold()}
}

// buildOrder builds the key order from the scan order, which holds every
// live record, when it is not kept (lazyOrder), and keeps it from then on:
// sorted first, then inserted in ascending order, each insert comparing
// with the keys just inserted. Called with treeMu held for writing.
func (m *memtable) buildOrder() {
	if !m.lazyOrder {
		return
	}
	refs := make([]ref, 0, m.scanTree.Len())
	m.scanTree.Ascend(func(it scanItem) bool {
		refs = append(refs, it.ref())
		return true
	})
	slices.SortFunc(refs, func(a, b ref) int { return bytes.Compare(m.arena.key(a), m.arena.key(b)) })
	for _, r := range refs {
		m.tree.ReplaceOrInsert(r)
	}
	m.lazyOrder = false
}

// scan returns up to limit entries whose keys start with prefix and sort
// after the after key, in order, and whether more follow. Entries expired
// at now are skipped. Keys and values are copies.
func (m *memtable) scan(prefix, after []byte, limit int, now int64) ([]Entry, bool) {
	start := prefix
	if after != nil && bytes.Compare(after, start) >= 0 {
		start = append(append([]byte(nil), after...), 0) // the smallest key greater than after
	}
	var out []Entry
	more := false
	m.probeMu.Lock()
	defer m.probeMu.Unlock()
	m.probe = start
	m.treeMu.RLock()
	if m.lazyOrder {
		m.treeMu.RUnlock()
		m.treeMu.Lock()
		m.buildOrder()
		m.treeMu.Unlock()
		m.treeMu.RLock() // lazyOrder stays false from now on
	}
	defer m.treeMu.RUnlock()
	m.tree.AscendGreaterOrEqual(probeRef, func(r ref) bool {
		k, v, exp, _ := m.arena.record(r)
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		if exp != 0 && exp <= now {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		e := Entry{Key: bytes.Clone(k), Value: append([]byte{}, v...), Kind: m.arena.kind(r)}
		if big := m.arena.big(r); big != nil {
			e.Value = big.encode()
		}
		if exp != 0 {
			e.ExpiresAt = time.Unix(0, exp)
		}
		out = append(out, e)
		return true
	})
	return out, more
}

// each calls fn for every record of a frozen view in key order; key and
// value alias the arena and are valid until the view is released (a big
// collection's value is its packed encoding, made for the call).
func (f frozen) each(fn func(key string, value []byte, kind Kind, expireAt int64) bool) {
	f.tree.Ascend(func(r ref) bool {
		k, v, exp, _ := f.arena.record(r)
		if big := f.arena.big(r); big != nil {
			v = big.encode()
		}
		return fn(unsafe.String(unsafe.SliceData(k), len(k)), v, f.arena.kind(r), exp)
	})
}
