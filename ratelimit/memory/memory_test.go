package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/internal/storetest"
	"github.com/devkit-go/devkit/ratelimit/memory"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) ratelimit.Store {
		return memory.New(memory.Options{Now: clock.Now})
	})
}

func TestAccuracy_ConcurrentLimiters(t *testing.T) {
	store := memory.New(memory.Options{})
	storetest.RunAccuracy(t, 3, 50, func(t *testing.T) ratelimit.Store { return store })
}

func TestStore_IsBoundedInKeys(t *testing.T) {
	clock := storetest.NewClock()
	const maxKeys = 64 * 4 // four per shard
	s := memory.New(memory.Options{MaxKeys: maxKeys, Now: clock.Now})
	lim := ratelimit.Limit{Rate: 1, Period: time.Hour}
	out := make([]ratelimit.LimitResult, 1)
	for i := 0; i < 10*maxKeys; i++ {
		req := ratelimit.CheckRequest{Key: fmt.Sprint("k", i), Limits: []ratelimit.Limit{lim}, Cost: 1}
		if err := s.Check(context.Background(), req, out); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Len(); n > maxKeys {
		t.Fatalf("store holds %d keys, bound is %d", n, maxKeys)
	}
}

func TestStore_SweepsExpiredKeysAsNewOnesArrive(t *testing.T) {
	clock := storetest.NewClock()
	s := memory.New(memory.Options{Now: clock.Now})
	lim := ratelimit.Limit{Rate: 1, Period: time.Second}
	out := make([]ratelimit.LimitResult, 1)
	check := func(key string) {
		req := ratelimit.CheckRequest{Key: key, Limits: []ratelimit.Limit{lim}, Cost: 1}
		if err := s.Check(context.Background(), req, out); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 1000; i++ {
		check(fmt.Sprint("old", i))
	}
	clock.Advance(time.Minute)
	for i := 0; i < 1000; i++ {
		check(fmt.Sprint("new", i))
	}
	// Each insert sweeps up to 8 expired entries of its shard, so 1000
	// inserts must have removed most of the 1000 expired ones.
	if n := s.Len(); n > 1200 {
		t.Fatalf("store holds %d keys after sweeping; expired keys were not swept", n)
	}
	if info, _ := s.Info(context.Background(), "old1"); info.Exists {
		t.Fatal("expired key reported as existing")
	}
}

func TestStore_CanceledContext(t *testing.T) {
	s := memory.New(memory.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := make([]ratelimit.LimitResult, 1)
	err := s.Check(ctx, ratelimit.CheckRequest{Key: "k", Limits: []ratelimit.Limit{ratelimit.PerSecond(1)}, Cost: 1}, out)
	if err == nil {
		t.Fatal("check with a canceled context succeeded")
	}
}
