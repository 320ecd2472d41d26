package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

// A budget context under a parent that never ends keeps the parent's
// values, reports its deadline (rounded up to the millisecond), and ends by
// itself at that deadline: Err is nil before and DeadlineExceeded after,
// as context.WithTimeout's. Checks in the same millisecond share a timer.
func TestBudgetContext_EndsAtItsDeadlineWithoutATimerPerCheck(t *testing.T) {
	var d sharedDeadlines
	parent := context.WithValue(context.Background(), ctxKey{}, "v")
	start := time.Now()
	ctx, cancel := d.within(parent, start, 30*time.Millisecond)
	defer cancel()
	if ctx.Value(ctxKey{}) != "v" {
		t.Fatal("the parent's value is lost")
	}
	dl, ok := ctx.Deadline()
	if !ok || dl.Before(start.Add(30*time.Millisecond)) || dl.After(start.Add(31*time.Millisecond)) {
		t.Fatalf("deadline %v after start, want 30ms (+ < 1ms)", dl.Sub(start))
	}
	if ctx.Err() != nil {
		t.Fatalf("Err before the deadline: %v", ctx.Err())
	}
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Done never closed")
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Fatalf("Done closed after %v, before the deadline", took)
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline: %v", ctx.Err())
	}
	// A thousand checks within a few milliseconds: a few shared channels.
	now := time.Now()
	for i := 0; i < 1000; i++ {
		c, cancel := d.within(context.Background(), now, time.Second)
		_ = c
		cancel()
	}
	d.mu.Lock()
	n := len(d.slots)
	d.mu.Unlock()
	if n > 2 {
		t.Fatalf("%d deadline slots for 1000 checks with one deadline", n)
	}
}

// A parent that can end (an HTTP request's context) still ends the store
// call when it is canceled.
func TestBudgetContext_ParentCancellationReachesTheStoreCall(t *testing.T) {
	var d sharedDeadlines
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := d.within(parent, time.Now(), time.Hour)
	defer cancel()
	cancelParent()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("the parent's cancellation did not end the budget context")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err: %v, want context.Canceled", ctx.Err())
	}
}
