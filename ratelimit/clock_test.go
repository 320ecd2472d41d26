package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/internal/storetest"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
)

// TestClock_OneRuleForTheLimiterAndEveryStore: one fake clock drives a
// decision end to end whichever component it is given to, by the rule of
// ratelimit.Clock: a component's own clock wins, and a Limiter hands its
// time to an in-process store. A penalty block of an hour ends when the
// fake clock passes it, in the store and in the blocked cache alike.
func TestClock_OneRuleForTheLimiterAndEveryStore(t *testing.T) {
	login := ratelimit.Limit{Name: "login", Rate: 1, Period: time.Minute, Block: time.Hour}
	cases := []struct {
		name string
		// build gives clock to some of the components (a blocked cache
		// reads the limiter's clock).
		build func(t *testing.T, clock ratelimit.Clock) *ratelimit.Limiter
	}{
		{"limiter clock, memory store without one", func(t *testing.T, clock ratelimit.Clock) *ratelimit.Limiter {
			return ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{Now: clock, BlockedCacheSize: 8})
		}},
		{"memory store clock, limiter without one", func(t *testing.T, clock ratelimit.Clock) *ratelimit.Limiter {
			return ratelimit.New(memory.New(memory.Options{Now: clock}), ratelimit.Options{})
		}},
		{"the same clock to both", func(t *testing.T, clock ratelimit.Clock) *ratelimit.Limiter {
			return ratelimit.New(memory.New(memory.Options{Now: clock}), ratelimit.Options{Now: clock, BlockedCacheSize: 8})
		}},
		{"the same clock to the limiter and a Redis store", func(t *testing.T, clock ratelimit.Clock) *ratelimit.Limiter {
			mr := miniredis.RunT(t)
			c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			// A budget that a loaded machine cannot run out: this test is
			// about whose clock decides, not about the failure policy.
			return ratelimit.New(redisstore.New(c, redisstore.Options{Now: clock}), ratelimit.Options{Now: clock, BlockedCacheSize: 8, Budget: 10 * time.Second})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewClock()
			l := c.build(t, clock.Now)
			allow := func(step string, want bool) ratelimit.Result {
				t.Helper()
				res, err := l.Allow(ctx, "user", login)
				if err != nil || res.Allowed != want {
					t.Fatalf("%s: allowed %v (%v, source %v), want %v", step, res.Allowed, err, res.Source, want)
				}
				return res
			}
			allow("first", true)
			if res := allow("second", false); !res.Blocked || res.RetryAfter != time.Hour {
				t.Fatalf("second: %+v, want blocked for the hour of the fake clock", res)
			}
			clock.Advance(59 * time.Minute)
			if res := allow("59 minutes on", false); res.RetryAfter != time.Minute {
				t.Fatalf("59 minutes on: retry after %v, want 1m by the fake clock", res.RetryAfter)
			}
			clock.Advance(time.Minute + time.Second)
			allow("past the block", true)
		})
	}
}
