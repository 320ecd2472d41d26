package kvstore

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

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

// ownedMutation copies key and value into one allocation that the key
// string and the value share: recovery makes one object per record instead
// of two, which halves its allocation and GC work. The bytes are never
// written again, so the string's immutability holds.
func ownedMutation(key, value []byte) mutation {
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	return mutation{key: unsafe.String(unsafe.SliceData(buf), len(key)), value: buf[len(key):len(buf):len(buf)]}
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

// loader fills a memtable during recovery, before any reader exists: the
// maps on the caller's goroutine, the B-tree on a second one fed with the
// same mutations in log order, so both indexes are built at once.
type loader struct {
	m     *memtable
	chunk []mutation
	feed  chan []mutation
	free  chan []mutation // chunks the tree builder is done with
	done  chan *btree.BTreeG[item]
}

const loadChunk = 4096

// startLoad starts filling an empty memtable; sizeHint is the expected
// number of keys, used to size the maps once instead of growing them.
func (m *memtable) startLoad(sizeHint int) *loader {
	if per := sizeHint / numShards; per > 0 {
		for i := range m.shards {
			m.shards[i].m = make(map[string][]byte, per)
		}
	}
	l := &loader{m: m, chunk: make([]mutation, 0, loadChunk), feed: make(chan []mutation, 8),
		free: make(chan []mutation, 8), done: make(chan *btree.BTreeG[item], 1)}
	go func() {
		t := btree.NewG(32, itemLess)
		for chunk := range l.feed {
			for _, mu := range chunk {
				if mu.del {
					t.Delete(item{key: mu.key})
				} else {
					t.ReplaceOrInsert(item{key: mu.key, value: mu.value})
				}
			}
			clear(chunk)
			select {
			case l.free <- chunk[:0]:
			default:
			}
		}
		l.done <- t
	}()
	return l
}

func (l *loader) add(mu mutation) {
	m := l.m
	s := &m.shards[maphash.String(m.seed, mu.key)%numShards]
	old, had := s.m[mu.key]
	if mu.del {
		delete(s.m, mu.key)
	} else {
		s.m[mu.key] = mu.value
	}
	m.account(mu, old, had)
	l.chunk = append(l.chunk, mu)
	if len(l.chunk) == loadChunk {
		l.feed <- l.chunk
		select {
		case l.chunk = <-l.free:
		default:
			l.chunk = make([]mutation, 0, loadChunk)
		}
	}
}

// finish installs the B-tree and the sequence number the memtable is at.
func (l *loader) finish(seq uint64) {
	l.feed <- l.chunk
	close(l.feed)
	t := <-l.done
	l.m.treeMu.Lock()
	l.m.tree = t
	l.m.seq = seq
	l.m.treeMu.Unlock()
}

// abort stops the tree builder of a load that failed.
func (l *loader) abort() {
	close(l.feed)
	<-l.done
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
