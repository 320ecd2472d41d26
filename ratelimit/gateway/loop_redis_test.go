package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// newRedisLimiter is a limiter on a redis-server of its own (a store
// that may wait: the loops check on goroutines of their own).
func newRedisLimiter(t *testing.T) *ratelimit.Limiter {
	l, _ := redisLimiter(t, ratelimit.Options{Budget: 5 * time.Second})
	return l
}

// redisLimiter is a limiter with opts on a redis-server of its own, and
// that server (to slow it or stop it).
func redisLimiter(t *testing.T, opts ratelimit.Options) (*ratelimit.Limiter, *redistest.Server) {
	rs := redistest.StartRedis(t)
	client, err := redisstore.NewClient(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return ratelimit.New(redisstore.New(client, redisstore.Options{}), opts), rs
}

// With a store that may wait (Redis), a loop runs each check on a
// goroutine of its own: a check held up by the store holds up its own
// connection only, never the others on its loop; and the answers of a
// pipelined burst still leave in order, the allowed request among them
// handed over whole.
func TestLoop_StoreChecksNeverHoldTheLoop(t *testing.T) {
	forEachMode(t, func(t *testing.T, gpc bool) {
		limiter, rs := redisLimiter(t, ratelimit.Options{Budget: 5 * time.Second})
		up := &pathRecorder{}
		upstream := httptest.NewServer(up)
		t.Cleanup(upstream.Close)
		// Only /limited is limited: /free needs no store at all.
		srv := startGateway(t, upstream.URL, "rules:\n  - {name: limited, paths: [/limited], key: [ip], limits: [{limit: 1, window: 1h}]}\n",
			gateway.Config{GoroutinePerConn: gpc, Logger: discardLogger(),
				Limiter: limiter})
		spend(t, srv.Addr())

		conn := dialClient(t, srv.Addr())
		var raw strings.Builder
		for i := 0; i < 20; i++ {
			raw.WriteString("GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
		}
		raw.WriteString("GET /free/after HTTP/1.1\r\nHost: x\r\n\r\nGET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
		io.WriteString(conn, raw.String())
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		codes, bodies := readAnswers(t, bufio.NewReader(conn), strings.Fields(strings.Repeat("GET ", 22))...)
		for i, c := range codes {
			if want := map[bool]int{true: 200, false: 429}[i == 20]; c != want || i == 20 && bodies[i] != "path=/free/after" {
				t.Fatalf("answer %d: %d %q, want %d (answers %v)", i, c, bodies[i], want, codes)
			}
		}

		// Redis stops answering for 3 s; a check sent now waits for it.
		stuck := dialClient(t, srv.Addr())
		// Others on every loop (they are dealt round-robin), each asking
		// for a path that needs no check.
		others := make([]net.Conn, 2*runtime.GOMAXPROCS(0)+1)
		for i := range others {
			var err error
			if others[i], err = net.Dial("tcp", srv.Addr()); err != nil {
				t.Fatal(err)
			}
			defer others[i].Close()
		}
		sleeping := make(chan error, 1)
		go func() { sleeping <- rs.Client(t).Do(context.Background(), "DEBUG", "SLEEP", "3").Err() }()
		time.Sleep(100 * time.Millisecond)
		io.WriteString(stuck, "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		for i, c := range others {
			fmt.Fprintf(c, "GET /free/%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if codes, _ := readAnswers(t, bufio.NewReader(c), "GET"); codes[0] != 200 {
				t.Fatalf("connection %d: %d, want 200", i, codes[0])
			}
		}
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Errorf("the other connections were answered after %v: a check waiting on the store held them up", d.Round(time.Millisecond))
		}
		stuck.SetReadDeadline(time.Now().Add(10 * time.Second))
		if codes, _ := readAnswers(t, bufio.NewReader(stuck), "GET"); codes[0] != 429 {
			t.Errorf("the check that waited: %d, want 429", codes[0])
		}
		if err := <-sleeping; err != nil {
			t.Fatal(err)
		}
	})
}
