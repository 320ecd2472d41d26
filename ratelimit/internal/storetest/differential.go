package storetest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
)

// palette is the limits random sequences draw from: every algorithm, odd
// rates and periods (fractional intervals and refills), blocks.
var palette = []ratelimit.Limit{
	{Name: "fw", Algorithm: ratelimit.FixedWindow, Rate: 5, Period: 7 * time.Second},
	{Name: "fwb", Algorithm: ratelimit.FixedWindow, Rate: 3, Period: 2 * time.Second, Block: 5 * time.Second},
	{Name: "sw", Algorithm: ratelimit.SlidingWindow, Rate: 7, Period: 3 * time.Second},
	{Name: "swb", Algorithm: ratelimit.SlidingWindow, Rate: 4, Period: 1500 * time.Millisecond, Block: 2 * time.Second},
	{Name: "tb", Algorithm: ratelimit.TokenBucket, Rate: 3, Period: 1100 * time.Millisecond, Burst: 6},
	{Name: "tbb", Algorithm: ratelimit.TokenBucket, Rate: 1, Period: 700 * time.Millisecond, Burst: 2, Block: 3 * time.Second},
	{Name: "gc", Algorithm: ratelimit.GCRA, Rate: 7, Period: 3 * time.Second, Burst: 3},
	{Name: "gcb", Algorithm: ratelimit.GCRA, Rate: 2, Period: time.Second, Block: 1300 * time.Millisecond},
	{Name: "sl", Algorithm: ratelimit.SlidingLog, Rate: 5, Period: 2300 * time.Millisecond},
	{Name: "slb", Algorithm: ratelimit.SlidingLog, Rate: 3, Period: 1700 * time.Millisecond, Block: 2 * time.Second},
}

// RunDifferential replays seeded random sequences of checks (several keys,
// one to three limits, costs 0 to 4, irregular time steps) against a store
// from newStore and against the memory store, and requires identical results
// at every step: the stores must not drift apart, not even in rounding.
func RunDifferential(t *testing.T, newStore Factory) {
	for seed := uint64(1); seed <= 4; seed++ {
		clock := NewClock()
		// Start off the whole hour so sliding windows begin mid-window.
		clock.Advance(time.Duration(seed) * 123457 * time.Microsecond)
		reference := memory.New(memory.Options{Now: clock.Now})
		candidate := newStore(t, clock)
		rng := rand.New(rand.NewPCG(seed, 42))
		keys := []string{"k1", "k2", "k3"}
		for step := 0; step < 300; step++ {
			switch rng.IntN(10) {
			case 0:
				clock.Advance(time.Duration(rng.IntN(8000)) * time.Millisecond)
			case 1, 2, 3:
				clock.Advance(time.Duration(rng.IntN(400000)) * time.Microsecond)
			}
			limits := make([]ratelimit.Limit, 1+rng.IntN(3))
			for i := range limits {
				limits[i] = palette[rng.IntN(len(palette))]
			}
			limits = dedupe(limits)
			req := ratelimit.CheckRequest{Key: keys[rng.IntN(len(keys))], Limits: limits, Cost: int64(rng.IntN(5))}
			want := make([]ratelimit.LimitResult, len(limits))
			got := make([]ratelimit.LimitResult, len(limits))
			if err := reference.Check(context.Background(), req, want); err != nil {
				t.Fatal(err)
			}
			if err := candidate.Check(context.Background(), req, got); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("seed %d step %d key %s cost %d limit %s:\n got %+v\nwant %+v (memory store)",
						seed, step, req.Key, req.Cost, limits[i].Name, got[i], want[i])
				}
			}
		}
	}
}

func dedupe(limits []ratelimit.Limit) []ratelimit.Limit {
	out := limits[:0]
	for _, l := range limits {
		dup := false
		for _, o := range out {
			dup = dup || o.Name == l.Name
		}
		if !dup {
			out = append(out, l)
		}
	}
	return out
}
