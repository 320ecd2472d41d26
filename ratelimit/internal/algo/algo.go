// Package algo is the arithmetic of the rate-limit algorithms, shared by the
// memory store and mirrored line for line by the Redis Lua scripts in
// ratelimit/redisstore/lua. Both must compute the same results from the same
// state: times are float64 microseconds, the same operations in the same
// order, rounded up to whole microseconds at the end.
package algo

import "math"

// Algorithm numbers; they match ratelimit.Algorithm and the Lua scripts.
const (
	FixedWindow   = 0
	SlidingWindow = 1
	TokenBucket   = 2
	GCRA          = 3
	SlidingLog    = 4
)

// Params are one limit's parameters in the units of the algorithms.
type Params struct {
	Algorithm uint8
	Rate      float64 // requests per Period
	Period    float64 // microseconds
	Capacity  float64 // burst; Rate when the limit has none
	Block     float64 // penalty block, microseconds; 0 for none
}

// State is one limit's stored state. The zero value is "no state yet".
// A, B and C mean, per algorithm:
//
//	fixed window    A count          B window start
//	sliding window  A previous count B current count  C current window start
//	token bucket    A tokens         B last refill
//	GCRA            A theoretical arrival time
//
// X is the end of a penalty block. Log holds, for the sliding log, the
// times of the requests in the window, oldest first (one per cost unit; at
// most Rate); it is never modified in place, only replaced.
type State struct {
	A, B, C, X float64
	Log        []float64
}

// Outcome is the result of evaluating one limit.
type Outcome struct {
	Allowed    bool
	Blocked    bool
	Remaining  int64
	ResetAfter float64 // microseconds, whole
	RetryAfter float64 // microseconds, whole; -1 means never
	// Next is the state to store if the whole check is allowed; BlockNext
	// is the state to store if it is denied (only X may change).
	Next State
	// TTL is how long Next (or a block) must be kept, microseconds.
	TTL float64
}

// Eval evaluates one limit at now for cost. It does not decide the check:
// the caller stores Next only if every limit allowed.
func Eval(p Params, s State, now, cost float64) Outcome {
	var o Outcome
	EvalInto(&o, &p, s, now, cost)
	return o
}

// EvalInto is Eval writing into o (no outcome copied through the calls).
func EvalInto(o *Outcome, p *Params, s State, now, cost float64) {
	if s.X > now {
		wait := math.Ceil(s.X - now)
		*o = Outcome{Blocked: true, ResetAfter: wait, RetryAfter: wait, Next: s, TTL: wait}
		return
	}
	*o = Outcome{}
	switch p.Algorithm {
	case FixedWindow:
		fixedWindow(o, p, s, now, cost)
	case SlidingWindow:
		slidingWindow(o, p, s, now, cost)
	case TokenBucket:
		tokenBucket(o, p, s, now, cost)
	case SlidingLog:
		slidingLog(o, p, s, now, cost)
	default:
		gcra(o, p, s, now, cost)
	}
	o.Next.X = 0
	if !o.Allowed && cost > 0 && p.Block > 0 {
		o.Blocked = true
		o.Next = s
		o.Next.X = now + p.Block
		if o.RetryAfter >= 0 {
			o.RetryAfter = math.Max(o.RetryAfter, p.Block)
		}
		o.ResetAfter = math.Max(o.ResetAfter, p.Block)
		o.TTL = math.Max(o.TTL, p.Block)
	}
	o.ResetAfter = math.Ceil(o.ResetAfter)
	if o.RetryAfter > 0 {
		o.RetryAfter = math.Ceil(o.RetryAfter)
	}
}

func fixedWindow(o *Outcome, p *Params, s State, now, cost float64) {
	count, start := s.A, s.B
	if start == 0 || now >= start+p.Period {
		count, start = 0, now
	}
	o.Allowed = count+cost <= p.Rate
	if o.Allowed {
		count += cost
	}
	o.Remaining = int64(math.Max(0, p.Rate-count))
	o.ResetAfter = start + p.Period - now
	if !o.Allowed {
		o.RetryAfter = o.ResetAfter
		if cost > p.Rate {
			o.RetryAfter = -1
		}
	}
	o.Next = State{A: count, B: start}
	o.TTL = o.ResetAfter
}

func slidingWindow(o *Outcome, p *Params, s State, now, cost float64) {
	ws := math.Floor(now/p.Period) * p.Period
	var prev, cur float64
	switch s.C {
	case ws:
		prev, cur = s.A, s.B
	case ws - p.Period:
		prev = s.B
	}
	elapsed := now - ws
	weight := (p.Period - elapsed) / p.Period
	o.Allowed = prev*weight+cur+cost <= p.Rate
	if o.Allowed {
		cur += cost
	}
	o.Remaining = int64(math.Max(0, math.Floor(p.Rate-(prev*weight+cur))))
	switch {
	case cur > 0:
		o.ResetAfter = p.Period - elapsed + p.Period
	case prev > 0:
		o.ResetAfter = p.Period - elapsed
	}
	if !o.Allowed {
		switch {
		case cost > p.Rate:
			o.RetryAfter = -1
		case cur+cost <= p.Rate:
			// The previous window's weight must fall far enough.
			o.RetryAfter = math.Max(1, p.Period-elapsed-(p.Rate-cur-cost)*p.Period/prev)
		default:
			// Wait for the next window, then for the current count's weight to fall.
			o.RetryAfter = p.Period - elapsed + math.Max(0, p.Period-(p.Rate-cost)*p.Period/cur)
		}
	}
	o.Next = State{A: prev, B: cur, C: ws}
	o.TTL = ws + 2*p.Period - now
}

func tokenBucket(o *Outcome, p *Params, s State, now, cost float64) {
	tokens := p.Capacity
	if s.B != 0 {
		tokens = math.Min(p.Capacity, s.A+math.Max(0, now-s.B)*p.Rate/p.Period)
	}
	o.Allowed = tokens >= cost
	if o.Allowed {
		tokens -= cost
	}
	// Kept in 1/1024ths of a token, rounded down: short exact numbers in
	// Redis, never more than was earned.
	tokens = math.Floor(tokens*1024) / 1024
	o.Remaining = int64(math.Floor(tokens))
	o.ResetAfter = (p.Capacity - tokens) * p.Period / p.Rate
	if !o.Allowed {
		o.RetryAfter = (cost - tokens) * p.Period / p.Rate
		if cost > p.Capacity {
			o.RetryAfter = -1
		}
	}
	o.Next = State{A: tokens, B: now}
	o.TTL = o.ResetAfter
}

// slidingLog allows cost if the requests of the last Period plus cost fit
// in Rate; the log keeps the times of the requests in the window.
func slidingLog(o *Outcome, p *Params, s State, now, cost float64) {
	first := 0
	for first < len(s.Log) && s.Log[first]+p.Period <= now {
		first++
	}
	live := s.Log[first:]
	n := float64(len(live))
	o.Allowed = n+cost <= p.Rate
	next := live
	if o.Allowed && cost > 0 {
		next = make([]float64, len(live), len(live)+int(cost))
		copy(next, live)
		for i := 0; i < int(cost); i++ {
			next = append(next, now)
		}
	}
	o.Remaining = int64(math.Max(0, p.Rate-float64(len(next))))
	if len(next) > 0 {
		o.ResetAfter = next[len(next)-1] + p.Period - now
	}
	if !o.Allowed {
		if cost > p.Rate {
			o.RetryAfter = -1
		} else {
			// The oldest n+cost-Rate requests must leave the window.
			k := int(n + cost - p.Rate)
			o.RetryAfter = live[k-1] + p.Period - now
		}
	}
	o.Next = State{Log: next}
	o.TTL = o.ResetAfter
}

func gcra(o *Outcome, p *Params, s State, now, cost float64) {
	interval := p.Period / p.Rate
	tolerance := interval * p.Capacity
	tat := math.Max(s.A, now)
	// Whole microseconds, rounded up: short numbers in Redis, never early.
	newTat := math.Ceil(tat + cost*interval)
	diff := now - (newTat - tolerance)
	if diff < 0 {
		o.RetryAfter = -diff
		if cost*interval > tolerance {
			o.RetryAfter = -1
		}
		o.ResetAfter = tat - now
		o.Remaining = int64(math.Max(0, math.Floor((now-(tat-tolerance))/interval)))
		o.Next = State{A: tat}
	} else {
		o.Allowed = true
		o.Remaining = int64(math.Floor(diff / interval))
		o.ResetAfter = newTat - now
		o.Next = State{A: newTat}
	}
	o.TTL = o.ResetAfter
}

// LimitID identifies one limit's state within an identity: a hash of the
// name and every parameter, so that two limits never share state and a
// changed limit starts afresh.
func LimitID(name string, p Params) uint32 {
	// FNV-1a style mixing, a word at a time for the numbers. The result
	// names Redis hash fields, so it must never change between versions
	// that share a Redis.
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * prime
	}
	for _, f := range [...]float64{float64(p.Algorithm), p.Rate, p.Period, p.Capacity, p.Block} {
		h = (h ^ math.Float64bits(f)) * prime
		h ^= h >> 29
	}
	return uint32(h) ^ uint32(h>>32)
}
