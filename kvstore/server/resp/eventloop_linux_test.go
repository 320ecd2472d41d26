package resp_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// serveLoops serves db from the event loops whatever DEVKIT_RESP_EVENTLOOP
// says, with n loops.
func serveLoops(t *testing.T, db *kvstore.DB, n int) string {
	t.Helper()
	// No timeouts: the loops' tick is 1 s, the longest, so a loop that
	// waits for an event while it has work stalls for seconds.
	return servertest.Serve(t, resp.NewServer(db, resp.Options{EventLoops: n, IdleTimeout: -1, HandshakeTimeout: -1,
		WriteTimeout: -1, Logger: servertest.Logger(t)}))
}

// With a loop for every P the loops wait through Go's poller (a loop
// blocked in epoll_wait would hold a P the others need); with fewer, in
// epoll_wait. Both must settle parked writes without waiting for another
// event, wake for new connections and requests after being idle, and
// answer pipelines in order. A pipeline of SET/GET pairs parks its
// connection at every GET, more times than a round settles: the rest are
// settled by the next rounds without waiting for an event. (With either
// wait blocking while writes are parked, the lone pipeline stalls a tick,
// 1 s, every few pairs and misses its deadline.)
func TestEventLoop_BothWaitsServePipelinesAndWakeAfterIdle(t *testing.T) {
	for _, loops := range []int{1, runtime.GOMAXPROCS(0), runtime.GOMAXPROCS(0) + 1} {
		t.Run(fmt.Sprintf("loops=%d,GOMAXPROCS=%d", loops, runtime.GOMAXPROCS(0)), func(t *testing.T) {
			db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncAlways})
			addr := serveLoops(t, db, loops)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			lone := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			defer lone.Close()
			pipe := lone.Pipeline()
			gets := make([]*redis.StringCmd, 0, 200)
			for i := range 200 {
				pipe.Set(ctx, "lone", i, 0)
				gets = append(gets, pipe.Get(ctx, "lone"))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("a lone pipeline of SET/GET pairs: %v", err)
			}
			for i, g := range gets {
				if g.Val() != fmt.Sprint(i) {
					t.Fatalf("GET after SET %d = %q", i, g.Val())
				}
			}

			var wg sync.WaitGroup
			errs := make(chan error, 20)
			for g := range 20 {
				wg.Go(func() {
					c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
					defer c.Close()
					for round := range 3 {
						if round == 2 {
							time.Sleep(50 * time.Millisecond) // every loop idle
						}
						pipe := c.Pipeline()
						for i := range 50 {
							pipe.Set(ctx, fmt.Sprintf("g%d-%d", g, i), fmt.Sprint(round, "-", i), 0)
						}
						get := pipe.Get(ctx, fmt.Sprintf("g%d-49", g))
						if _, err := pipe.Exec(ctx); err != nil {
							errs <- fmt.Errorf("client %d round %d: %w", g, round, err)
							return
						}
						if want := fmt.Sprint(round, "-49"); get.Val() != want {
							errs <- fmt.Errorf("client %d round %d: GET after its SETs = %q, want %q", g, round, get.Val(), want)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
