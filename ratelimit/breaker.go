package ratelimit

// A circuit breaker decides for other identities only on a real failure of
// its node: it opens after Options.BreakerFailures consecutive errors (a
// refused connection, a CLUSTERDOWN), or after a node has answered nothing
// but timeouts for a whole stall window. A merely slow answer (a timeout
// between successes) is decided for its own check only and never opens it.
// An open breaker lets one probe through after Options.Backoff; its success
// closes the breaker, its failure opens it again.

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Partitioned is implemented by stores whose keys live on several nodes
// (a Redis Cluster): the limiter keeps one circuit breaker per node, so a
// dead master decides only for the identities it holds.
type Partitioned interface {
	// Node names the node that holds key; "" when unknown. It may learn the
	// layout within ctx (a cluster client's first call) but never waits longer.
	Node(ctx context.Context, key string) string
}

// ErrCircuitOpen is wrapped in Result.Err when an open circuit breaker,
// not the store, made the failure-policy decision.
var ErrCircuitOpen = errors.New("circuit open: the store node failed repeatedly")

// DefaultBreakerFailures is the number of consecutive store errors that opens
// a node's breaker when Options.BreakerFailures is zero.
const DefaultBreakerFailures = 5

// stallWindow is how long a node must answer nothing but timeouts before its
// breaker opens (a hung server, not a slow one).
const stallWindow = time.Second

type breakerState int32

const (
	breakerClosed breakerState = iota
	breakerOpen
	breakerHalfOpen
)

// outcome is what one store call tells its node's breaker.
type outcome uint8

const (
	outcomeSuccess  outcome = iota
	outcomeFailure          // the store answered with an error or refused the connection
	outcomeTimeout          // the budget ran out before the answer
	outcomeCanceled         // the caller gave up: says nothing about the store
)

// classify tells a store error apart: parent is the caller's context (its
// end is a cancellation, not a store failure), budget the call's (its end
// is a timeout, whatever error the client made of it: a deadline, an i/o
// timeout on the socket), err the store's error.
func classify(parent, budget context.Context, err error) outcome {
	if err == nil {
		return outcomeSuccess // before ne exists: it would escape on every call
	}
	var ne net.Error
	switch {
	case parent.Err() != nil:
		return outcomeCanceled
	case budget.Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return outcomeTimeout
	case errors.Is(err, context.Canceled):
		return outcomeCanceled
	}
	return outcomeFailure
}

// breaker is one node's circuit breaker. The closed, healthy path costs two
// atomic loads per call.
type breaker struct {
	state atomic.Int32 // breakerState
	// dirty is set while failures or timeouts are counted, so a success
	// takes the lock only when there is something to reset.
	dirty atomic.Bool

	mu           sync.Mutex
	failures     int       // consecutive errors
	timeouts     int       // consecutive timeouts since the last success
	stallStart   time.Time // first of those timeouts
	openUntil    time.Time
	probeRunning bool
}

// breakers holds one breaker per node name.
type breakers struct {
	threshold int
	openFor   time.Duration
	nodes     sync.Map // string → *breaker
	onChange  func(node string, open bool, err error)
}

func (bs *breakers) of(node string) *breaker {
	if b, ok := bs.nodes.Load(node); ok {
		return b.(*breaker)
	}
	b, _ := bs.nodes.LoadOrStore(node, &breaker{})
	return b.(*breaker)
}

// admit reports whether a call may go to the node; probe is true for the
// one call that tests an open breaker.
func (b *breaker) admit(now time.Time) (ok, probe bool) {
	if breakerState(b.state.Load()) == breakerClosed {
		return true, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch breakerState(b.state.Load()) {
	case breakerClosed:
		return true, false
	case breakerOpen:
		if now.Before(b.openUntil) {
			return false, false
		}
		b.state.Store(int32(breakerHalfOpen))
		fallthrough
	default: // half-open: one probe at a time
		if b.probeRunning {
			return false, false
		}
		b.probeRunning = true
		return true, true
	}
}

// record feeds the outcome of an admitted call back.
func (b *breaker) record(bs *breakers, node string, now time.Time, probe bool, o outcome, err error) {
	if o == outcomeSuccess && !probe && !b.dirty.Load() {
		return
	}
	b.mu.Lock()
	var changed, open bool
	if probe {
		b.probeRunning = false
	}
	switch o {
	case outcomeCanceled:
		// The caller left; the next call probes instead.
	case outcomeSuccess:
		b.failures, b.timeouts = 0, 0
		b.dirty.Store(false)
		if breakerState(b.state.Load()) != breakerClosed {
			b.state.Store(int32(breakerClosed))
			changed = true
		}
	case outcomeFailure, outcomeTimeout:
		b.dirty.Store(true)
		if o == outcomeFailure {
			b.failures++
		} else {
			if b.timeouts == 0 {
				b.stallStart = now
			}
			b.timeouts++
		}
		trip := probe ||
			b.failures >= bs.threshold ||
			(b.timeouts >= bs.threshold && now.Sub(b.stallStart) >= stallWindow)
		if trip && breakerState(b.state.Load()) != breakerOpen {
			changed = breakerState(b.state.Load()) == breakerClosed
			b.state.Store(int32(breakerOpen))
			b.openUntil = now.Add(bs.openFor)
			open = true
		} else if trip {
			b.openUntil = now.Add(bs.openFor)
		}
	}
	b.mu.Unlock()
	if changed && bs.onChange != nil {
		bs.onChange(node, open, err)
	}
}

// BreakerState is one node's breaker as reported by Limiter.Breakers.
type BreakerState struct {
	Node string `json:"node"`
	// State is "closed", "open" or "half-open".
	State string `json:"state"`
	// ConsecutiveFailures and ConsecutiveTimeouts are the counts since the
	// last success.
	ConsecutiveFailures int `json:"consecutive_failures"`
	ConsecutiveTimeouts int `json:"consecutive_timeouts"`
}

func (bs *breakers) snapshot() []BreakerState {
	var out []BreakerState
	bs.nodes.Range(func(k, v any) bool {
		b := v.(*breaker)
		b.mu.Lock()
		st := BreakerState{Node: k.(string), ConsecutiveFailures: b.failures, ConsecutiveTimeouts: b.timeouts}
		b.mu.Unlock()
		switch breakerState(b.state.Load()) {
		case breakerOpen:
			st.State = "open"
		case breakerHalfOpen:
			st.State = "half-open"
		default:
			st.State = "closed"
		}
		out = append(out, st)
		return true
	})
	return out
}
