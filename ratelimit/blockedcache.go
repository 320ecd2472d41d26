package ratelimit

// The blocked cache may only deny what the store would deny: an entry is
// added for a denial with a RetryAfter, is consulted only for the same key
// and the same set of limits with a cost at least as large, and is dropped
// once its time has passed or the key is reset. A denial answered by the
// store across a reset (the check was sent before it) is not added: put
// takes the shard's reset count read before the check was sent, and a
// reset in between (delete) refuses it, so a reset is never undone by a
// check that was in flight.

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

const blockedCacheShards = 32

type blockedCache struct {
	seed     maphash.Seed
	perShard int
	shards   [blockedCacheShards]blockedShard
}

type blockedShard struct {
	mu      sync.Mutex
	entries map[string]blockedEntry
	// resets counts the deletions (resets) of the shard's keys; written
	// under mu.
	resets atomic.Uint64
}

type blockedEntry struct {
	until   time.Time
	cost    int64
	limits  uint64 // fingerprint of the limits that denied
	binding int    // index of the limit whose block is in force
}

// limitsFingerprint identifies a set of limits: a request under other
// limits (another method's, another plan's) is not answered from the cache.
func limitsFingerprint(limits []Limit) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := range limits {
		l := &limits[i]
		for j := 0; j < len(l.Name); j++ {
			h = (h ^ uint64(l.Name[j])) * prime
		}
		for _, v := range [...]uint64{uint64(l.Algorithm), uint64(l.Rate), uint64(l.Period), uint64(l.Burst), uint64(l.Block)} {
			h = (h ^ v) * prime
		}
	}
	return h
}

func newBlockedCache(size int) *blockedCache {
	c := &blockedCache{seed: maphash.MakeSeed(), perShard: max(1, size/blockedCacheShards)}
	for i := range c.shards {
		c.shards[i].entries = make(map[string]blockedEntry)
	}
	return c
}

func (c *blockedCache) shard(key string) *blockedShard {
	return &c.shards[maphash.String(c.seed, key)%blockedCacheShards]
}

// get returns until when key is blocked under these limits for this cost,
// and which of the limits holds the block.
func (c *blockedCache) get(key string, limits uint64, cost int64, now time.Time) (until time.Time, binding int, ok bool) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return time.Time{}, 0, false
	}
	if !now.Before(e.until) {
		delete(s.entries, key)
		return time.Time{}, 0, false
	}
	return e.until, e.binding, e.limits == limits && cost >= e.cost
}

// epoch is the reset count of key's shard, to pass to put for a check
// about to be sent.
func (c *blockedCache) epoch(key string) uint64 { return c.shard(key).resets.Load() }

// put adds a denial of key, unless a key of its shard was reset since
// epoch was read (the denial may predate that reset).
func (c *blockedCache) put(key string, limits uint64, binding int, cost int64, until, now time.Time, epoch uint64) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resets.Load() != epoch {
		return
	}
	if len(s.entries) >= c.perShard {
		// Full: drop expired entries; if none, drop one at random (map order).
		for k, e := range s.entries {
			if !now.Before(e.until) {
				delete(s.entries, k)
			}
		}
		for k := range s.entries {
			if len(s.entries) < c.perShard {
				break
			}
			delete(s.entries, k)
		}
	}
	if e, ok := s.entries[key]; ok && e.limits == limits && e.cost < cost {
		cost = e.cost
	}
	s.entries[key] = blockedEntry{until: until, cost: cost, limits: limits, binding: binding}
}

func (c *blockedCache) delete(key string) {
	s := c.shard(key)
	s.mu.Lock()
	delete(s.entries, key)
	s.resets.Add(1)
	s.mu.Unlock()
}
