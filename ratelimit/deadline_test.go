package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

// A call context under a parent that never ends keeps the parent's values,
// reports its longest wait as its deadline (rounded up to the millisecond),
// and, on a node that answers nothing, ends by itself at the budget: Err is
// nil before and DeadlineExceeded after, as context.WithTimeout's. Calls in
// the same millisecond share a timer.
func TestCallContext_OnASilentNodeEndsAtTheBudgetWithoutATimerPerCall(t *testing.T) {
	var d sharedDeadlines
	var node nodeAnswers
	parent := context.WithValue(context.Background(), ctxKey{}, "v")
	start := time.Now()
	ctx := d.within(parent, start, 30*time.Millisecond, time.Second, &node)
	defer d.end(ctx)
	if ctx.Value(ctxKey{}) != "v" {
		t.Fatal("the parent's value is lost")
	}
	dl, ok := ctx.Deadline()
	if !ok || dl.Before(start.Add(time.Second)) || dl.After(start.Add(time.Second+time.Millisecond)) {
		t.Fatalf("deadline %v after start, want the longest wait, 1s (+ < 1ms)", dl.Sub(start))
	}
	if ctx.Err() != nil {
		t.Fatalf("Err before the budget: %v", ctx.Err())
	}
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Done never closed")
	}
	if took := time.Since(start); took < 30*time.Millisecond || took > 500*time.Millisecond {
		t.Fatalf("Done closed after %v, want at the 30ms budget of a silent node", took)
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline: %v", ctx.Err())
	}
	// A thousand calls within a few milliseconds: a few shared channels.
	now := time.Now()
	for i := 0; i < 1000; i++ {
		d.end(d.within(context.Background(), now, time.Second, 2*time.Second, &node))
	}
	d.mu.Lock()
	n := len(d.slots)
	d.mu.Unlock()
	if n > 2 {
		t.Fatalf("%d deadline slots for 1000 calls with one deadline", n)
	}
}

// While its node answers other calls, a call outlives its budget and waits
// for its own answer, up to its longest wait; when the node falls silent,
// the call ends one budget after the node's last answer. With the budget a
// plain deadline on every call, a busy machine's late answers were decided
// by the failure policy.
func TestCallContext_WaitsPastTheBudgetWhileItsNodeAnswers(t *testing.T) {
	for _, parent := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"background parent", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"parent that can end", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
	} {
		t.Run(parent.name, func(t *testing.T) {
			var d sharedDeadlines
			var node nodeAnswers
			pctx, cancel := parent.ctx()
			defer cancel()
			const budget = 40 * time.Millisecond
			start := time.Now()
			node.answered(start)
			ctx := d.within(pctx, start, budget, 5*time.Second, &node)
			defer d.end(ctx)
			// The node answers every 10 ms for 300 ms (7 budgets), then falls silent.
			for time.Since(start) < 300*time.Millisecond {
				select {
				case <-ctx.Done():
					t.Fatalf("ended after %v while the node answered every 10ms (budget %v)", time.Since(start), budget)
				case <-time.After(10 * time.Millisecond):
					node.answered(time.Now())
				}
			}
			silent := time.Now()
			select {
			case <-ctx.Done():
			case <-time.After(3 * time.Second):
				t.Fatal("the call outlived its silent node by 3s")
			}
			if took := time.Since(silent); took > budget+200*time.Millisecond {
				t.Fatalf("ended %v after the node's last answer, want about the %v budget", took, budget)
			}
			if ctx.Err() == nil {
				t.Fatal("Done closed but Err is nil")
			}
		})
	}
}

// A node that keeps answering does not keep a call waiting past its
// longest wait (a store that answers, but too slowly).
// So does a parent that can end (a gRPC call's), whose call context has no
// timer of its own: the shared one ends it, Err is DeadlineExceeded, and
// Deadline is the longest wait, or the parent's when that is earlier.
func TestCallContext_EndsAtTheLongestWaitHoweverTheNodeAnswers(t *testing.T) {
	for _, parent := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"background parent", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"parent that can end", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
		{"parent with a later deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Hour)
		}},
	} {
		t.Run(parent.name, func(t *testing.T) {
			var d sharedDeadlines
			var node nodeAnswers
			pctx, cancel := parent.ctx()
			defer cancel()
			start := time.Now()
			// A budget of 100 ms against answers every 5 ms: a loaded machine's
			// late ticks must not look like a silent node.
			ctx := d.within(pctx, start, 100*time.Millisecond, 300*time.Millisecond, &node)
			defer d.end(ctx)
			if dl, ok := ctx.Deadline(); !ok || dl.Before(start.Add(300*time.Millisecond)) || dl.After(start.Add(301*time.Millisecond)) {
				t.Fatalf("deadline %v after start, want the 300ms longest wait", dl.Sub(start))
			}
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for done := false; !done; {
				select {
				case <-ctx.Done():
					done = true
				case <-tick.C:
					node.answered(time.Now())
					if time.Since(start) > 3*time.Second {
						t.Fatal("the call outlived its longest wait by 3s")
					}
				}
			}
			if took := time.Since(start); took < 300*time.Millisecond || took > 900*time.Millisecond {
				t.Fatalf("ended after %v, want at the 300ms longest wait", took)
			}
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Fatalf("Err %v, want DeadlineExceeded", ctx.Err())
			}
		})
	}
	// A parent's earlier deadline is the call's.
	var d sharedDeadlines
	pctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	want, _ := pctx.Deadline()
	ctx := d.within(pctx, time.Now(), time.Second, 2*time.Second, &nodeAnswers{})
	defer d.end(ctx)
	if dl, _ := ctx.Deadline(); !dl.Equal(want) {
		t.Fatalf("deadline %v, want the parent's %v", dl, want)
	}
}

// A parent that can end (an HTTP request's context) still ends the store
// call when it is canceled.
func TestCallContext_ParentCancellationReachesTheStoreCall(t *testing.T) {
	var d sharedDeadlines
	var node nodeAnswers
	parent, cancelParent := context.WithCancel(context.Background())
	ctx := d.within(parent, time.Now(), time.Hour, time.Hour, &node)
	defer d.end(ctx)
	cancelParent()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("the parent's cancellation did not end the call context")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err: %v, want context.Canceled", ctx.Err())
	}
}
