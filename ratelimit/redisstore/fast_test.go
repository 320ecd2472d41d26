package redisstore

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// TestFastPath_WritesWhatTheGeneralDriverWrites replays seeded random
// single-limit checks twice on a real redis-server: once as the script's fast
// path takes them (one check, one limit) and once through the general driver
// (the same check made the first of a two-check call, the second on a dummy
// key), from the same starting values, and requires the same reply, the same
// stored bytes and the same TTL (to the rounding of PTTL) at every step. The
// starting values include the cases the fast path must hand on: a foreign
// type, a value with a second limit's segment, a segment with an expiry
// suffix, a value of hits alone.
func TestFastPath_WritesWhatTheGeneralDriverWrites(t *testing.T) {
	srv := redistest.StartRedis(t)
	c := srv.Client(t)
	ctx := context.Background()
	src := checkScriptSource()
	limits := []ratelimit.Limit{
		{Name: "fw", Algorithm: ratelimit.FixedWindow, Rate: 5, Period: 7 * time.Second},
		{Name: "fwb", Algorithm: ratelimit.FixedWindow, Rate: 3, Period: 2 * time.Second, Block: 5 * time.Second},
		{Name: "gc", Algorithm: ratelimit.GCRA, Rate: 7, Period: 3 * time.Second, Burst: 3},
		{Name: "gcb", Algorithm: ratelimit.GCRA, Rate: 2, Period: time.Second, Block: 1300 * time.Millisecond},
		{Name: "odd", Algorithm: ratelimit.FixedWindow, Rate: 2, Period: 1500 * time.Millisecond},
		{Name: "tb", Algorithm: ratelimit.TokenBucket, Rate: 3, Period: 1100 * time.Millisecond, Burst: 6},
	}
	other := limitSpec(ratelimit.Limit{Name: "other", Rate: 9, Period: time.Hour}, false)
	otherID := other[:limitIDLen]
	starts := []func(key string){
		func(key string) {},
		func(key string) { c.HSet(ctx, key, "n", 7) },
		func(key string) { c.Set(ctx, key, "3", 10*time.Second) },
		func(key string) { c.Set(ctx, key, "4|"+otherID+"2,1000", 10*time.Second) },
	}
	fast, general := "f:{k}", "g:{k}"
	for n := range len(limits) * (len(starts) + 1) {
		seed := uint64(n)
		rng := rand.New(rand.NewPCG(seed, 7))
		now := time.Now().UnixMicro()
		lim := limits[n%len(limits)]
		spec := limitSpec(lim, false)
		c.Del(ctx, fast, general)
		if i := n / len(limits); i < len(starts) {
			starts[i](fast)
			starts[i](general)
		} else { // a lone segment with an expiry suffix, as a shrunk multi-limit value leaves it
			v := "2|" + spec[:limitIDLen] + "1,1~zzzz"
			c.Set(ctx, fast, v, 10*time.Second)
			c.Set(ctx, general, v, 10*time.Second)
		}
		for step := 0; step < 150; step++ {
			switch rng.IntN(6) {
			case 0:
				now += rng.Int64N(4_000_000)
			case 1, 2:
				now += rng.Int64N(300_000)
			}
			if rng.IntN(40) == 0 { // another limit of the identity
				spec = limitSpec(limits[rng.IntN(len(limits))], false)
			}
			cost := 1 + rng.IntN(4)
			if rng.IntN(10) == 0 {
				cost = 0 // a peek: the fast path hands it on
			}
			got, err := redis.NewScript(src).Run(ctx, c, []string{fast}, now, 1, cost, 1, spec).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			want, err := redis.NewScript(src).Run(ctx, c, []string{general, "g:{dummy}"}, now, 2, cost, 1, spec, 1, 1, other).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want[:5]) {
				t.Fatalf("seed %d step %d (%s, cost %d): fast path replied %v, the driver %v", seed, step, spec, cost, got, want[:5])
			}
			gv, _ := c.Get(ctx, fast).Result()
			wv, _ := c.Get(ctx, general).Result()
			if gv != wv {
				t.Fatalf("seed %d step %d (%s, cost %d): fast path stored %q, the driver %q", seed, step, spec, cost, gv, wv)
			}
			gt, _ := c.PTTL(ctx, fast).Result()
			wt, _ := c.PTTL(ctx, general).Result()
			if d := gt - wt; d > 50*time.Millisecond || d < -50*time.Millisecond {
				t.Fatalf("seed %d step %d (%s, cost %d): fast path TTL %v, the driver %v", seed, step, spec, cost, gt, wt)
			}
		}
	}
}
