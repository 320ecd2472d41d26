// Package redisstore is the ratelimit.Store over Redis: single node,
// sentinel or cluster, through go-redis's UniversalClient.
//
// Every check is atomic and decided by Redis alone, on the keys of one
// identity, which share its hash tag "<prefix>{<key>}" (one slot: a cluster
// never sees CROSSSLOT). On the server's clock, fixed-window and GCRA
// limits each live in a key of their own ("<prefix>{<key>}:<limit id>",
// see lean.go): a one-limit check is a short script (lean_fw.lua,
// lean_gcra.lua), or, for a fixed window of cost 1 without a penalty
// block, one pipeline of plain commands. The other algorithms (and every limit under a
// test clock) live in the identity's value "<prefix>{<key>}", a short
// string (lua/codec.lua), which the general script (check.lua) reads and
// writes together with the identity's lean keys, so a multi-limit check is
// all-or-nothing. With pipelining, the checks that arrive together run in
// one script call per hash slot and script. Time is the server's (TIME, or
// the keys' TTLs), not the client's. Keys expire by themselves; nothing
// scans for keys to delete.
package redisstore

import (
	"container/heap"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	// Prefix starts every key; empty means DefaultPrefix. It must hold no
	// "{" or "}" (CheckPrefix says why; callers that take a prefix from
	// users check it there first).
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
	// WaitReplicas, when positive, follows every check's write with
	// WAIT WaitReplicas WaitTimeout on the same connection: the check is
	// answered once that many replicas hold its write (or the timeout
	// passed), so a failover to an acknowledging replica keeps the count.
	// A check whose write was not acknowledged in time is answered all
	// the same and counted (WaitShortfalls). Off by default: it adds a
	// replica round trip to every check. Single node and Sentinel
	// clients only; ignored for a Cluster client (a WAIT must follow the
	// writes on their master's connection).
	WaitReplicas int
	// WaitTimeout bounds each WAIT; zero means DefaultWaitTimeout.
	WaitTimeout time.Duration
}

// DefaultWaitTimeout is the default of Options.WaitTimeout.
const DefaultWaitTimeout = 50 * time.Millisecond

// CheckPrefix reports why prefix cannot start the store's keys, or nil.
// Redis Cluster hashes a key by its first "{...}": a prefix with a "{"
// puts every identity in one slot (or breaks the store's own hash tag), and
// one with "{}" makes Redis hash each key whole, splitting an identity's
// keys over slots (its resets then fail with CROSSSLOT, and its multi-limit
// checks whenever the slots are on different masters). A "}" alone makes
// the store's keys unparsable for Info and Top.
func CheckPrefix(prefix string) error {
	if i := strings.IndexAny(prefix, "{}"); i >= 0 {
		return fmt.Errorf("redisstore: prefix %q holds %q: Redis Cluster hashes a key by its first {...}, "+
			"so the store's own hash tag must be the first; use a prefix without braces, such as %q",
			prefix, prefix[i:i+1], strings.NewReplacer("{", "", "}", "").Replace(prefix))
	}
	return nil
}

// Store keeps rate-limit state in Redis. It is safe for concurrent use.
type Store struct {
	client redis.UniversalClient
	prefix string
	now    ratelimit.Clock
	check  *redis.Script
	// leanFW and leanGCRA are lean_fw.lua and lean_gcra.lua, registerScript
	// register.lua (lean.go).
	leanFW, leanGCRA, registerScript *redis.Script
	// cluster is the client when it is a cluster client, else nil.
	cluster *redis.ClusterClient
	batch   *batcher // nil when Options.Pipeline is negative
	specs   specCache
	// waitReplicas and waitMs are the WAIT after every write (0: none);
	// waitShort counts the writes fewer replicas acknowledged in time.
	waitReplicas, waitMs int64
	waitShort            atomic.Int64
}

var (
	_ ratelimit.Store       = (*Store)(nil)
	_ ratelimit.ResetFeed   = (*Store)(nil)
	_ ratelimit.Partitioned = (*Store)(nil)
)

// New returns a store over client.
func New(client redis.UniversalClient, opts Options) *Store {
	s := &Store{client: client, prefix: opts.Prefix, now: opts.Now, check: redis.NewScript(checkScriptSource()), leanFW: redis.NewScript(leanFWLua), leanGCRA: redis.NewScript(leanGCRALua), registerScript: redis.NewScript(registerLua)}
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
	if opts.WaitReplicas > 0 && s.cluster == nil {
		s.waitReplicas, s.waitMs = int64(opts.WaitReplicas), DefaultWaitTimeout.Milliseconds()
		if opts.WaitTimeout > 0 {
			s.waitMs = max(1, opts.WaitTimeout.Milliseconds())
		}
	}
	return s
}

// WaitShortfalls is the number of checks whose writes fewer replicas
// than Options.WaitReplicas acknowledged within the WaitTimeout: counts a
// failover could lose. Each check of a batch that shared one WAIT is
// counted, so that the figure bounds what a failover can take.
func (s *Store) WaitShortfalls() int64 { return s.waitShort.Load() }

// waitAfter queues WAIT on pipe, after its writes, when the store waits.
func (s *Store) waitAfter(ctx context.Context, pipe redis.Pipeliner) *redis.IntCmd {
	if s.waitReplicas == 0 {
		return nil
	}
	cmd := redis.NewIntCmd(ctx, "wait", s.waitReplicas, s.waitMs)
	_ = pipe.Process(ctx, cmd) // queued: the pipeline's Exec sends it
	return cmd
}

// waited counts the checks (checks of them) whose writes a WAIT that came
// short of the replicas asked for followed.
func (s *Store) waited(cmd *redis.IntCmd, checks int) {
	if cmd != nil && (cmd.Err() != nil || cmd.Val() < s.waitReplicas) {
		s.waitShort.Add(int64(checks))
	}
}

// run is script.Run of a call holding checks checks, followed by WAIT on
// the same connection when the store waits for replicas.
func (s *Store) run(ctx context.Context, checks int, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if s.waitReplicas == 0 {
		return script.Run(ctx, s.client, keys, args...)
	}
	for _, source := range []bool{false, true} {
		pipe := s.client.Pipeline()
		var cmd *redis.Cmd
		if source {
			cmd = script.Eval(ctx, pipe, keys, args...)
		} else {
			cmd = script.EvalSha(ctx, pipe, keys, args...)
		}
		wait := s.waitAfter(ctx, pipe)
		_, _ = pipe.Exec(ctx) // errors are per command
		if !source && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			continue
		}
		if cmd.Err() == nil {
			s.waited(wait, checks)
		}
		return cmd
	}
	panic("unreachable")
}

// Close releases nothing: the store has no goroutine of its own. It does not
// close the client. It is kept so that callers written for a store with
// workers still compile.
func (s *Store) Close() error { return nil }

// Node implements ratelimit.Partitioned: in cluster mode, the address of the
// master that holds key's slot, so that the limiter keeps one circuit
// breaker per master; "" for a single node or sentinel.
func (s *Store) Node(ctx context.Context, key string) string {
	if s.cluster == nil {
		return "" // without building the key
	}
	return s.nodeOf(ctx, s.redisKey(key))
}

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
func (s *Store) redisKey(key string) string { return s.prefix + "{" + hashTag(key) + "}" }

// hashTag is what an identity's keys hold between their braces: the
// identity itself, or, when it is empty or starts with "}" or "=", the
// identity after a "=". Redis hashes a key whose first "{" is followed at
// once by "}" whole, so "<prefix>{}abc}" and its window key
// "<prefix>{}abc}:<id>" would land in different slots (a cluster refuses
// the multi-limit check, CROSSSLOT, and Reset's DEL); "=" keeps the tag
// non-empty, and escaping a leading "=" too keeps the mapping one to one
// (untag undoes it).
func hashTag(key string) string {
	if key == "" || key[0] == '}' || key[0] == '=' {
		return "=" + key
	}
	return key
}

// untag is the identity of a hash tag (hashTag's inverse).
func untag(tag string) string {
	if tag != "" && tag[0] == '=' {
		return tag[1:]
	}
	return tag
}

// Check implements ratelimit.Store.
func (s *Store) Check(ctx context.Context, req ratelimit.CheckRequest, out []ratelimit.LimitResult) error {
	// A cost of leanMaxRate or more (above every lean rate, so denied) goes
	// to the general script: lean_fw.lua's counter would run into its MARK
	// or overflow int64, and read as allowed or as a foreign value.
	if len(req.Limits) == 1 && req.Cost > 0 && req.Cost < leanMaxRate {
		if e := s.specs.of(req.Limits[0], s.now == nil); e.lean {
			return s.checkLean(ctx, req, e, out)
		}
	}
	// The script's arguments: now and the number of checks (1), then this
	// check's; a queued check's batch sends only the check's part, after
	// its own head.
	args := make([]any, 4, 4+len(req.Limits))
	args[0], args[1], args[2], args[3] = s.nowArg(), 1, req.Cost, len(req.Limits)
	for _, lim := range req.Limits {
		e := s.specs.of(lim, s.now == nil)
		if e.lean {
			s.register(ctx, e)
		}
		args = append(args, e.spec)
	}
	var (
		raw []int64
		err error
	)
	key := s.redisKey(req.Key)
	if s.batch != nil {
		raw, err = s.batch.do(ctx, pendingCheck{ctx: ctx, key: key, args: args, limits: len(req.Limits)})
	} else {
		raw, err = s.run(ctx, 1, s.check, []string{key}, args...).Int64Slice()
	}
	return s.deliver(req, raw, err, out)
}

// checkLean checks one lean fixed-window limit (lean.go). A check of cost
// 1 against a limit without a penalty block, sent alone, needs no script:
// countPlain.
func (s *Store) checkLean(ctx context.Context, req ratelimit.CheckRequest, e *specEntry, out []ratelimit.LimitResult) error {
	s.register(ctx, e)
	window := s.leanWindow(req.Key, e.id)
	args := []any{1, req.Cost, e.leanArgs[0], e.leanArgs[1], e.leanArgs[2]}
	plain := !e.gcra && req.Cost == 1 && e.blockMs == 0
	var (
		raw []int64
		err error
	)
	switch {
	case s.batch != nil:
		raw, err = s.batch.do(ctx, pendingCheck{ctx: ctx, key: window, kind: e.kind(), plain: plain, entry: e, args: args, limits: 1})
	case plain:
		raw, err = s.countPlain(ctx, window, e, args)
	default:
		raw, err = s.run(ctx, 1, s.script(e.kind()), []string{window}, args...).Int64Slice()
	}
	return s.deliver(req, raw, err, out)
}

// deliver parses a script's reply into out: 5 values per limit.
func (s *Store) deliver(req ratelimit.CheckRequest, raw []int64, err error, out []ratelimit.LimitResult) error {
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

// Kinds of script call: the general driver, the lean scripts.
const (
	kindGeneral uint8 = iota
	kindLeanFW
	kindLeanGCRA
)

func (e *specEntry) kind() uint8 {
	if e.gcra {
		return kindLeanGCRA
	}
	return kindLeanFW
}

// script is the script of a kind of call.
func (s *Store) script(kind uint8) *redis.Script {
	switch kind {
	case kindLeanFW:
		return s.leanFW
	case kindLeanGCRA:
		return s.leanGCRA
	}
	return s.check
}

// maxCachedSpecs bounds the spec cache: limits come from policies, a few
// per rule, but a library caller may build them from anything.
const maxCachedSpecs = 4096

// specEntry is what a store keeps per limit: its spec string (limitSpec)
// and, for a limit in the lean layout, its id and lean_fw.lua arguments.
type specEntry struct {
	spec     string
	id       string
	lean     bool
	gcra     bool // a lean GCRA limit (else a lean fixed window)
	leanArgs [3]any
	// rate, periodMs and blockMs are a lean limit's, for countPlain;
	// lifetimeMs is leanLifetime's, for the registry.
	rate, periodMs, blockMs, lifetimeMs int64
	// registered is when the id was last added to the registry (Unix ns);
	// registering is set while an addition is under way.
	registered  atomic.Int64
	registering atomic.Bool
	// firstTried is closed when the first addition has been tried.
	firstTried chan struct{}
	firstTry   sync.Once
}

// specCache keeps each limit's entry, so that a check formats and
// allocates none for the limits it has seen. Past maxCachedSpecs entries
// it is emptied and starts again.
type specCache struct {
	mu    sync.RWMutex
	specs map[ratelimit.Limit]*specEntry
}

// of is lim's entry; lean says whether the store may use the lean layout
// (it runs on the server's clock).
func (c *specCache) of(lim ratelimit.Limit, lean bool) *specEntry {
	c.mu.RLock()
	e, ok := c.specs[lim]
	c.mu.RUnlock()
	if ok {
		return e
	}
	e = &specEntry{lean: lean && leanEligible(lim)}
	e.spec = limitSpec(lim, e.lean)
	e.id = e.spec[:limitIDLen]
	if e.lean {
		e.leanArgs = leanArgs(lim)
		e.firstTried = make(chan struct{})
		e.gcra = lim.Algorithm == ratelimit.GCRA
		e.rate, e.periodMs, e.blockMs = lim.Rate, lim.Period.Milliseconds(), lim.Block.Milliseconds()
		e.lifetimeMs = leanLifetime(lim)
	}
	c.mu.Lock()
	if c.specs == nil || len(c.specs) >= maxCachedSpecs {
		c.specs = make(map[ratelimit.Limit]*specEntry)
	}
	c.specs[lim] = e
	c.mu.Unlock()
	return e
}

// limitSpec is a limit as the script takes it: "id:algorithm:rate:period
// µs:capacity:block µs", one argument that the checks of a batch share.
// In the lean layout a fixed window is algorithm 5, GCRA 6.
func limitSpec(lim ratelimit.Limit, lean bool) string {
	p := algo.ParamsOf(lim)
	b := make([]byte, 0, 64)
	b = append(b, encodeLimitID(algo.LimitID(lim.Name, p))...)
	switch {
	case lean && lim.Algorithm == ratelimit.GCRA:
		b = append(b, ':', '6', ':')
	case lean:
		b = append(b, ':', '5', ':')
	default:
		b = append(b, ':', '0'+p.Algorithm, ':')
	}
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

// Reset implements ratelimit.Store: it deletes the key (its identity value
// and the window and penalty keys of every lean limit id of the registry),
// then announces it on the reset channel so that every limiter following it
// (FollowResets) drops the key from its blocked cache.
func (s *Store) Reset(ctx context.Context, key string) (bool, error) {
	ids, err := s.leanIDs(ctx)
	if err != nil {
		return false, fmt.Errorf("redisstore: reset %q: read the lean limit ids: %w", key, err)
	}
	keys := make([]string, 1, 1+2*len(ids))
	keys[0] = s.redisKey(key)
	for _, id := range ids {
		w, p := s.leanKeys(key, id)
		keys = append(keys, w, p)
	}
	// All keys share the identity's slot: one DEL per 512 of them, all in
	// one round trip.
	pipe := s.client.Pipeline()
	var dels []*redis.IntCmd
	for chunk := range slices.Chunk(keys, 512) {
		dels = append(dels, pipe.Del(ctx, chunk...))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("redisstore: reset %q: %w", key, err)
	}
	var deleted int64
	for _, d := range dels {
		deleted += d.Val()
	}
	if err := s.client.Publish(ctx, s.ResetChannel(), key).Err(); err != nil {
		return deleted > 0, fmt.Errorf("redisstore: reset %q: state deleted, but the proxies' blocked caches were not told: %w", key, err)
	}
	return deleted > 0, nil
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

// Info implements ratelimit.Store. Hits is the most of the identity
// value's hits and of its lean window counters (each counts the requests
// of its own window).
func (s *Store) Info(ctx context.Context, key string) (ratelimit.KeyInfo, error) {
	info := ratelimit.KeyInfo{Key: key}
	ids, err := s.leanIDs(ctx)
	if err != nil {
		return info, fmt.Errorf("redisstore: info %q: read the lean limit ids: %w", key, err)
	}
	rk := s.redisKey(key)
	info.StorageKey = rk
	pipe := s.client.Pipeline()
	val := pipe.Get(ctx, rk)
	ttl := pipe.PTTL(ctx, rk)
	clock := pipe.Time(ctx)
	type leanCmds struct {
		count           *redis.StringCmd
		window, penalty *redis.DurationCmd
	}
	lean := make([]leanCmds, len(ids))
	for i, id := range ids {
		w, p := s.leanKeys(key, id)
		lean[i] = leanCmds{pipe.Get(ctx, w), pipe.PTTL(ctx, w), pipe.PTTL(ctx, p)}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return info, fmt.Errorf("redisstore: info %q: %w", key, err)
	}
	now := float64(clock.Val().UnixMicro())
	if s.now != nil {
		now = float64(s.now().UnixMicro())
	}
	if st, ok := decodeState(val.Val()); val.Err() == nil && ok {
		info.Exists = true
		info.Hits = st.hits
		info.TTL = ttl.Val()
		if st.blockedUntil > now {
			info.BlockedFor = algo.Micros(st.blockedUntil - now)
		}
	}
	for _, l := range lean {
		if hits, until, ok := decodeLean(l.count.Val()); ok && l.count.Err() == nil && l.window.Val() > 0 {
			info.Exists = true
			info.Hits = max(info.Hits, hits)
			info.TTL = max(info.TTL, l.window.Val())
			if until > now {
				info.BlockedFor = max(info.BlockedFor, algo.Micros(until-now))
			}
		}
		if d := l.penalty.Val(); d > 0 {
			info.Exists = true
			info.TTL = max(info.TTL, d)
			info.BlockedFor = max(info.BlockedFor, d)
		}
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
				if _, _, penalty := leanKeyOf(k, s.prefix); penalty {
					continue // a penalty key: the window key has the hits
				}
				vals[i] = pipe.Get(ctx, k)
				ttls[i] = pipe.PTTL(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
				return err
			}
			for i, k := range keys {
				if vals[i] == nil || vals[i].Err() != nil {
					continue
				}
				if key, ok, _ := leanKeyOf(k, s.prefix); ok {
					if hits, _, ok := decodeLean(vals[i].Val()); ok && hits > 0 {
						top.offer(ratelimit.Consumer{Key: key, Hits: hits, TTL: ttls[i].Val()}, n)
					}
					continue
				}
				st, ok := decodeState(vals[i].Val())
				if !ok || st.hits <= 0 {
					continue
				}
				key := untag(strings.TrimSuffix(strings.TrimPrefix(k, s.prefix+"{"), "}"))
				top.offer(ratelimit.Consumer{Key: key, Hits: st.hits, TTL: ttls[i].Val()}, n)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// consumerHeap is a min-heap by hits holding the n largest seen, one entry
// per identity: an identity met again (its identity value and its lean
// window keys) keeps the most hits of its keys, so an identity evicted
// earlier had fewer than every entry and its later keys decide alone.
type consumerHeap struct {
	h   []ratelimit.Consumer
	pos map[string]int // index in h by key
}

func (h *consumerHeap) Len() int { return len(h.h) }
func (h *consumerHeap) Less(i, j int) bool {
	if h.h[i].Hits != h.h[j].Hits {
		return h.h[i].Hits < h.h[j].Hits
	}
	return h.h[i].Key > h.h[j].Key
}
func (h *consumerHeap) Swap(i, j int) {
	h.h[i], h.h[j] = h.h[j], h.h[i]
	h.pos[h.h[i].Key], h.pos[h.h[j].Key] = i, j
}
func (h *consumerHeap) Push(x any) {
	c := x.(ratelimit.Consumer)
	h.pos[c.Key] = len(h.h)
	h.h = append(h.h, c)
}
func (h *consumerHeap) Pop() any {
	x := h.h[len(h.h)-1]
	h.h = h.h[:len(h.h)-1]
	delete(h.pos, x.Key)
	return x
}

func (h *consumerHeap) offer(c ratelimit.Consumer, n int) {
	if h.pos == nil {
		h.pos = make(map[string]int)
	}
	if i, ok := h.pos[c.Key]; ok {
		e := &h.h[i]
		e.Hits, e.TTL = max(e.Hits, c.Hits), max(e.TTL, c.TTL)
		heap.Fix(h, i)
		return
	}
	if h.Len() < n {
		heap.Push(h, c)
		return
	}
	if m := h.h[0]; m.Hits < c.Hits || (m.Hits == c.Hits && c.Key < m.Key) {
		delete(h.pos, m.Key)
		h.h[0] = c
		h.pos[c.Key] = 0
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
