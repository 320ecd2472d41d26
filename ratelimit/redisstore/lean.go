package redisstore

// The lean layout of a fixed-window limit (lua/lean_fw.lua): with the
// server's clock, each fixed-window limit of an identity lives in a key of
// its own, "<prefix>{<key>}:<limit id>", an integer counter whose TTL is the
// window, and its penalty block in "<prefix>{<key>}!<limit id>" (present
// while the block is in force). The hash tag keeps them in the identity's
// slot, so a multi-limit check (check.lua, algorithm 5) still reads and
// writes them atomically with the identity's other limits. A one-limit
// check runs lean_fw.lua: INCRBY and PTTL, no clock, no string to parse.
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
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
)

//go:embed lua/lean_fw.lua
var leanFWLua string

// leanMaxRate bounds the rate (and the cost) of a lean limit: the counter
// stays below leanMark, which Lua's doubles hold exactly.
const leanMaxRate = 1 << 48

// leanMark is added to a window counter while a penalty block is in force.
const leanMark = 1 << 50

// leanRegisterEvery is how often a lean limit id is added to the registry
// again.
const leanRegisterEvery = time.Minute

// leanEligible reports whether lim is kept in the lean layout by a store on
// the server's clock: a fixed window (and block) of whole milliseconds, as
// PEXPIRE takes them.
func leanEligible(lim ratelimit.Limit) bool {
	return lim.Algorithm == ratelimit.FixedWindow && lim.Period%time.Millisecond == 0 &&
		lim.Block%time.Millisecond == 0 && lim.Rate < leanMaxRate
}

// registry is the set of the limit ids used in the lean layout.
func (s *Store) registry() string { return s.prefix + "limits" }

// leanKeys are the window and penalty keys of limit id for key, built in
// one allocation.
func (s *Store) leanKeys(key, id string) (window, penalty string) {
	both := s.prefix + "{" + key + "}:" + id + s.prefix + "{" + key + "}!" + id
	n := len(both) / 2
	return both[:n], both[n:]
}

// register adds the entry's id to the registry when it is not there yet
// (or was added more than leanRegisterEvery ago).
func (s *Store) register(ctx context.Context, e *specEntry) error {
	now := time.Now().UnixNano()
	if last := e.registered.Load(); last != 0 && now-last < int64(leanRegisterEvery) {
		return nil
	}
	if err := s.client.SAdd(ctx, s.registry(), e.id).Err(); err != nil {
		return fmt.Errorf("redisstore: register limit %s: %w", e.id, err)
	}
	e.registered.Store(now)
	return nil
}

// leanIDs are the limit ids of the registry.
func (s *Store) leanIDs(ctx context.Context) ([]string, error) {
	return s.client.SMembers(ctx, s.registry()).Result()
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
	return redisKey[len(prefix)+1 : n-limitIDLen-2], true, penalty
}

// leanArgs are a lean limit's script arguments after the cost: rate,
// period ms, block ms.
func leanArgs(lim ratelimit.Limit) [3]any {
	return [3]any{strconv.FormatInt(lim.Rate, 10), strconv.FormatInt(lim.Period.Milliseconds(), 10), strconv.FormatInt(lim.Block.Milliseconds(), 10)}
}

// countPlain is a lean check of cost 1 against a limit without a penalty
// block, in one pipeline of plain commands: INCRBY and PTTL. Such a check
// never takes a denial back (the counter was at the rate already) and meets
// no MARK (only limits with a block set it), so it needs no script. The
// first hit of a window sets the window's TTL after the pipeline (PEXPIRE
// NX, one more round trip per window); until then the counter has none,
// and every check that sees it so sets it (NX: the first one wins), so a
// client that dies in between leaves no counter without expiry. A value that
// is not a counter is left to the script, which replaces it. args are the
// script's, for that case.
func (s *Store) countPlain(ctx context.Context, window string, e *specEntry, args []any) ([]int64, error) {
	pipe := s.client.Pipeline()
	incr := pipe.IncrBy(ctx, window, 1)
	pttl := pipe.PTTL(ctx, window)
	if _, err := pipe.Exec(ctx); err != nil {
		var reply redis.Error
		if errors.As(incr.Err(), &reply) {
			return s.lean.Run(ctx, s.client, []string{window}, args...).Int64Slice()
		}
		return nil, err
	}
	v, ttl := incr.Val(), pttl.Val()
	var reset int64
	switch {
	case ttl >= 0:
		reset = ttl.Microseconds()
	case ttl == -1: // a new window (or one whose first hitter died)
		if err := s.client.Do(ctx, "PEXPIRE", window, e.periodMs, "NX").Err(); err != nil {
			return nil, err
		}
		reset = e.periodMs * 1000
	default: // -2: the window ended after the INCRBY
	}
	if v <= e.rate {
		return []int64{1, e.rate - v, reset, 0, 0}, nil
	}
	return []int64{0, 0, reset, reset, 0}, nil
}
