// Package ratelimit is devkit's multi-tenant rate limiter: one or several
// limits checked for one request in one round trip, all-or-nothing, against
// Redis (single node, sentinel or cluster) or an in-process store.
//
// A Limiter checks a Request — a key (who), one or more Limit values (how
// much), and a cost — and returns a Result: allowed or not, the binding
// limit, remaining, reset after, retry after, and whether a penalty block is
// in force, with the same per limit. If any limit denies, none is consumed.
//
//	store := memory.New(memory.Options{})            // or redisstore.New(client, ...)
//	limiter := ratelimit.New(store, ratelimit.Options{Fail: ratelimit.FailOpen})
//	res, err := limiter.Allow(ctx, "user:42", ratelimit.PerMinute(100))
//
// # Algorithms
//
//   - FixedWindow: Rate per Period from the first request; cheapest. Pair it
//     with Block for brute-force protection (login: 5 per 15m, block 1h).
//   - SlidingWindow: weighted previous + current window, two counters of
//     state. At most Rate per aligned window and a smooth refill, but not an
//     exact rolling window: about 2×Rate can pass within one rolling Period
//     when the previous window's requests came at its end.
//   - SlidingLog: the time of every request of the window; exact (never more
//     than Rate in any rolling Period), state bounded by Rate (at most
//     MaxSlidingLogRate). For low limits that must hold: logins, resets.
//   - TokenBucket: Burst capacity refilled at Rate per Period. For write APIs
//     used in batches: quiet clients save up.
//   - GCRA: requests spaced Period/Rate apart with a tolerance of Burst; one
//     timestamp of state. For smooth per-client pacing.
//
// Every algorithm honours Block, and every store implements every algorithm
// with the same results (one contract suite runs against all of them).
//
// # Failure policy
//
// A store that answers decides every check: a check is decided by the
// failure policy when it errs, when its store node has answered nothing for
// Options.Budget (1 s by default, or Request.Budget), or when it has waited
// Options.MaxWait (3 s by default) however the node answers others. It is
// decided by the failure policy — FailOpen lets the request through, FailClosed refuses it
// — per limiter or per Request, for that check only. A circuit breaker per
// store node (per master of a Redis Cluster) opens only on real failures
// (Options.BreakerFailures consecutive errors, or a second of nothing but
// timeouts), so a slow answer never decides for other identities and a dead
// master only for the identities it holds; an open breaker lets one probe
// through after Options.Backoff. Result.Source says who decided; store
// errors, breaker decisions and callers that went away are counted apart in
// Stats, and failure-policy decisions are logged at most once a second.
//
// The Redis store batches concurrent checks by default (redisstore.Options
// Pipeline): below DefaultPipeline batches in flight a check is sent at once,
// so batching adds no latency at low load.
//
// # Errors
//
// Check returns an error only for an invalid request (ErrNoLimits,
// ErrTooManyLimits, a bad Limit); a store failure is decided by the failure
// policy and carried in Result.Err, wrapping ErrStoreUnavailable (and
// ErrCircuitOpen when a breaker decided). A caller that handles a denial as
// an error takes Result.Denial, which wraps ErrLimited: errors.Is(err,
// ErrLimited) tells a refusal from a failure.
//
// # Stores and their extension points
//
// A Store is the five methods of store.go. A store may also implement, and
// the Limiter looks for them once, in New, never per check:
//
//   - InProcess (CheckAt): the store never blocks on I/O; the limiter arms
//     no deadline and no circuit breaker for it and hands it the time it
//     already read. The memory store is one.
//   - Partitioned (Node): the store spreads keys over nodes; the limiter
//     keeps one circuit breaker per node. The Redis store in cluster mode.
//   - ResetFeed (FollowResets): resets reach every process sharing the
//     store, so FollowResets keeps each blocked cache true. The Redis store.
//
// # Time
//
// Every component takes its clock the same way, a Clock in its Options.Now:
// nil is the real clock; set, it wins; a Limiter hands its time to an
// in-process store. See Clock.
//
// # Counters and JSON
//
// Stats counts decisions per rule and per binding limit as plain numbers
// (Stats.Snapshot); the package imports no metrics system, and the servers
// turn the counters into Prometheus metrics (ratelimit/middleware's
// Collector). The JSON of every type here follows devkit's one rule,
// snake_case names and durations as float seconds in _seconds fields (-1 for
// never), so the admin API and the CLI encode them as they are.
//
// # Packages
//
//   - ratelimit/memory: the in-process store (sharded, bounded).
//   - ratelimit/redisstore: the Redis store (Lua, server time, hash-tagged keys).
//   - ratelimit/policy: YAML policies (rules, plans × methods, identity).
//   - ratelimit/middleware: the net/http middleware, headers, admin API and
//     the Prometheus collector.
//   - ratelimit/gateway: the rate-limiting reverse proxy (a server).
package ratelimit
