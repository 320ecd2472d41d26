package resp

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
)

// After a request a loop polls its sockets for IdlePoll, then sleeps in
// epoll_wait (an idle server spends no CPU); with IdlePoll negative it
// sleeps at once. Judged by what the loop does (its polls, and whether it
// is polling), not by the CPU time it got: on a loaded machine a polling
// loop gets little CPU, which made a CPU-time version of this test fail.
func TestEventLoop_IdlePollThenSleeps(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("a loop polls only when the loops leave a P free; GOMAXPROCS is 1")
	}
	const poll = 300 * time.Millisecond
	for _, idlePoll := range []time.Duration{poll, -1} {
		t.Run(fmt.Sprint("IdlePoll=", idlePoll), func(t *testing.T) {
			db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncNone})
			s, ln, _ := serveWithHook(t, db, Options{EventLoops: 1, IdlePoll: idlePoll,
				IdleTimeout: -1, HandshakeTimeout: -1, WriteTimeout: -1, Logger: servertest.Logger(t)}, nil)
			c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
			defer c.Close()
			ctx := context.Background()
			ls := s.loops
			// asleep waits until the loop sleeps: no poll, and no loop
			// polling at either end, for a whole IdlePoll. (A new
			// connection's first requests come in several rounds, each
			// followed by a poll, so one look at the loop between two of
			// them would not do.)
			asleep := func(after string) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); ; {
					before, polling := ls.idlePolls.Load(), ls.polling.Load()
					time.Sleep(poll)
					if ls.idlePolls.Load() == before && polling == 0 && ls.polling.Load() == 0 {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("the loop still polls 10 s after %s with no request since (IdlePoll %v)", after, idlePoll)
					}
				}
			}
			for i := range 3 {
				before := ls.idlePolls.Load()
				if err := c.Set(ctx, "k", i, 0).Err(); err != nil {
					t.Fatal(err)
				}
				if idlePoll > 0 {
					// The loop polls after the round that served the SET.
					for deadline := time.Now().Add(10 * time.Second); ls.idlePolls.Load() == before; time.Sleep(time.Millisecond) {
						if time.Now().After(deadline) {
							t.Fatalf("request %d: the loop did not poll after it", i)
						}
					}
				}
				asleep(fmt.Sprintf("request %d", i))
			}
			if n := ls.idlePolls.Load(); idlePoll < 0 && n != 0 {
				t.Errorf("%d polls with IdlePoll %v: the loop polled", n, idlePoll)
			}
		})
	}
}

// TestEventLoop_IdlePollStopsWhenRequestsComeFurtherApart sends one
// connection's requests 5×IdlePoll apart, as redis-benchmark -c 1 does on
// a busy machine (its round trip longer than the poll): a poll never
// catches the next request there and only takes a CPU from the client, so
// the loop halves its window after each such wait and stops polling
// (before, it polled IdlePoll after every request: GET -c 1 at 0.79x
// redis-server, 1.18x with the poll off). Requests that come back to back
// are polled for again.
func TestEventLoop_IdlePollStopsWhenRequestsComeFurtherApart(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("a loop polls only when the loops leave a P free; GOMAXPROCS is 1")
	}
	const idlePoll = 2 * time.Millisecond
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncNone})
	s, ln, _ := serveWithHook(t, db, Options{EventLoops: 1, IdlePoll: idlePoll,
		IdleTimeout: -1, HandshakeTimeout: -1, WriteTimeout: -1, Logger: servertest.Logger(t)}, nil)
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reply := make([]byte, 64)
	ping := func() {
		t.Helper()
		if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			t.Fatal(err)
		}
		if n, err := conn.Read(reply); err != nil || string(reply[:n]) != "+PONG\r\n" {
			t.Fatalf("PING: %q, %v", reply[:n], err)
		}
	}
	ls := s.loops
	// 2 ms halves to 1, 0.5, 0.25 (idlePoll/8), then 0: five slow requests.
	for range 5 {
		ping()
		time.Sleep(5 * idlePoll)
	}
	before := ls.idlePolls.Load()
	for range 5 {
		ping()
		time.Sleep(5 * idlePoll)
	}
	if n := ls.idlePolls.Load() - before; n != 0 {
		t.Fatalf("%d polls after requests that came %v apart, with IdlePoll %v: the loop still polls", n, 5*idlePoll, idlePoll)
	}
	// Back to back: waits shorter than IdlePoll grow the window again.
	for range 200 {
		ping()
	}
	if ls.idlePolls.Load() == before {
		t.Fatal("no poll after 200 requests back to back")
	}
}
