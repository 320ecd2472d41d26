package ratelimit

// A budget context ends at its deadline like context.WithTimeout's, but a
// check under a parent that can never end (context.Background, a worker's
// root context) gets it without a timer of its own: the checks whose
// deadlines fall in the same millisecond share one channel, closed by one
// timer. A timer per check (added to the runtime's heap, stopped at once)
// cost ~10 % of the throughput of a lone caller on a fast store. Deadlines
// are rounded up to the millisecond: a budget is at most 1 ms longer.
// A parent that can end (an HTTP request's) gets context.WithDeadline, so
// its cancellation reaches the store call.

import (
	"context"
	"sync"
	"time"
)

// sharedDeadlines hands out budget contexts; the zero value is ready.
type sharedDeadlines struct {
	mu    sync.Mutex
	slots map[int64]chan struct{} // by deadline, Unix ms
}

func noCancel() {}

// within is ctx bounded by the budget from now, and the function that
// releases it.
func (d *sharedDeadlines) within(ctx context.Context, now time.Time, budget time.Duration) (context.Context, context.CancelFunc) {
	deadline := now.Add(budget)
	if ctx.Done() != nil {
		return context.WithDeadline(ctx, deadline)
	}
	ms := (deadline.UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	d.mu.Lock()
	done, ok := d.slots[ms]
	if !ok {
		if d.slots == nil {
			d.slots = make(map[int64]chan struct{})
		}
		done = make(chan struct{})
		d.slots[ms] = done
		time.AfterFunc(time.Until(time.UnixMilli(ms)), func() {
			d.mu.Lock()
			delete(d.slots, ms)
			d.mu.Unlock()
			close(done)
		})
	}
	d.mu.Unlock()
	return &budgetCtx{Context: ctx, deadline: time.UnixMilli(ms), done: done}, noCancel
}

// budgetCtx is a parent that never ends, bounded by a shared deadline.
type budgetCtx struct {
	context.Context // the parent: its values
	deadline        time.Time
	done            chan struct{}
}

func (c *budgetCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *budgetCtx) Done() <-chan struct{}       { return c.done }
func (c *budgetCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
