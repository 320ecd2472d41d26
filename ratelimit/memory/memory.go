// Package memory is an in-process ratelimit.Store: exact, fast, and shared
// by nothing outside the process. Use it for a single instance, for tests,
// and as the proxy's default.
//
// The store is sharded by key and bounded: at most MaxKeys identities are
// kept. Expired state is swept as new identities arrive, a few entries at a
// time, and when a shard is full an entry of a small sample is evicted:
// counters before live penalty blocks (a flood of new identities must not
// lift a login block), the one that expires first among them. Evictions
// are counted (Evictions). There is no goroutine and no timer per key.
package memory

import (
	"cmp"
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/internal/algo"
)

// DefaultMaxKeys bounds the identities a store keeps when Options.MaxKeys is zero.
const DefaultMaxKeys = 1 << 20

const (
	shardCount = 64
	// sweepSample is how many entries are examined per new key for expiry,
	// and the sample from which a full shard evicts.
	sweepSample = 8
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// MaxKeys bounds the identities kept; zero means DefaultMaxKeys.
	MaxKeys int
	// Now is the store's clock, which wins over the time a Limiter hands
	// to CheckAt; nil is the process's monotonic clock (see ratelimit.Clock
	// for the one rule of every Now).
	Now ratelimit.Clock
}

// Store is the in-process store. It is safe for concurrent use.
type Store struct {
	seed     maphash.Seed
	now      ratelimit.Clock // Options.Now; nil for the process clock
	start    time.Time       // the process clock's origin (monotonic)
	startUS  float64         // start, microseconds since the epoch
	perShard int
	shards   [shardCount]shard
	// evicted and evictedBlocks count live entries evicted for room.
	evicted, evictedBlocks atomic.Int64
}

type shard struct {
	mu      sync.Mutex
	entries map[string]*entry
	_       [48]byte // one shard per 64-byte cache line
}

type entry struct {
	expireAt float64 // microseconds since the epoch
	hits     int64
	limits   []limitState
	first    [1]limitState // backing array of limits for the usual single limit
}

// limitState is one limit's state. A limit is identified by its name and
// parameters, compared exactly (the Redis store hashes the same into an id).
type limitState struct {
	name     string
	params   algo.Params
	state    algo.State
	expireAt float64 // after it the state is back to fresh: dropped (an edited policy's old limit)
}

var (
	_ ratelimit.InProcess = (*Store)(nil)
	_ ratelimit.Evicting  = (*Store)(nil)
)

// Evictions counts the live identities evicted to stay within MaxKeys.
func (s *Store) Evictions() ratelimit.Evictions {
	return ratelimit.Evictions{Counters: s.evicted.Load(), Blocks: s.evictedBlocks.Load()}
}

// blocked reports a penalty block in force at now.
func (e *entry) blocked(now float64) bool {
	for i := range e.limits {
		if e.limits[i].state.X > now {
			return true
		}
	}
	return false
}

// New returns an empty store.
func New(opts Options) *Store {
	s := &Store{seed: maphash.MakeSeed(), now: opts.Now}
	s.start = time.Now()
	s.startUS = float64(s.start.UnixMicro())
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	s.perShard = max(1, maxKeys/shardCount)
	for i := range s.shards {
		s.shards[i].entries = make(map[string]*entry)
	}
	return s
}

func (s *Store) shard(key string) *shard {
	return &s.shards[maphash.String(s.seed, key)%shardCount]
}

// micros is the store's time in microseconds since the epoch. The process
// clock is read as its monotonic part only (one clock read, not two):
// wall-clock steps do not move the store's time.
func (s *Store) micros() float64 {
	if s.now != nil {
		return float64(s.now().UnixMicro())
	}
	return s.startUS + float64(time.Since(s.start)/time.Microsecond)
}

// Check implements ratelimit.Store.
func (s *Store) Check(ctx context.Context, req ratelimit.CheckRequest, out []ratelimit.LimitResult) error {
	return s.check(ctx, req, s.micros(), out)
}

// CheckAt implements ratelimit.InProcess: Check at now, unless the store
// was given a clock of its own (Options.Now), which then wins. A now with a
// monotonic reading (from time.Now) is placed on the store's monotonic time.
func (s *Store) CheckAt(ctx context.Context, req ratelimit.CheckRequest, now time.Time, out []ratelimit.LimitResult) error {
	if s.now != nil {
		return s.check(ctx, req, s.micros(), out)
	}
	return s.check(ctx, req, s.startUS+float64(now.Sub(s.start)/time.Microsecond), out)
}

// pending is one limit of a check being decided.
type pending struct {
	params algo.Params
	slot   int // index in e.limits, -1 when new
	o      algo.Outcome
}

func (s *Store) check(ctx context.Context, req ratelimit.CheckRequest, now float64, out []ratelimit.LimitResult) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Small checks use a small scratch array: zeroing 16 outcomes costs
	// more than deciding one limit.
	if len(req.Limits) <= 2 {
		var scratch [2]pending
		return s.decide(req, now, out, scratch[:len(req.Limits)])
	}
	var scratch [ratelimit.MaxLimits]pending
	return s.decide(req, now, out, scratch[:len(req.Limits)])
}

func (s *Store) decide(req ratelimit.CheckRequest, now float64, out []ratelimit.LimitResult, ps []pending) error {
	cost := float64(req.Cost)
	sh := s.shard(req.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.entries[req.Key]
	if e != nil && e.expireAt <= now {
		e.hits, e.limits = 0, e.limits[:0]
	}
	allAllowed := true
	for i := range req.Limits {
		lim := &req.Limits[i]
		p := &ps[i]
		p.params, p.slot = algo.ParamsOf(*lim), -1
		var st algo.State
		if e != nil {
			for j := range e.limits {
				if ls := &e.limits[j]; ls.params == p.params && ls.name == lim.Name {
					p.slot, st = j, ls.state
					break
				}
			}
		}
		algo.EvalInto(&p.o, &p.params, st, now, cost)
		allAllowed = allAllowed && p.o.Allowed
		algo.Apply(&p.o, *lim, &out[i])
	}
	if !allAllowed {
		// Nothing is consumed: the limits that allowed report their state as is.
		for i := range req.Limits {
			p := &ps[i]
			if p.o.Allowed {
				var st algo.State
				if p.slot >= 0 {
					st = e.limits[p.slot].state
				}
				peek := algo.Eval(p.params, st, now, 0)
				algo.Apply(&peek, req.Limits[i], &out[i])
			}
		}
	}
	if cost == 0 {
		return nil
	}
	if e == nil {
		e = &entry{}
		e.limits = e.first[:0]
		s.insert(sh, req.Key, e, now)
	}
	e.hits += req.Cost
	for i := range req.Limits {
		p := &ps[i]
		if !allAllowed && !p.o.Blocked {
			continue
		}
		j := p.slot
		if j < 0 {
			e.limits = append(e.limits, limitState{name: req.Limits[i].Name, params: p.params})
			j = len(e.limits) - 1
		}
		e.limits[j].state = p.o.Next
		e.limits[j].expireAt = now + p.o.TTL
		e.expireAt = max(e.expireAt, now+p.o.TTL)
	}
	e.expireAt = max(e.expireAt, now+1000)
	// Limits no check names any more leave no state once theirs is stale.
	e.limits = slices.DeleteFunc(e.limits, func(ls limitState) bool { return ls.expireAt <= now })
	return nil
}

// insert adds e under key, first sweeping a few expired entries and, when
// the shard is full, evicting from those sampled the entry without a live
// block that expires first, or, when all hold one, the block that ends
// first.
func (s *Store) insert(sh *shard, key string, e *entry, now float64) {
	examined := 0
	var counter, block string
	counterExpiry, blockExpiry := 0.0, 0.0
	for k, old := range sh.entries {
		switch {
		case old.expireAt <= now:
			delete(sh.entries, k)
		case old.blocked(now):
			if block == "" || old.expireAt < blockExpiry {
				block, blockExpiry = k, old.expireAt
			}
		case counter == "" || old.expireAt < counterExpiry:
			counter, counterExpiry = k, old.expireAt
		}
		if examined++; examined >= sweepSample {
			break
		}
	}
	if len(sh.entries) >= s.perShard {
		switch {
		case counter != "":
			delete(sh.entries, counter)
			s.evicted.Add(1)
		case block != "":
			delete(sh.entries, block)
			s.evictedBlocks.Add(1)
		}
	}
	sh.entries[key] = e
}

// Reset implements ratelimit.Store.
func (s *Store) Reset(ctx context.Context, key string) (bool, error) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.entries[key]
	delete(sh.entries, key)
	return ok && e.expireAt > s.micros(), nil
}

// Info implements ratelimit.Store.
func (s *Store) Info(ctx context.Context, key string) (ratelimit.KeyInfo, error) {
	now := s.micros()
	info := ratelimit.KeyInfo{Key: key}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.entries[key]
	if !ok || e.expireAt <= now {
		return info, nil
	}
	info.Exists, info.Hits, info.TTL = true, e.hits, algo.Micros(e.expireAt-now)
	for _, ls := range e.limits {
		if ls.state.X > now {
			info.BlockedFor = max(info.BlockedFor, algo.Micros(ls.state.X-now))
		}
	}
	return info, nil
}

// Top implements ratelimit.Store.
func (s *Store) Top(ctx context.Context, n int) ([]ratelimit.Consumer, error) {
	now := s.micros()
	var all []ratelimit.Consumer
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, e := range sh.entries {
			if e.expireAt > now && e.hits > 0 {
				all = append(all, ratelimit.Consumer{Key: k, Hits: e.hits, TTL: algo.Micros(e.expireAt - now)})
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b ratelimit.Consumer) int {
		if c := cmp.Compare(b.Hits, a.Hits); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return all[:min(n, len(all))], nil
}

// Ping implements ratelimit.Store; memory always answers.
func (s *Store) Ping(ctx context.Context) error { return ctx.Err() }

// Len reports the number of identities held, expired ones included until swept.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		s.shards[i].mu.Lock()
		n += len(s.shards[i].entries)
		s.shards[i].mu.Unlock()
	}
	return n
}
