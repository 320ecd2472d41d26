package redisstore

// The lean layout (lua/lean_fw.lua, lua/lean_gcra.lua): with the server's
// clock, each fixed-window and GCRA limit of an identity lives in a key of
// its own, "<prefix>{<key>}:<limit id>". A fixed window's is an integer
// counter whose TTL is the window, its penalty block in
// "<prefix>{<key>}!<limit id>" (present while the block is in force); a
// GCRA limit's holds "<hits>:<tat>[,<block end>]" and expires when that
// state is back to fresh. The hash tag keeps them in the identity's slot,
// so a multi-limit check (check.lua, algorithms 5 and 6) still reads and
// writes them atomically with the identity's other limits. A one-limit
// check runs a lean script: no spec to parse, no identity value to decode.
//
// Neither name can be an identity key (those end with "}"). Reset and Info
// must know the limit ids an identity may hold: every id the store uses in
// the lean layout is added to the set "<prefix>limits" before its first
// check (and again every leanRegisterEvery, in case the set was lost), and
// they read it.

import (
	"context"
	_ "embed"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/internal/algo"
)

var (
	//go:embed lua/lean_fw.lua
	leanFWLua string
	//go:embed lua/register.lua
	registerLua string
	//go:embed lua/lean_gcra.lua
	leanGCRALua string
)

// leanMaxRate bounds the rate (and the cost) of a lean limit: the counter
// stays below leanMark, which Lua's doubles hold exactly.
const leanMaxRate = 1 << 48

// leanMark is added to a window counter while a penalty block is in force.
const leanMark = 1 << 50

// leanRegisterEvery is how often a lean limit id is added to the registry
// again (which also moves its expiry on): the set may be lost (a restart without persistence, FLUSHALL, a
// failover to a replica that missed the write), and until it is written
// again a Reset or Info by another process misses the windows written
// since. One registration a second per limit id and proxy, in the background, keeps
// that gap to about a second.
const leanRegisterEvery = time.Second

// leanEligible reports whether lim is kept in the lean layout by a store on
// the server's clock: a GCRA limit, or a fixed window (and block) of whole
// milliseconds, as PEXPIRE takes them.
func leanEligible(lim ratelimit.Limit) bool {
	switch lim.Algorithm {
	case ratelimit.GCRA:
		return true
	case ratelimit.FixedWindow:
		return lim.Period%time.Millisecond == 0 && lim.Block%time.Millisecond == 0 && lim.Rate < leanMaxRate
	}
	return false
}

// registry is the sorted set of the limit ids used in the lean layout,
// scored by when their keys are gone (lua/register.lua).
func (s *Store) registry() string { return s.prefix + "lean-ids" }

// legacyRegistry is the plain set in which versions before the sorted
// registry kept their ids (never pruned): Reset and Info read it too, so a
// new CLI still finds the windows of older proxies during an upgrade. It can
// be deleted once no older proxy runs.
func (s *Store) legacyRegistry() string { return s.prefix + "limits" }

// registryMargin is added to a limit's lifetime in the registry: the lean
// scripts round a key's TTL up to whole seconds plus one.
const registryMargin = 5 * time.Second

// leanLifetime is how long a key of a lean limit can live after one check:
// its window (for GCRA, the burst tolerance) or its penalty block, plus
// registryMargin; in milliseconds.
func leanLifetime(lim ratelimit.Limit) int64 {
	life := max(lim.Period, lim.Block)
	if p := algo.ParamsOf(lim); lim.Algorithm == ratelimit.GCRA && p.Rate > 0 {
		life = max(life, time.Duration(p.Period/p.Rate*p.Capacity)*time.Microsecond)
	}
	return (life + registryMargin).Milliseconds()
}

// leanWindow is the window key of limit id for key (leanKeys' first).
func (s *Store) leanWindow(key, id string) string {
	return s.prefix + "{" + hashTag(key) + "}:" + id
}

// leanKeys are the window and penalty keys of limit id for key, built in
// one allocation.
func (s *Store) leanKeys(key, id string) (window, penalty string) {
	tag := hashTag(key)
	both := s.prefix + "{" + tag + "}:" + id + s.prefix + "{" + tag + "}!" + id
	n := len(both) / 2
	return both[:n], both[n:]
}

// register adds the entry's id to the registry when it is not there yet
// (or was added more than leanRegisterEvery ago). The registration runs in a
// goroutine of its own (one per entry at a time), and a failed one is tried
// again by the next check. A later check never waits for it, but the first
// checks of an entry wait (up to half of what is left of their ctx's
// budget) for its first attempt: a Reset or Info by another process reads only the registry, and
// a window key written before its id is there would be missed (the reset
// answering "nothing there" and leaving the identity limited). The
// registry's key may live on another node than the identity's (a cluster),
// which may be down while the identity's is not: after a failed first
// attempt, checks go on without waiting.
func (s *Store) register(ctx context.Context, e *specEntry) {
	now := time.Now().UnixNano()
	last := e.registered.Load()
	if last != 0 && now-last < int64(leanRegisterEvery) {
		return
	}
	if e.registering.CompareAndSwap(false, true) {
		go func() {
			defer e.registering.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), ClientTimeout)
			defer cancel()
			if s.registerScript.Run(ctx, s.client, []string{s.registry()}, e.id, e.lifetimeMs).Err() == nil {
				e.registered.Store(time.Now().UnixNano())
			}
			e.firstTry.Do(func() { close(e.firstTried) })
		}()
	}
	if last == 0 {
		// At most half the check's budget: with the registry's node down
		// (connection hanging), the first checks still have time to run.
		wait := ClientTimeout
		if d, ok := ctx.Deadline(); ok {
			wait = time.Until(d) / 2
		}
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-e.firstTried:
		case <-timer.C:
		case <-ctx.Done():
		}
	}
}

// leanIDs are the limit ids of the registry and those this store uses
// itself (whose registration may still be under way), each once (sorted).
func (s *Store) leanIDs(ctx context.Context) ([]string, error) {
	pipe := s.client.Pipeline()
	current := pipe.ZRange(ctx, s.registry(), 0, -1)
	legacy := pipe.SMembers(ctx, s.legacyRegistry())
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	ids := slices.Concat(current.Val(), legacy.Val())
	s.specs.mu.RLock()
	for _, e := range s.specs.specs {
		if e.lean {
			ids = append(ids, e.id)
		}
	}
	s.specs.mu.RUnlock()
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// leanKeyOf parses a Redis key of the store: for a lean window or penalty
// key, the identity it belongs to, ok, and whether it is the penalty key.
func leanKeyOf(redisKey, prefix string) (key string, ok, penalty bool) {
	n := len(redisKey)
	if n < len(prefix)+3+limitIDLen || redisKey[n-1] == '}' || redisKey[n-limitIDLen-2] != '}' {
		return "", false, false
	}
	switch redisKey[n-limitIDLen-1] {
	case ':':
	case '!':
		penalty = true
	default:
		return "", false, false
	}
	return untag(redisKey[len(prefix)+1 : n-limitIDLen-2]), true, penalty
}

// leanArgs are a lean limit's script arguments after the cost: for a
// fixed window rate, period ms, block ms; for GCRA interval µs, capacity,
// block µs (the numbers gcra.lua computes from the spec).
func leanArgs(lim ratelimit.Limit) [3]any {
	if lim.Algorithm == ratelimit.GCRA {
		p := algo.ParamsOf(lim)
		return [3]any{strconv.FormatFloat(p.Period/p.Rate, 'g', -1, 64), strconv.FormatFloat(p.Capacity, 'f', -1, 64), strconv.FormatFloat(p.Block, 'f', -1, 64)}
	}
	return [3]any{strconv.FormatInt(lim.Rate, 10), strconv.FormatInt(lim.Period.Milliseconds(), 10), strconv.FormatInt(lim.Block.Milliseconds(), 10)}
}

// countPlain is a lean check of cost 1 against a limit without a penalty
// block, in one pipeline of plain commands: INCRBY, PEXPIRE NX and PTTL.
// Such a check never takes a denial back (the counter was at the rate
// already) and meets no MARK (only limits with a block set it), so it needs
// no script. The three leave in one write: the first hit of a window sets
// its TTL in the same round trip (NX: a later hit leaves it), and a check
// whose context ends after the write still has all three run, so it never
// leaves a counter that Redis keeps for ever. (MULTI/EXEC would also cover a
// connection cut inside that one small write; in go-redis it cost 14
// allocations and 10 % of throughput per check, measured.) A value that is not a counter is left to the script, which replaces
// it. args are the script's, for that case.
func (s *Store) countPlain(ctx context.Context, window string, e *specEntry, args []any) ([]int64, error) {
	pipe := s.client.Pipeline()
	incr := pipe.IncrBy(ctx, window, 1)
	pipe.Do(ctx, "PEXPIRE", window, e.periodMs, "NX")
	pttl := pipe.PTTL(ctx, window)
	wait := s.waitAfter(ctx, pipe)
	if _, err := pipe.Exec(ctx); err != nil && (wait == nil || incr.Err() != nil || pttl.Err() != nil) {
		var reply redis.Error
		if errors.As(incr.Err(), &reply) {
			return s.run(ctx, 1, s.leanFW, []string{window}, args...).Int64Slice()
		}
		return nil, err
	}
	s.waited(wait, 1)
	v, reset := incr.Val(), pttl.Val().Microseconds()
	if v <= e.rate {
		return []int64{1, e.rate - v, reset, 0, 0}, nil
	}
	return []int64{0, 0, reset, reset, 0}, nil
}

// decodeLean reads a lean key's value: a fixed window's counter (hits is
// its count), or a GCRA value "<hits>:<tat>[,<block end>]" (blockedUntil
// is that end, µs; 0 for none).
func decodeLean(val string) (hits int64, blockedUntil float64, ok bool) {
	head, rest, gcra := strings.Cut(val, ":")
	n, err := strconv.ParseInt(head, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if !gcra {
		return n % leanMark, 0, true
	}
	if _, x, found := strings.Cut(rest, ","); found && x != "" {
		end, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		blockedUntil = float64(end + stateEpoch)
	}
	return n, blockedUntil, true
}
