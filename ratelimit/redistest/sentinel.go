package redistest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name a SentinelGroup's sentinels monitor.
const SentinelMaster = "mymaster"

// SentinelGroup is a master, its replicas and three sentinels (quorum 2)
// watching them, each a real redis-server on a 127.0.0.1 port below 32768,
// stopped (killed by PID) at cleanup.
type SentinelGroup struct {
	Master    *Server
	Replicas  []*Server
	Sentinels []*Server
}

// lowPort is a free port in 20000–32767: below the kernel's ephemeral
// range, so no outgoing connection takes it between probe and bind.
func lowPort(t testing.TB) int {
	t.Helper()
	for range 200 {
		if p := 20000 + rand.IntN(12768); portFree(p) {
			return p
		}
	}
	t.Fatal("no free port in 20000–32767")
	return 0
}

// StartSentinelGroup starts a master, replicas replicas of it and three
// sentinels that consider a master down after downAfter, and returns once
// every sentinel knows every replica (a failover can then be ordered).
func StartSentinelGroup(t testing.TB, replicas int, downAfter time.Duration) *SentinelGroup {
	t.Helper()
	SkipOnDevkitKV(t, "no Sentinel")
	RequireBinaries(t, "redis-server")
	g := &SentinelGroup{Master: startServer(t, lowPort, t.TempDir())}
	for range replicas {
		g.Replicas = append(g.Replicas, startReplica(t, g.Master, lowPort))
	}
	for range 3 {
		g.Sentinels = append(g.Sentinels, startSentinel(t, g.Master, lowPort, 2, downAfter,
			fmt.Sprintf("sentinel failover-timeout %s 10000\n", SentinelMaster)))
	}
	ctx := context.Background()
	for _, s := range g.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
		for deadline := time.Now().Add(15 * time.Second); ; {
			known, _ := sc.Replicas(ctx, SentinelMaster).Result()
			if healthyReplicas(known) >= replicas {
				break
			}
			if time.Now().After(deadline) {
				sc.Close()
				t.Fatalf("sentinel %s knows %d of %d replicas: %v", s.Addr, healthyReplicas(known), replicas, known)
			}
			time.Sleep(50 * time.Millisecond)
		}
		sc.Close()
	}
	return g
}

// healthyReplicas counts the replicas a sentinel lists as up.
func healthyReplicas(known []map[string]string) int {
	n := 0
	for _, r := range known {
		if r["flags"] == "slave" && r["master-link-status"] == "ok" {
			n++
		}
	}
	return n
}

// URL is the group's redis+sentinel:// URL, with the three sentinels.
func (g *SentinelGroup) URL() string {
	addrs := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		addrs[i] = s.Addr
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + SentinelMaster
}

// MasterAddr is the master's address as the first sentinel names it.
func (g *SentinelGroup) MasterAddr(ctx context.Context) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: g.Sentinels[0].Addr})
	defer sc.Close()
	hp, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel %s: master address %q", g.Sentinels[0].Addr, hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// KillMaster kills the master (SIGKILL: nothing flushed, nothing handed
// over) and returns the address of the replica the sentinels promote once
// the first sentinel names it (after the group's downAfter and an
// election).
func (g *SentinelGroup) KillMaster(ctx context.Context) (string, error) {
	old, err := g.MasterAddr(ctx)
	if err != nil {
		return "", err
	}
	if old != g.Master.Addr {
		return "", fmt.Errorf("the sentinels name %s the master, not the group's first master %s", old, g.Master.Addr)
	}
	g.Master.Stop()
	return g.newMaster(ctx, old, "after the master was killed")
}

// newMaster waits for the first sentinel to name a master other than old.
func (g *SentinelGroup) newMaster(ctx context.Context, old, after string) (string, error) {
	for {
		addr, err := g.MasterAddr(ctx)
		if err == nil && addr != old {
			return addr, nil
		}
		select {
		case <-ctx.Done():
			return "", errors.Join(fmt.Errorf("no new master %s: %w", after, ctx.Err()), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Failover orders a failover (SENTINEL FAILOVER) through the first
// sentinel, retrying while it has no replica to promote yet, and returns
// the new master's address once that sentinel names it.
func (g *SentinelGroup) Failover(ctx context.Context) (string, error) {
	old, err := g.MasterAddr(ctx)
	if err != nil {
		return "", err
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: g.Sentinels[0].Addr})
	defer sc.Close()
	for {
		err := sc.Failover(ctx, SentinelMaster).Err()
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "NOGOODSLAVE") {
			return "", fmt.Errorf("sentinel failover: %w", err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("sentinel failover: %w (last: %w)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return g.newMaster(ctx, old, "after the failover")
}
