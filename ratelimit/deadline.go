package ratelimit

// A store call ends at its budget only when its store node has answered
// nothing for a whole budget (the node stalled): while the node answers
// other calls, the call waits for its own answer, up to its longest wait.
// So a busy machine that makes every answer late (the gateway's goroutines
// and the store's process waiting for a CPU) decides by the store, and a
// store that stops answering is decided by the failure policy one budget
// after its last answer, or at the longest wait if it answers too slowly.
//
// Calls under a parent that can never end (context.Background, a worker's
// root context) get this without a timer of their own: the calls whose
// budgets end in the same millisecond, on one node, with one longest wait,
// share one channel and one timer (a timer per call cost ~10 % of the
// throughput of a lone caller on a fast store). Deadlines are rounded up to
// the millisecond. A parent that can end (an HTTP request's, a gRPC call's)
// gets a context.WithCancelCause child, so its cancellation reaches the store
// call, and the shared timer cancels it when the node stalls or the longest
// wait is over; no timer of its own either (context.WithDeadline's timer and
// second context were 6 % of serve's CPU under 50 gRPC clients). Deadline
// reports the earlier of the parent's deadline and the longest wait.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// errStalled is the cause of a call ended because its node answered
// nothing for a whole budget.
var errStalled = errors.New("the store node answered nothing for the whole budget")

// nodeAnswers is when a store node last answered a call.
type nodeAnswers struct {
	last atomic.Int64 // unix nanoseconds
}

// answered records an answer at now; it writes at most once a millisecond,
// so callers on many cores do not fight over the cache line.
func (a *nodeAnswers) answered(now time.Time) {
	n := now.UnixNano()
	if n-a.last.Load() >= int64(time.Millisecond) {
		a.last.Store(n)
	}
}

// slotKey groups the calls that end together: same node, same budget end
// and same longest wait (Unix ms).
type slotKey struct {
	node       *nodeAnswers
	at, capped int64
}

// deadlineSlot is the shared end of the calls of one slotKey.
type deadlineSlot struct {
	key    slotKey
	budget time.Duration
	done   chan struct{}
	// cancels end the calls whose parent can end; live counts the calls
	// not yet released.
	cancels []context.CancelCauseFunc
	live    int
	ended   bool
}

// sharedDeadlines hands out the contexts of store calls; the zero value is
// ready.
type sharedDeadlines struct {
	mu    sync.Mutex
	slots map[slotKey]*deadlineSlot
}

// within is ctx bounded by budget from now while node answers nothing, and
// by maxWait from now in any case (maxWait ≤ budget is a plain deadline at
// the budget). The caller releases it with release.
func (d *sharedDeadlines) within(ctx context.Context, now time.Time, budget, maxWait time.Duration, node *nodeAnswers) *callCtx {
	maxWait = max(maxWait, budget)
	at := ceilMilli(now.Add(budget))
	capped := ceilMilli(now.Add(maxWait))
	if node == nil {
		node = &nodeAnswers{} // no answers known: the budget is a plain deadline
	}
	key := slotKey{node: node, at: at, capped: capped}
	c := &callCtx{deadline: time.UnixMilli(capped)}
	var cancel context.CancelCauseFunc
	if ctx.Done() != nil {
		cctx, ccancel := context.WithCancelCause(ctx)
		c.Context, c.derived, cancel = cctx, true, ccancel
		c.release = func() { ccancel(context.Canceled) }
	} else {
		c.Context = ctx
	}
	d.mu.Lock()
	s, ok := d.slots[key]
	if !ok {
		if d.slots == nil {
			d.slots = make(map[slotKey]*deadlineSlot)
		}
		s = &deadlineSlot{key: key, budget: budget, done: make(chan struct{})}
		d.slots[key] = s
		time.AfterFunc(time.Until(time.UnixMilli(at)), func() { d.fire(s) })
	}
	s.live++
	if cancel != nil {
		s.cancels = append(s.cancels, cancel)
	}
	d.mu.Unlock()
	c.slot = s
	return c
}

func ceilMilli(t time.Time) int64 {
	return (t.UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
}

// fire ends the slot's calls if their node stalled or their longest wait is
// over; otherwise it looks again one budget after the node's last answer.
func (d *sharedDeadlines) fire(s *deadlineSlot) {
	now := time.Now()
	d.mu.Lock()
	if d.slots[s.key] == s {
		delete(d.slots, s.key) // later calls make slots of their own
	}
	if s.live == 0 {
		d.mu.Unlock()
		return
	}
	last := s.key.node.last.Load()
	if now.UnixMilli() >= s.key.capped || now.UnixNano()-last >= int64(s.budget) {
		s.ended = true
		cancels := s.cancels
		s.cancels = nil
		d.mu.Unlock()
		close(s.done)
		for _, c := range cancels {
			c(errStalled)
		}
		return
	}
	d.mu.Unlock()
	next := min(last+int64(s.budget), s.key.capped*int64(time.Millisecond))
	time.AfterFunc(time.Until(time.Unix(0, next)), func() { d.fire(s) })
}

// callCtx is the context of one store call.
type callCtx struct {
	context.Context // the parent (its values), or the derived context when derived
	derived         bool
	deadline        time.Time
	slot            *deadlineSlot
	release         func()
}

func (c *callCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && c.derived && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *callCtx) Done() <-chan struct{} {
	if c.derived {
		return c.Context.Done()
	}
	return c.slot.done
}

func (c *callCtx) Err() error {
	if c.derived {
		err := c.Context.Err()
		if err != nil && context.Cause(c.Context) == errStalled { //nolint:errorlint // the sentinel itself is the cause
			return context.DeadlineExceeded // ended by the shared timer, as a deadline would
		}
		return err
	}
	select {
	case <-c.slot.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// end releases the call: its slot no longer waits for it.
func (d *sharedDeadlines) end(c *callCtx) {
	if c.release != nil {
		c.release()
	}
	d.mu.Lock()
	c.slot.live--
	d.mu.Unlock()
}
