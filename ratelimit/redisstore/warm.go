package redisstore

// A store that has served nothing yet would spend its first burst's budget
// on work that does not depend on the checks: dialing connections, the
// NOSCRIPT round trip that loads each script, and the first registration of
// each lean limit id, which the first checks of that id wait for. Warm does
// that work before traffic arrives, so the first burst is decided as a warm
// one is (exactly, at the default budget).

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/ratelimit"
)

// WarmConns is how many connections Warm opens to each node: enough for
// the batches in flight at once (DefaultPipeline) and the registrations
// and resets beside them.
const WarmConns = 2 * DefaultPipeline

var _ ratelimit.Warmer = (*Store)(nil)

// Warm implements ratelimit.Warmer: it opens WarmConns connections to every
// master, loads every script on each (SCRIPT LOAD), and registers the lean
// limits among limits (waiting for the registry write, which a check of a
// new limit would otherwise wait for).
func (s *Store) Warm(ctx context.Context, limits []ratelimit.Limit) error {
	scripts := []*redis.Script{s.check, s.leanFW, s.leanGCRA, s.registerScript}
	node := func(ctx context.Context, c redis.UniversalClient) error {
		var wg sync.WaitGroup
		errs := make([]error, WarmConns)
		for i := range WarmConns {
			wg.Go(func() {
				// Concurrent calls each hold a connection: the pool opens them.
				if i < len(scripts) {
					errs[i] = scripts[i].Load(ctx, c).Err()
				} else {
					errs[i] = c.Ping(ctx).Err()
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	var err error
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return node(ctx, c) })
	} else {
		err = node(ctx, s.client)
	}
	for _, lim := range limits {
		if e := s.specs.of(lim, s.now == nil); e.lean && e.registered.Load() == 0 {
			s.register(ctx, e)
		}
	}
	if err != nil {
		return fmt.Errorf("redisstore: warm: %w", err)
	}
	return nil
}
