package ratelimit

// The blocked cache may only deny what the store would deny: an entry is
// added for a denial with a RetryAfter, is consulted only for a cost at least
// as large, and is dropped once its time has passed or the key is reset.

import (
	"hash/maphash"
	"sync"
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
}

type blockedEntry struct {
	until time.Time
	cost  int64
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

func (c *blockedCache) get(key string, cost int64, now time.Time) (time.Time, bool) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return time.Time{}, false
	}
	if !now.Before(e.until) {
		delete(s.entries, key)
		return time.Time{}, false
	}
	return e.until, cost >= e.cost
}

func (c *blockedCache) put(key string, cost int64, until, now time.Time) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
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
	if e, ok := s.entries[key]; ok && e.cost < cost {
		cost = e.cost
	}
	s.entries[key] = blockedEntry{until: until, cost: cost}
}

func (c *blockedCache) delete(key string) {
	s := c.shard(key)
	s.mu.Lock()
	delete(s.entries, key)
	s.mu.Unlock()
}
