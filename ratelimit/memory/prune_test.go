package memory

import (
	"context"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
)

// A policy edited 20 times (a new limit each time, a window apart) leaves
// one limit's state in the identity's entry, not 20.
func TestStaleLimitsOfAnEditedPolicyAreDropped(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Options{Now: func() time.Time { return now }})
	out := make([]ratelimit.LimitResult, 2)
	daily := ratelimit.Limit{Name: "daily", Rate: 10000, Period: 24 * time.Hour}
	for edit := 0; edit < 20; edit++ {
		lim := ratelimit.Limit{Name: "api", Rate: int64(100 + edit), Period: time.Minute}
		if err := s.Check(context.Background(), ratelimit.CheckRequest{Key: "k", Limits: []ratelimit.Limit{daily, lim}, Cost: 1}, out); err != nil {
			t.Fatal(err)
		}
		if out[0].Remaining != int64(10000-edit-1) {
			t.Fatalf("edit %d: the daily limit lost its state: %+v", edit, out[0])
		}
		now = now.Add(61 * time.Second)
	}
	e := s.shard("k").entries["k"]
	if e == nil || len(e.limits) != 2 {
		t.Fatalf("entry %+v: want the last limit only", e)
	}
}
