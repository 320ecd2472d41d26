//go:build unix

// Unix only: the server runs as a real process (startServe) and is killed with
// SIGKILL.

package kv

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
)

// TestServeProcess_PipelinedSETsRecoverInSendOrder pipelines SETs on several
// connections into a real server process, kills it with -9 mid-stream, and
// checks on the recovered store that what survived of each connection is a
// prefix of what it sent: no later SET without every earlier one.
func TestServeProcess_PipelinedSETsRecoverInSendOrder(t *testing.T) {
	dir := t.TempDir()
	for round := range 3 {
		p := startServe(t, "--data", dir, "--sync", "always")
		const conns, burst = 6, 64
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rc := redis.NewClient(&redis.Options{Addr: p.addrs["resp"], MaxRetries: -1})
				defer rc.Close()
				for i := 0; ctx.Err() == nil; i += burst {
					pipe := rc.Pipeline()
					for j := range burst {
						pipe.Set(ctx, fmt.Sprintf("r%d:c%d:%08d", round, c, i+j), "v", 0)
					}
					if _, err := pipe.Exec(ctx); err != nil {
						return // the server was killed
					}
				}
			}()
		}
		time.Sleep(300 * time.Millisecond)
		p.cmd.Process.Kill()
		p.wait(t)
		stop()
		wg.Wait()

		db, err := kvstore.Open(dir, kvstore.Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		for c := range conns {
			prefix := fmt.Sprintf("r%d:c%d:", round, c)
			page, err := db.Scan(kvstore.ScanOptions{Prefix: []byte(prefix), Limit: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range page.Entries {
				if want := fmt.Sprintf("%s%08d", prefix, i); string(e.Key) != want {
					t.Fatalf("round %d, connection %d: recovered %d SETs but %s is missing while later ones survived (%s)", round, c, len(page.Entries), want, e.Key)
				}
			}
			if round == 0 && c == 0 {
				t.Logf("connection 0 recovered %d SETs", len(page.Entries))
			}
		}
		db.Close()
	}
}
