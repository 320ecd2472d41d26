package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
)

func ExampleLimiter_Allow() {
	limiter := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	login := ratelimit.Limit{Name: "login", Rate: 5, Period: 15 * time.Minute, Block: time.Hour}
	for attempt := 1; attempt <= 6; attempt++ {
		res, err := limiter.Allow(context.Background(), "ip:203.0.113.9", login)
		if err != nil {
			panic(err)
		}
		fmt.Printf("attempt %d: allowed=%v remaining=%d blocked=%v retry=%v\n",
			attempt, res.Allowed, res.Remaining, res.Blocked, res.RetryAfter)
	}
	// Output:
	// attempt 1: allowed=true remaining=4 blocked=false retry=0s
	// attempt 2: allowed=true remaining=3 blocked=false retry=0s
	// attempt 3: allowed=true remaining=2 blocked=false retry=0s
	// attempt 4: allowed=true remaining=1 blocked=false retry=0s
	// attempt 5: allowed=true remaining=0 blocked=false retry=0s
	// attempt 6: allowed=false remaining=0 blocked=true retry=1h0m0s
}

func ExampleLimiter_Check_severalLimits() {
	limiter := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	burst := ratelimit.Limit{Name: "burst", Algorithm: ratelimit.TokenBucket, Rate: 1, Period: time.Second, Burst: 3}
	hourly := ratelimit.Limit{Name: "hourly", Rate: 1000, Period: time.Hour}
	for i := 1; i <= 4; i++ {
		res, _ := limiter.Check(context.Background(), ratelimit.Request{Key: "tenant:acme", Limits: []ratelimit.Limit{burst, hourly}})
		fmt.Printf("request %d: allowed=%v binding=%s hourly remaining=%d\n",
			i, res.Allowed, res.Limit.Name, res.Limits[1].Remaining)
	}
	// Output:
	// request 1: allowed=true binding=burst hourly remaining=999
	// request 2: allowed=true binding=burst hourly remaining=998
	// request 3: allowed=true binding=burst hourly remaining=997
	// request 4: allowed=false binding=burst hourly remaining=997
}
