package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
)

// Under a flood of new identities a full store evicts counters, never a
// live penalty block while a counter can go: a login blocked for an hour
// stays blocked through 50 000 new identities in a store of 256 (counters
// of a 2-hour window, which outlive the block: the store evicted the entry
// that expired first, the block). Every eviction is counted, by kind.
func TestEviction_CountersGoBeforeLiveBlocks(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Options{MaxKeys: 256})
	out := make([]ratelimit.LimitResult, 1)
	login := []ratelimit.Limit{{Name: "login", Rate: 1, Period: time.Minute, Block: time.Hour}}
	for i := 0; i < 2; i++ {
		if err := s.Check(ctx, ratelimit.CheckRequest{Key: "login:victim", Limits: login, Cost: 1}, out); err != nil {
			t.Fatal(err)
		}
	}
	if !out[0].Blocked {
		t.Fatalf("the second login: %+v, want blocked", out[0])
	}
	flood := []ratelimit.Limit{{Name: "api", Rate: 100, Period: 2 * time.Hour}}
	for i := 0; i < 50_000; i++ {
		if err := s.Check(ctx, ratelimit.CheckRequest{Key: fmt.Sprintf("api:%d", i), Limits: flood, Cost: 1}, out); err != nil {
			t.Fatal(err)
		}
	}
	info, err := s.Info(ctx, "login:victim")
	if err != nil {
		t.Fatal(err)
	}
	if info.BlockedFor < 59*time.Minute {
		t.Fatalf("after the flood the login block is %+v: evicted", info)
	}
	ev := s.Evictions()
	if ev.Blocks != 0 || ev.Counters < 49_000 {
		t.Errorf("evictions %+v: want about 50 000 counters and no block", ev)
	}
	if n := s.Len(); n > 256 {
		t.Errorf("%d identities held, bound 256", n)
	}
}

// When only blocks are left to evict, one goes, and it is counted as a
// block evicted (a block lifted early).
func TestEviction_OfABlockIsCountedAsSuch(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Options{MaxKeys: 64}) // one identity per shard
	out := make([]ratelimit.LimitResult, 1)
	login := []ratelimit.Limit{{Name: "login", Rate: 1, Period: time.Minute, Block: time.Hour}}
	for i := 0; i < 1000; i++ {
		for j := 0; j < 2; j++ {
			if err := s.Check(ctx, ratelimit.CheckRequest{Key: fmt.Sprintf("login:%d", i), Limits: login, Cost: 1}, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ev := s.Evictions(); ev.Blocks == 0 {
		t.Errorf("evictions %+v: 1000 blocked identities in a store of 64, want blocks evicted and counted", ev)
	}
}
