// Package topk keeps the heaviest keys of a stream in bounded memory: the
// Space-Saving algorithm (Metwally, Agrawal, El Abbadi, 2005). A sketch of
// capacity m holds m counters; a key not held replaces the smallest, and
// inherits its count as its possible overcount. So every key counted more
// than total/m times is held, and a held key's count is never below its
// true count nor above it by more than its Error.
//
// The sketch is split into shards by a hash of the key: a key lives in one
// shard only, so the shards' summaries merge exactly, and writers of
// different keys rarely share a lock.
package topk

import (
	"container/heap"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
)

// Entry is one held key: Count overestimates its true count by at most
// Error.
type Entry struct {
	Key   string
	Count int64
	Error int64
}

// Sketch is a sharded Space-Saving summary; safe for concurrent use.
type Sketch struct {
	seed   maphash.Seed
	shards []shard
}

const shards = 16

// New returns a sketch holding about capacity keys (at least one per shard).
func New(capacity int) *Sketch {
	per := max(1, (capacity+shards-1)/shards)
	s := &Sketch{seed: maphash.MakeSeed(), shards: make([]shard, shards)}
	for i := range s.shards {
		s.shards[i] = shard{cap: per, index: make(map[string]*item, per)}
	}
	return s
}

// Add counts n more for key.
func (s *Sketch) Add(key string, n int64) {
	sh := &s.shards[maphash.String(s.seed, key)%shards]
	sh.mu.Lock()
	sh.add(key, n)
	sh.mu.Unlock()
}

// Top returns up to n held keys, highest count first (ties by key).
func (s *Sketch) Top(n int) []Entry {
	var all []Entry
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, it := range sh.heap {
			all = append(all, Entry{Key: it.key, Count: it.count, Error: it.err})
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b Entry) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	if len(all) > n {
		all = all[:n]
	}
	return all
}

type shard struct {
	mu    sync.Mutex
	cap   int
	index map[string]*item
	heap  minHeap
}

type item struct {
	key        string
	count, err int64
	pos        int
}

func (sh *shard) add(key string, n int64) {
	if it, ok := sh.index[key]; ok {
		it.count += n
		heap.Fix(&sh.heap, it.pos)
		return
	}
	if len(sh.heap) < sh.cap {
		it := &item{key: key, count: n}
		sh.index[key] = it
		heap.Push(&sh.heap, it)
		return
	}
	// Replace the smallest: the newcomer may have been counted up to its
	// count before, unseen.
	it := sh.heap[0]
	delete(sh.index, it.key)
	it.key, it.err, it.count = key, it.count, it.count+n
	sh.index[key] = it
	heap.Fix(&sh.heap, 0)
}

// minHeap orders items by count, smallest first.
type minHeap []*item

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i].count < h[j].count }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].pos = i; h[j].pos = j }
func (h *minHeap) Push(x any)        { it := x.(*item); it.pos = len(*h); *h = append(*h, it) }
func (h *minHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
