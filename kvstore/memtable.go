package kvstore

import (
	"cmp"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
)

// The memtable holds every live key twice over the same bytes: sharded hash
// maps for point reads and a copy-on-write B-tree for ordered scans and
// snapshots.
//
// Invariant: only the commit leader mutates it, after the batch is in the
// log (and durable under SyncAlways); readers take short read locks on
// in-memory structures only, never across disk I/O.

const numShards = 64

type shard struct {
	mu     sync.RWMutex
	m      map[string][]byte
	hits   atomic.Uint64
	misses atomic.Uint64
	_      [64]byte // keep neighbouring shards' locks off one cache line
}

type item struct {
	key   string
	value []byte
}

func itemLess(a, b item) bool { return a.key < b.key }

type memtable struct {
	seed   maphash.Seed
	shards [numShards]shard
	keys   atomic.Int64
	bytes  atomic.Int64 // sum of key and value lengths

	treeMu sync.RWMutex
	tree   *btree.BTreeG[item]
	seq    uint64 // last sequence number applied; guarded by treeMu
}

func newMemtable() *memtable {
	m := &memtable{seed: maphash.MakeSeed(), tree: btree.NewG(32, itemLess)}
	for i := range m.shards {
		m.shards[i].m = make(map[string][]byte)
	}
	return m
}

func (m *memtable) shardFor(key []byte) *shard {
	return &m.shards[maphash.Bytes(m.seed, key)%numShards]
}

// get returns the value of key. The returned slice is shared and immutable.
func (m *memtable) get(key []byte) ([]byte, bool) {
	s := m.shardFor(key)
	s.mu.RLock()
	v, ok := s.m[string(key)]
	s.mu.RUnlock()
	if ok {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
	return v, ok
}

// mutation is one applied change; value nil with del set removes the key.
type mutation struct {
	key   string
	value []byte
	del   bool
}

// apply makes a committed batch visible, in log order, and records seq.
func (m *memtable) apply(muts []mutation, seq uint64) {
	for _, mu := range muts {
		s := &m.shards[maphash.String(m.seed, mu.key)%numShards]
		s.mu.Lock()
		old, had := s.m[mu.key]
		if mu.del {
			delete(s.m, mu.key)
		} else {
			s.m[mu.key] = mu.value
		}
		s.mu.Unlock()
		m.account(mu, old, had)
	}
	m.treeMu.Lock()
	for _, mu := range muts {
		if mu.del {
			m.tree.Delete(item{key: mu.key})
		} else {
			m.tree.ReplaceOrInsert(item{key: mu.key, value: mu.value})
		}
	}
	m.seq = seq
	m.treeMu.Unlock()
}

func (m *memtable) account(mu mutation, old []byte, had bool) {
	switch {
	case mu.del && had:
		m.keys.Add(-1)
		m.bytes.Add(-int64(len(mu.key) + len(old)))
	case !mu.del && had:
		m.bytes.Add(int64(len(mu.value) - len(old)))
	case !mu.del:
		m.keys.Add(1)
		m.bytes.Add(int64(len(mu.key) + len(mu.value)))
	}
}

// load applies one mutation during recovery, before any reader exists: the
// maps only; buildTree adds the ordered index once at the end.
func (m *memtable) load(mu mutation) {
	s := &m.shards[maphash.String(m.seed, mu.key)%numShards]
	old, had := s.m[mu.key]
	if mu.del {
		delete(s.m, mu.key)
	} else {
		s.m[mu.key] = mu.value
	}
	m.account(mu, old, had)
}

// buildTree fills the ordered index from the maps after recovery; inserting
// in key order keeps the B-tree build cheap.
func (m *memtable) buildTree(seq uint64) {
	items := make([]item, 0, m.keys.Load())
	for i := range m.shards {
		for k, v := range m.shards[i].m {
			items = append(items, item{key: k, value: v})
		}
	}
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.key, b.key) })
	t := btree.NewG(32, itemLess)
	for _, it := range items {
		t.ReplaceOrInsert(it)
	}
	m.treeMu.Lock()
	m.tree = t
	m.seq = seq
	m.treeMu.Unlock()
}

// frozen is a point-in-time view of the memtable for a snapshot.
type frozen struct {
	tree  *btree.BTreeG[item]
	seq   uint64
	count int
}

// freeze clones the ordered index in O(1); later writes copy the nodes they
// touch, so the snapshot writer reads a stable tree without blocking them.
func (m *memtable) freeze() frozen {
	m.treeMu.Lock()
	defer m.treeMu.Unlock()
	return frozen{tree: m.tree.Clone(), seq: m.seq, count: m.tree.Len()}
}

// scan returns up to limit entries whose keys start with prefix and sort
// after the after key, in order, and whether more follow.
func (m *memtable) scan(prefix, after []byte, limit int) ([]Entry, bool) {
	start := string(prefix)
	if after != nil && string(after) >= start {
		start = string(after) + "\x00" // the smallest key greater than after
	}
	p := string(prefix)
	var out []Entry
	more := false
	m.treeMu.RLock()
	m.tree.AscendGreaterOrEqual(item{key: start}, func(it item) bool {
		if !strings.HasPrefix(it.key, p) {
			return false
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, Entry{Key: []byte(it.key), Value: it.value})
		return true
	})
	m.treeMu.RUnlock()
	return out, more
}
