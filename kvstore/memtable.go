package kvstore

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/google/btree"
)

// The memtable holds every live key twice over the same bytes: sharded hash
// maps for point reads and a copy-on-write B-tree for ordered scans and
// snapshots. Keys with a TTL are also in their shard's ttl map, which the
// expiry sweep samples.
//
// Invariant: only the commit leader mutates it, after the batch is in the
// log (and durable under SyncAlways); readers take short read locks on
// in-memory structures only, never across disk I/O. An expired entry stays
// until a logged delete removes it; readers treat it as missing.

const numShards = 64

// entry is a key's value in the hash maps.
type entry struct {
	value    []byte
	expireAt int64  // unix nanoseconds; 0: no TTL
	seq      uint64 // sequence number of the write that made it: the key's version
}

// expired reports whether the entry is past its TTL at now (unix nanoseconds).
func (e entry) expired(now int64) bool { return e.expireAt != 0 && e.expireAt <= now }

type shard struct {
	mu     sync.RWMutex
	m      map[string]entry
	ttl    map[string]int64 // keys with a TTL, and when they expire
	hits   atomic.Uint64
	misses atomic.Uint64
	_      [64]byte // keep neighbouring shards' locks off one cache line
}

type item struct {
	key      string
	value    []byte
	expireAt int64
}

func itemLess(a, b item) bool { return a.key < b.key }

// versionBuckets spread the versions of deleted keys: a missing key's
// version is the newest delete among the keys of its bucket, so a delete
// always changes the version a WATCH saw (rarely, a delete of another key
// of the bucket does too: an extra retry, never a missed change).
const versionBuckets = 4096

type memtable struct {
	seed   maphash.Seed
	shards [numShards]shard
	keys   atomic.Int64
	bytes  atomic.Int64 // sum of key and value lengths

	delSeq   [versionBuckets]atomic.Uint64
	flushSeq atomic.Uint64 // the last flush: every key changed then

	treeMu sync.RWMutex
	tree   *btree.BTreeG[item]
	seq    uint64 // last sequence number applied; guarded by treeMu
}

func newMemtable() *memtable {
	m := &memtable{seed: maphash.MakeSeed(), tree: btree.NewG(32, itemLess)}
	for i := range m.shards {
		m.shards[i].m = make(map[string]entry)
		m.shards[i].ttl = make(map[string]int64)
	}
	return m
}

func (m *memtable) shardFor(key []byte) *shard {
	return &m.shards[maphash.Bytes(m.seed, key)%numShards]
}

// get returns the entry of key, expired or not. Its value is shared and immutable.
func (m *memtable) get(key []byte) (entry, bool) {
	s := m.shardFor(key)
	s.mu.RLock()
	e, ok := s.m[string(key)]
	s.mu.RUnlock()
	return e, ok
}

// countRead records a hit or a miss of a point read.
func (m *memtable) countRead(key []byte, hit bool) {
	s := m.shardFor(key)
	if hit {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
}

// version is the key's version: the sequence number of its last write, or
// for a missing key one that every delete of it moves.
func (m *memtable) version(key []byte) uint64 {
	if e, ok := m.get(key); ok {
		return e.seq
	}
	return max(m.delSeq[maphash.Bytes(m.seed, key)%versionBuckets].Load(), m.flushSeq.Load())
}

// mutation is one applied change: a set, a delete (del) or, with flush,
// the removal of every key.
type mutation struct {
	key      string
	value    []byte
	expireAt int64
	seq      uint64
	del      bool
	flush    bool
}

// ownedMutation copies key and value into one allocation that the key
// string and the value share: recovery makes one object per record instead
// of two, which halves its allocation and GC work. The bytes are never
// written again, so the string's immutability holds.
func ownedMutation(key, value []byte, expireAt int64, seq uint64) mutation {
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	return mutation{key: unsafe.String(unsafe.SliceData(buf), len(key)), value: buf[len(key):len(buf):len(buf)],
		expireAt: expireAt, seq: seq}
}

// apply makes a committed batch visible, in log order, and records seq.
func (m *memtable) apply(muts []mutation, seq uint64) {
	for i := range muts {
		mu := &muts[i]
		if mu.flush {
			m.clearMaps(mu.seq)
			continue
		}
		m.applyToMap(mu)
	}
	m.treeMu.Lock()
	for i := range muts {
		applyToTree(m.tree, &muts[i])
	}
	m.seq = seq
	m.treeMu.Unlock()
}

func applyToTree(t *btree.BTreeG[item], mu *mutation) {
	switch {
	case mu.flush:
		t.Clear(false)
	case mu.del:
		t.Delete(item{key: mu.key})
	default:
		t.ReplaceOrInsert(item{key: mu.key, value: mu.value, expireAt: mu.expireAt})
	}
}

// applyToMap applies a set or delete to its shard; the caller holds no shard lock.
func (m *memtable) applyToMap(mu *mutation) {
	h := maphash.String(m.seed, mu.key)
	s := &m.shards[h%numShards]
	s.mu.Lock()
	old, had := s.m[mu.key]
	if mu.del {
		delete(s.m, mu.key)
	} else {
		s.m[mu.key] = entry{value: mu.value, expireAt: mu.expireAt, seq: mu.seq}
	}
	switch {
	case mu.expireAt != 0 && !mu.del:
		s.ttl[mu.key] = mu.expireAt
	case old.expireAt != 0:
		delete(s.ttl, mu.key)
	}
	s.mu.Unlock()
	if mu.del && had {
		m.delSeq[h%versionBuckets].Store(mu.seq)
	}
	m.account(mu, old.value, had)
}

// clearMaps empties every shard (a flush at seq).
func (m *memtable) clearMaps(seq uint64) {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		s.m = make(map[string]entry)
		s.ttl = make(map[string]int64)
		s.mu.Unlock()
	}
	m.keys.Store(0)
	m.bytes.Store(0)
	m.flushSeq.Store(seq)
}

func (m *memtable) account(mu *mutation, old []byte, had bool) {
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
			m.shards[i].m = make(map[string]entry, per)
		}
	}
	l := &loader{m: m, chunk: make([]mutation, 0, loadChunk), feed: make(chan []mutation, 8),
		free: make(chan []mutation, 8), done: make(chan *btree.BTreeG[item], 1)}
	go func() {
		t := btree.NewG(32, itemLess)
		for chunk := range l.feed {
			for i := range chunk {
				applyToTree(t, &chunk[i])
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
	if mu.flush {
		l.m.clearMaps(mu.seq)
	} else {
		l.m.applyToMap(&mu)
	}
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
// after the after key, in order, and whether more follow. Entries expired
// at now are skipped.
func (m *memtable) scan(prefix, after []byte, limit int, now int64) ([]Entry, bool) {
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
		if it.expireAt != 0 && it.expireAt <= now {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		e := Entry{Key: []byte(it.key), Value: it.value}
		if it.expireAt != 0 {
			e.ExpiresAt = time.Unix(0, it.expireAt)
		}
		out = append(out, e)
		return true
	})
	m.treeMu.RUnlock()
	return out, more
}
