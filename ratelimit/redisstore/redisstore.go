// Package redisstore is the ratelimit.Store over Redis: single node,
// sentinel or cluster, through go-redis's UniversalClient.
//
// Every check runs in one Lua script (EVALSHA; EVAL when the server does not
// know it yet) on one key, the identity's "<prefix>{<key>}": all limits of a
// check live in that key's value (a short string, see lua/codec.lua), so a
// cluster never sees CROSSSLOT and a check is atomic. With pipelining, the
// checks that arrive together run in one script call per hash slot. Time is
// the server's (TIME), not the client's. Keys expire by themselves; nothing
// scans for keys to delete.
package redisstore

import (
	"container/heap"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/internal/algo"
)

// The check script is the driver preceded by one function per algorithm,
// each in its own file, a prelude of local aliases, and the fast path for
// one limit (fast.lua), which answers before any of them is defined.
var (
	//go:embed lua/prelude.lua
	preludeLua string
	//go:embed lua/fast.lua
	fastLua string
	//go:embed lua/codec.lua
	codecLua string
	//go:embed lua/fixed_window.lua
	fixedWindowLua string
	//go:embed lua/sliding_window.lua
	slidingWindowLua string
	//go:embed lua/token_bucket.lua
	tokenBucketLua string
	//go:embed lua/gcra.lua
	gcraLua string
	//go:embed lua/sliding_log.lua
	slidingLogLua string
	//go:embed lua/check.lua
	checkLua string
)

// checkScriptSource is the full source of the check script.
func checkScriptSource() string {
	return strings.Join([]string{preludeLua, fastLua, codecLua, fixedWindowLua, slidingWindowLua, tokenBucketLua, gcraLua, slidingLogLua, checkLua}, "\n")
}

// DefaultPrefix starts every key the store writes.
const DefaultPrefix = "rl:"

// Options configure a Store. The zero value is usable.
type Options struct {
	// Prefix starts every key; empty means DefaultPrefix.
	Prefix string
	// Pipeline is the number of batches of checks in flight at once.
	// Checks that arrive while that many are on the wire are sent together
	// (one script call per hash slot, one pipeline), which raises throughput
	// under many goroutines; below that, a check is sent at once by its own
	// goroutine, so batching adds no latency at low load. There is no
	// goroutine to stop. Zero means DefaultPipeline; negative sends every
	// check alone (one round trip each).
	Pipeline int
	// Now, when set, replaces the server's clock (see ratelimit.Clock for
	// the one rule of every Now). For tests only: with several clients,
	// their clocks would disagree.
	Now ratelimit.Clock
}

// Store keeps rate-limit state in Redis. It is safe for concurrent use.
type Store struct {
	client redis.UniversalClient
	prefix string
	now    ratelimit.Clock
	check  *redis.Script
	// cluster is the client when it is a cluster client, else nil.
	cluster *redis.ClusterClient
	batch   *batcher // nil when Options.Pipeline is negative
	specs   specCache
}

var (
	_ ratelimit.Store       = (*Store)(nil)
	_ ratelimit.ResetFeed   = (*Store)(nil)
	_ ratelimit.Partitioned = (*Store)(nil)
)

// New returns a store over client.
func New(client redis.UniversalClient, opts Options) *Store {
	s := &Store{client: client, prefix: opts.Prefix, now: opts.Now, check: redis.NewScript(checkScriptSource())}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	switch {
	case opts.Pipeline == 0:
		s.batch = newBatcher(s, DefaultPipeline)
	case opts.Pipeline > 0:
		s.batch = newBatcher(s, opts.Pipeline)
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		s.cluster = cc
	}
	return s
}

// Close releases nothing: the store has no goroutine of its own. It does not
// close the client. It is kept so that callers written for a store with
// workers still compile.
func (s *Store) Close() error { return nil }

// Node implements ratelimit.Partitioned: in cluster mode, the address of the
// master that holds key's slot, so that the limiter keeps one circuit
// breaker per master; "" for a single node or sentinel.
func (s *Store) Node(ctx context.Context, key string) string { return s.nodeOf(ctx, s.redisKey(key)) }

// nodeOf is the master of a Redis key's slot.
func (s *Store) nodeOf(ctx context.Context, redisKey string) string {
	if s.cluster == nil {
		return ""
	}
	m, err := s.cluster.MasterForKey(ctx, redisKey)
	if err != nil {
		return ""
	}
	return m.Options().Addr
}

// redisKey is the Redis key holding key's state. The braces are a hash tag:
// all of one identity's limits share one slot.
func (s *Store) redisKey(key string) string { return s.prefix + "{" + key + "}" }

// Check implements ratelimit.Store.
func (s *Store) Check(ctx context.Context, req ratelimit.CheckRequest, out []ratelimit.LimitResult) error {
	// The script's arguments: now and the number of checks (1), then this
	// check's; a queued check's batch sends only the check's part, after
	// its own head.
	args := make([]any, 4, 4+len(req.Limits))
	args[0], args[1], args[2], args[3] = s.nowArg(), 1, req.Cost, len(req.Limits)
	for _, lim := range req.Limits {
		args = append(args, s.specs.of(lim))
	}
	var (
		raw []int64
		err error
	)
	if s.batch != nil {
		raw, err = s.batch.do(ctx, s.redisKey(req.Key), args, len(req.Limits))
	} else {
		raw, err = s.check.Run(ctx, s.client, []string{s.redisKey(req.Key)}, args...).Int64Slice()
	}
	if err != nil {
		return fmt.Errorf("redisstore: check %q: %w", req.Key, err)
	}
	if len(raw) != 5*len(req.Limits) {
		return fmt.Errorf("redisstore: check %q: script returned %d values, want %d", req.Key, len(raw), 5*len(req.Limits))
	}
	for i, lim := range req.Limits {
		v := raw[5*i : 5*i+5]
		o := algo.Outcome{Allowed: v[0] == 1, Remaining: v[1], ResetAfter: float64(v[2]), RetryAfter: float64(v[3]), Blocked: v[4] == 1}
		algo.Apply(&o, lim, &out[i])
	}
	return nil
}

// maxCachedSpecs bounds the spec cache: limits come from policies, a few
// per rule, but a library caller may build them from anything.
const maxCachedSpecs = 4096

// specCache keeps each limit's spec string (limitSpec), so that a check
// formats and allocates none for the limits it has seen. Past
// maxCachedSpecs entries it is emptied and starts again.
type specCache struct {
	mu    sync.RWMutex
	specs map[ratelimit.Limit]string
}

func (c *specCache) of(lim ratelimit.Limit) string {
	c.mu.RLock()
	spec, ok := c.specs[lim]
	c.mu.RUnlock()
	if ok {
		return spec
	}
	spec = limitSpec(lim)
	c.mu.Lock()
	if c.specs == nil || len(c.specs) >= maxCachedSpecs {
		c.specs = make(map[ratelimit.Limit]string)
	}
	c.specs[lim] = spec
	c.mu.Unlock()
	return spec
}

// limitSpec is a limit as the script takes it: "id:algorithm:rate:period
// µs:capacity:block µs", one argument that the checks of a batch share.
func limitSpec(lim ratelimit.Limit) string {
	p := algo.ParamsOf(lim)
	b := make([]byte, 0, 64)
	b = append(b, encodeLimitID(algo.LimitID(lim.Name, p))...)
	b = append(b, ':', '0'+p.Algorithm, ':')
	b = strconv.AppendFloat(b, p.Rate, 'f', -1, 64)
	b = append(b, ':')
	b = strconv.AppendFloat(b, p.Period, 'f', -1, 64)
	b = append(b, ':')
	b = strconv.AppendFloat(b, p.Capacity, 'f', -1, 64)
	b = append(b, ':')
	b = strconv.AppendFloat(b, p.Block, 'f', -1, 64)
	return string(b)
}

// nowArg is the script's first argument: the test clock in microseconds, or
// 0 for the server's TIME.
func (s *Store) nowArg() int64 {
	if s.now != nil {
		return s.now().UnixMicro()
	}
	return 0
}

// Reset implements ratelimit.Store: it deletes the key, then announces it
// on the reset channel so that every limiter following it (FollowResets)
// drops the key from its blocked cache.
func (s *Store) Reset(ctx context.Context, key string) (bool, error) {
	n, err := s.client.Del(ctx, s.redisKey(key)).Result()
	if err != nil {
		return false, fmt.Errorf("redisstore: reset %q: %w", key, err)
	}
	if err := s.client.Publish(ctx, s.ResetChannel(), key).Err(); err != nil {
		return n > 0, fmt.Errorf("redisstore: reset %q: state deleted, but the proxies' blocked caches were not told: %w", key, err)
	}
	return n > 0, nil
}

// ResetChannel is the pub/sub channel on which resets are announced.
func (s *Store) ResetChannel() string { return s.prefix + "reset" }

// FollowResets implements ratelimit.ResetFeed over Redis pub/sub.
func (s *Store) FollowResets(ctx context.Context, onReset func(key string)) error {
	sub := s.client.Subscribe(ctx, s.ResetChannel())
	defer sub.Close()
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case msg, ok := <-ch:
			if !ok {
				return nil
			}
			onReset(msg.Payload)
		}
	}
}

// Info implements ratelimit.Store.
func (s *Store) Info(ctx context.Context, key string) (ratelimit.KeyInfo, error) {
	rk := s.redisKey(key)
	info := ratelimit.KeyInfo{Key: key, StorageKey: rk}
	pipe := s.client.Pipeline()
	val := pipe.Get(ctx, rk)
	ttl := pipe.PTTL(ctx, rk)
	clock := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return info, fmt.Errorf("redisstore: info %q: %w", key, err)
	}
	st, ok := decodeState(val.Val())
	if val.Err() != nil || !ok {
		return info, nil
	}
	info.Exists = true
	info.Hits = st.hits
	info.TTL = ttl.Val()
	now := float64(clock.Val().UnixMicro())
	if s.now != nil {
		now = float64(s.now().UnixMicro())
	}
	if st.blockedUntil > now {
		info.BlockedFor = algo.Micros(st.blockedUntil - now)
	}
	return info, nil
}

// isWrongType reports a WRONGTYPE error: a key of the prefix that holds
// something else (such as the hash of an older version), read as no state.
func isWrongType(err error) bool {
	return redis.HasErrorPrefix(err, "WRONGTYPE")
}

// Ping implements ratelimit.Store. In cluster mode every master must answer.
func (s *Store) Ping(ctx context.Context) error {
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.Ping(ctx).Err()
		})
	}
	return s.client.Ping(ctx).Err()
}

// Top implements ratelimit.Store: SCAN over every master (all of them in
// cluster mode), reading each key's hit count.
func (s *Store) Top(ctx context.Context, n int) ([]ratelimit.Consumer, error) {
	if n <= 0 {
		return nil, nil
	}
	top := &consumerHeap{}
	scanOne := func(ctx context.Context, c redis.UniversalClient) error {
		return s.scanNode(ctx, c, n, top)
	}
	var err error
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		// Masters are scanned one at a time so the heap needs no lock.
		var (
			mu      sync.Mutex
			masters []*redis.Client
		)
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			mu.Lock()
			masters = append(masters, c)
			mu.Unlock()
			return nil
		})
		for _, m := range masters {
			if err != nil {
				break
			}
			err = scanOne(ctx, m)
		}
	} else {
		err = scanOne(ctx, s.client)
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: top: %w", err)
	}
	out := make([]ratelimit.Consumer, top.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(top).(ratelimit.Consumer)
	}
	return out, nil
}

func (s *Store) scanNode(ctx context.Context, c redis.UniversalClient, n int, top *consumerHeap) error {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, globEscape(s.prefix)+"{*", 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			pipe := c.Pipeline()
			vals := make([]*redis.StringCmd, len(keys))
			ttls := make([]*redis.DurationCmd, len(keys))
			for i, k := range keys {
				vals[i] = pipe.Get(ctx, k)
				ttls[i] = pipe.PTTL(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
				return err
			}
			for i, k := range keys {
				if vals[i].Err() != nil {
					continue
				}
				st, ok := decodeState(vals[i].Val())
				if !ok || st.hits <= 0 {
					continue
				}
				key := strings.TrimSuffix(strings.TrimPrefix(k, s.prefix+"{"), "}")
				top.offer(ratelimit.Consumer{Key: key, Hits: st.hits, TTL: ttls[i].Val()}, n)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// consumerHeap is a min-heap by hits holding the n largest seen.
type consumerHeap []ratelimit.Consumer

func (h consumerHeap) Len() int { return len(h) }
func (h consumerHeap) Less(i, j int) bool {
	if h[i].Hits != h[j].Hits {
		return h[i].Hits < h[j].Hits
	}
	return h[i].Key > h[j].Key
}
func (h consumerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *consumerHeap) Push(x any)   { *h = append(*h, x.(ratelimit.Consumer)) }
func (h *consumerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *consumerHeap) offer(c ratelimit.Consumer, n int) {
	if h.Len() < n {
		heap.Push(h, c)
		return
	}
	if (*h)[0].Hits < c.Hits || ((*h)[0].Hits == c.Hits && c.Key < (*h)[0].Key) {
		(*h)[0] = c
		heap.Fix(h, 0)
	}
}

// globEscape quotes the characters SCAN MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
