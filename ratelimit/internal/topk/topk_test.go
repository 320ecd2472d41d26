package topk

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Under a flood of distinct keys far beyond its capacity, the sketch still
// holds every heavy key, with a count no lower than the truth and no higher
// than the truth plus its Error.
func TestSketch_HeavyKeysSurviveAFloodOfDistinctKeys(t *testing.T) {
	s := New(64)
	truth := map[string]int64{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200_000 {
		key := fmt.Sprintf("noise-%d", i)
		if r := rng.IntN(10); r < 3 {
			key = fmt.Sprintf("heavy-%d", r) // 30 % of the stream over three keys
		}
		truth[key]++
		s.Add(key, 1)
	}
	top := s.Top(3)
	if len(top) != 3 {
		t.Fatalf("top 3: %v", top)
	}
	for _, e := range top {
		want := truth[e.Key]
		if e.Key[:5] != "heavy" || e.Count < want || e.Count-e.Error > want {
			t.Errorf("%+v: true count %d", e, want)
		}
	}
}

// Counts are exact while the keys fit, and Top orders by count then key.
func TestSketch_ExactWithinCapacityAndOrdered(t *testing.T) {
	s := New(32)
	for i, n := range []int64{5, 9, 1, 9} {
		s.Add(fmt.Sprintf("k%d", i), n)
	}
	got := fmt.Sprint(s.Top(3))
	if want := "[{k1 9 0} {k3 9 0} {k0 5 0}]"; got != want {
		t.Fatalf("top 3 = %s, want %s", got, want)
	}
}
