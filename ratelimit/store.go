package ratelimit

import (
	"context"
	"time"
)

// Store keeps rate-limit state. The memory and Redis stores (packages
// ratelimit/memory and ratelimit/redisstore) implement it with identical
// semantics, checked by one contract suite.
//
// A store check is all-or-nothing: when any limit denies, no limit consumes
// anything (a penalty Block of the denying limit is still recorded).
type Store interface {
	// Check evaluates req.Limits for req.Key and, when all allow and
	// req.Cost > 0, consumes req.Cost from each. A Cost of 0 only peeks.
	// It writes one result per limit into out, which has len(req.Limits).
	Check(ctx context.Context, req CheckRequest, out []LimitResult) error
	// Reset deletes all state of key and reports whether there was any.
	Reset(ctx context.Context, key string) (bool, error)
	// Info describes the stored state of key without changing it.
	Info(ctx context.Context, key string) (KeyInfo, error)
	// Top lists up to n keys with the most hits, most first.
	Top(ctx context.Context, n int) ([]Consumer, error)
	// Ping checks that the store answers.
	Ping(ctx context.Context) error
}

// ResetFeed is implemented by stores that several processes share (Redis):
// their Reset announces the key to every process, and FollowResets delivers
// the keys reset anywhere, so each limiter drops them from its blocked
// cache (a fleet-wide unblock).
type ResetFeed interface {
	// FollowResets calls onReset with every key reset by any process until
	// ctx ends; it reconnects by itself.
	FollowResets(ctx context.Context, onReset func(key string)) error
}

// InProcess is implemented by stores that never block on I/O (the memory
// store). The limiter arms no latency-budget deadline for them and hands
// them the time it already read (clock reads are not free).
type InProcess interface {
	Store
	// CheckAt is Check at time now (unless the store has a clock of its own).
	CheckAt(ctx context.Context, req CheckRequest, now time.Time, out []LimitResult) error
}

// Warmer is implemented by stores whose first checks pay for setting up
// (connections, scripts, registrations: the Redis store). Warm does that
// work for limits before traffic comes, so the first burst is decided
// within the budget as later ones are; a failed Warm changes nothing (the
// checks set up what is missing themselves).
type Warmer interface {
	Warm(ctx context.Context, limits []Limit) error
}

// Evicting is implemented by bounded stores (the memory store), which drop
// live state to make room: what they dropped is reported (admin API,
// metrics), since an evicted counter starts again and an evicted block is
// lifted early.
type Evicting interface {
	Evictions() Evictions
}

// Evictions counts the identities a bounded store dropped while their
// state was live.
type Evictions struct {
	// Counters were dropped with no penalty block in force.
	Counters int64 `json:"counters"`
	// Blocks were dropped while a penalty block was in force.
	Blocks int64 `json:"blocks"`
}

// CheckRequest is one check as a store sees it.
type CheckRequest struct {
	Key    string
	Limits []Limit
	Cost   int64
}

// Consumer is one identity in a Top listing.
type Consumer struct {
	Key string `json:"key"`
	// Hits is the cost requested (allowed or not) since the identity's state
	// was created; it expires with the state.
	Hits int64 `json:"hits"`
	// TTL is how long the state lives without further requests.
	TTL time.Duration `json:"ttl_seconds"`
}

// DeniedConsumer is one identity in a TopDenied listing.
type DeniedConsumer struct {
	Key string `json:"key"`
	// Denied is the requests the limits denied it, counted by this
	// process; it exceeds the true count by at most Overcount.
	Denied    int64 `json:"denied"`
	Overcount int64 `json:"overcount"`
}

// LimitResult is the outcome of one limit in a check.
type LimitResult struct {
	Limit   Limit `json:"-"`
	Allowed bool  `json:"allowed"`
	// Remaining is what may still be spent after this check.
	Remaining int64 `json:"remaining"`
	// ResetAfter is when the limit is back to full capacity.
	ResetAfter time.Duration `json:"reset_after_seconds"`
	// RetryAfter is, for a denial, how long until the same request would be
	// allowed; -1 means never (the cost exceeds the capacity). Zero when
	// allowed.
	RetryAfter time.Duration `json:"retry_after_seconds"`
	// Blocked reports that a penalty block is in force.
	Blocked bool `json:"blocked"`
}

// KeyInfo is what a store holds for one identity, independent of limits.
type KeyInfo struct {
	Key string `json:"key"`
	// StorageKey is the store's own name for key's state, whether or not
	// it exists, for a person to look at it with the store's tools: for
	// Redis the identity's key ("rl:{user:42}"; the window keys of its
	// single-limit fixed windows and GCRAs, "rl:{user:42}:<id>", share its
	// hash tag, so `redis-cli --scan --pattern 'rl:{user:42}*'` lists them
	// all); empty for a store without a key
	// space of its own (memory).
	StorageKey string `json:"storage_key,omitempty"`
	Exists     bool   `json:"exists"`
	// Hits is the cost requested since the state was created.
	Hits int64 `json:"hits"`
	// TTL is how long the state lives without further requests.
	TTL time.Duration `json:"ttl_seconds"`
	// BlockedFor is the longest penalty block in force, zero if none.
	BlockedFor time.Duration `json:"blocked_for_seconds"`
}
