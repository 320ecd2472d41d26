package gateway_test

// Hostile clients over raw sockets, from 127.0.0.1 and 127.0.0.2: request
// smuggling and odd heads (sent whole and in pieces), pipelining, clients
// that die or half-close. What reaches the upstream is always a request
// the limiter counted, and the counters are what the clients were told.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

type wireRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (u *wireRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.seen = append(u.seen, fmt.Sprintf("%s %s host=%q xff=%q fwd=%q real=%q body=%q", r.Method, r.RequestURI, r.Host,
		r.Header.Get("X-Forwarded-For"), r.Header.Get("Forwarded"), r.Header.Get("X-Real-Ip"), b))
	u.mu.Unlock()
	io.WriteString(w, "up:"+r.URL.Path)
}

func (u *wireRecorder) since(n int) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := append([]string(nil), u.seen[n:]...)
	for i := range out {
		out[i] = upstreamHost.ReplaceAllString(out[i], "host=UPSTREAM")
	}
	return out
}

var upstreamHost = regexp.MustCompile(`host="127\.0\.0\.1:[0-9]+"`)

var answerHead = regexp.MustCompile(`HTTP/1\.1 [0-9]{3} [^\r\n]*\r\n(?:[^\r\n]+\r\n)*\r\n`)

var secondsLeft = regexp.MustCompile(`\b3[56][0-9]{2}\b`)

func normalizeAnswers(raw string) string {
	raw = secondsLeft.ReplaceAllString(dateField.ReplaceAllString(raw, ""), "SECS")
	return answerHead.ReplaceAllStringFunc(raw, func(head string) string {
		lines := strings.Split(strings.TrimSuffix(head, "\r\n\r\n"), "\r\n")
		slices.Sort(lines[1:])
		return strings.Join(lines, "\r\n") + "\r\n\r\n"
	})
}

func (u *wireRecorder) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.seen)
}

func startWireGateway(t *testing.T, pol string, cfg gateway.Config) (*gateway.Server, *wireRecorder) {
	t.Helper()
	up := &wireRecorder{}
	upstream := httptest.NewUnstartedServer(up)
	upstream.Config.SetKeepAlivesEnabled(false)
	upstream.Start()
	t.Cleanup(upstream.Close)
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	srv := startGateway(t, upstream.URL, pol, cfg)
	return srv, up
}

func rawExchange(t *testing.T, addr, local, raw string, wait time.Duration) (got string, closed bool) {
	t.Helper()
	d := net.Dialer{}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go io.WriteString(conn, raw) // the gateway may close before reading it all
	conn.SetReadDeadline(time.Now().Add(wait))
	b, err := io.ReadAll(conn)
	return string(b), err == nil || !isTimeout(err)
}

func rawExchangeSplit(t *testing.T, addr, raw string, step int, wait time.Duration) (got string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetNoDelay(true)
	go func() {
		for i := 0; i < len(raw); i += step {
			if _, err := io.WriteString(conn, raw[i:min(i+step, len(raw))]); err != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	conn.SetReadDeadline(time.Now().Add(wait))
	b, err := io.ReadAll(conn)
	return string(b), err == nil || !isTimeout(err)
}

const closeProbe = "GET /limited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

var oddHeads = []string{
	// Framing: CL+TE, conflicting and duplicate Content-Length, odd TE.
	"POST /limited HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nGET /s HTTP/1.1\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nContent-Length: 0, 0\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nContent-Length: +0\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nContent-Length: 00\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
	"GET /limited HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked , identity\r\n\r\n0\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"GET /limited HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n0\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nTrailer: X\r\n\r\n",
	// Line and byte oddities.
	"GET /limited HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\n\tX: a\r\n\r\n",
	"GET /limited HTTP/1.1\nHost: x\n\n",
	"GET /limited HTTP/1.1\r\nHost: x\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\n\n",
	"GET /limited HTTP/1.1\rHost: x\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nX\r: a\r\n\r\n",
	"GET /limited\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /lim\x00ited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nX: a\x7fb\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nX: caf\xc3\xa9\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nX: \xff\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\x00\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHo\x00st: x\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost : x\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\nhello",
	"GET /limited HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\n: empty\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nX:a\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nX: \t a \t \r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nX-\xe2\x82\xac: a\r\n\r\n",
	"\r\nGET /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"\r\n\r\nGET /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	" GET /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET  /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited  HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET\t/limited\tHTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.1 \r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.1 extra\r\nHost: x\r\n\r\n",
	"GET /limited\r\nHost: x\r\n\r\n",
	"GET /limited\r\n\r\n",
	"GET\r\n\r\n",
	// Versions.
	"GET /limited http/1.1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.10\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.01\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.2\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.9\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/2.0\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/0.9\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/01.1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.1\r\n\r\n",
	"GET /limited HTTP/1.0\r\n\r\nGET /limited HTTP/1.0\r\n\r\n",
	"GET /limited HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /limited HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nGET /limited HTTP/1.0\r\n\r\n",
	"GET /limited HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\nGET /limited HTTP/1.0\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\nGET /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\nGET /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nConnection: foo\r\nConnection: close\r\n\r\nGET /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
	"GET /limited HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n",
	"GET /limited HTTP/1.0\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\nPragma: no-cache\r\n\r\n",
	// Hosts.
	"GET /limited HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost:\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: a b\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: user@evil\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: a/b\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHOST: x\r\n\r\n",
	"GET http://evil.example/limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET http://evil.example/api HTTP/1.1\r\nHost: good.example\r\n\r\n",
	"GET http://evil.example/limited HTTP/1.1\r\n\r\n",
	"GET https://x/limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET //limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET //evil.example/api HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET * HTTP/1.1\r\nHost: x\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
	"OPTIONS /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n",
	"CONNECT /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	// Spellings of /limited: the key and the rule must be the front's.
	"GET /LIMITED HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /Limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /%6cimited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /%6Cimited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limite%64 HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /./limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a/../limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /../limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /%2e%2e/limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /%2E/limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited/ HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited// HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited;a=b HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited;/x HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited%3bx HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited%2f HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited%00 HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited%zz HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited% HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited? HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited?a=1#f HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited#f HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited?%zz HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited?a=\x7f HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited\\ HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /lim%C3%A9ited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /lim\xc3\xa9ited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited\xff HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET ?/limited HTTP/1.1\r\nHost: x\r\n\r\n",
	// Methods.
	"get /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"HEAD /limited HTTP/1.1\r\nHost: x\r\n\r\nHEAD /limited HTTP/1.0\r\n\r\n",
	"PURGE /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"G(T /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	"G\x00T /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	strings.Repeat("M", 100) + " /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	strings.Repeat("M", 15) + " /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	strings.Repeat("M", 16) + " /limited HTTP/1.1\r\nHost: x\r\n\r\n",
	// Lengths.
	"GET /limited?" + strings.Repeat("q", 12<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited/" + strings.Repeat("a", 30<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("N", 14<<10) + ": v\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: b\r\n", 2000) + "\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: b\r\n", 9) + "\r\n",
	// Garbage after a denial, and a denial then an allowed request then garbage.
	"GET /limited HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\n\r\nGET /api/x HTTP/1.1\r\nHost: x\r\n\r\n\x00\x01\x02\r\n\r\n",
	"GET /limited HTTP/1.1\r\nHost: x\r\n\r\nGET /api/x HTTP/1.1\r\nHost: x\r\n\r\nGET /limited HTTP/1.1\r\nHost: x\r\n\r\n",
}

// Every odd head, sent whole and sent in pieces, reaches the upstream only
// as requests the limiter counted (/limited is spent: a request smuggled
// past the limit would reach it uncounted), the connection ends, and the
// answers are the same both ways (net/http's parser across reads).
func TestSmuggling_OddHeadsNeverReachTheUpstreamUncounted(t *testing.T) {
	oddHeadsNeverUncounted(t, func(*testing.T) *ratelimit.Limiter { return newMemoryLimiter() })
}

// The same with a store that waits (Redis).
func TestSmuggling_OddHeadsWithRedisNeverReachTheUpstreamUncounted(t *testing.T) {
	oddHeadsNeverUncounted(t, newRedisLimiter)
}

func oddHeadsNeverUncounted(t *testing.T, newLimiter func(*testing.T) *ratelimit.Limiter) {
	type outcome struct {
		answers string
		up      []string
	}
	var results [2][]outcome
	for _, split := range []bool{false, true} {
		limiter := newLimiter(t)
		srv, up := startWireGateway(t, openTestPolicy, gateway.Config{Limiter: limiter})
		spend(t, srv.Addr())
		counted := func() int { return int(allowedBy(limiter, "limited") + allowedBy(limiter, "api")) }
		for i, raw := range oddHeads {
			n, before := up.count(), counted()
			var got string
			var closed bool
			if split {
				step := max(len(raw)/3, 1) + i%7 // cuts at varied places
				got, closed = rawExchangeSplit(t, srv.Addr(), raw+closeProbe, step, 3*time.Second)
			} else {
				got, closed = rawExchange(t, srv.Addr(), "", raw+closeProbe, 3*time.Second)
			}
			seen := up.since(n)
			if !closed {
				t.Errorf("%.200q (split %v): the connection still open after %q", raw, split, closeProbe)
			}
			if len(seen) != counted()-before {
				t.Errorf("%.200q (split %v): the upstream saw %q, the limiter let %d through", raw, split, seen, counted()-before)
			}
			results[b2i(split)] = append(results[b2i(split)], outcome{normalizeAnswers(got), seen})
		}
	}
	for i, raw := range oddHeads {
		whole, split := results[0][i], results[1][i]
		if whole.answers != split.answers {
			t.Errorf("%.200q:\nwhole:\n%.600s\nin pieces:\n%.600s", raw, whole.answers, split.answers)
		}
		if fmt.Sprint(whole.up) != fmt.Sprint(split.up) {
			t.Errorf("%.200q: the upstream saw\nwhole: %q\nin pieces: %q", raw, whole.up, split.up)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// forEachStore runs f with the in-process store and with Redis.
func forEachStore(t *testing.T, f func(t *testing.T, limiter *ratelimit.Limiter)) {
	t.Run("memory", func(t *testing.T) { f(t, newMemoryLimiter()) })
	t.Run("redis", func(t *testing.T) { f(t, newRedisLimiter(t)) })
}

func TestSmuggling_HalfCloseAfterRequestsClosesAtOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, limiter *ratelimit.Limiter) {
		srv, _ := startWireGateway(t, openTestPolicy, gateway.Config{IdleTimeout: time.Minute, ReadHeaderTimeout: time.Minute,
			Limiter: limiter})
		spend(t, srv.Addr())
		for _, c := range []struct {
			name, raw string
			answers   int
		}{
			{"after a denial", "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n", 1},
			{"after two denials", "GET /limited HTTP/1.1\r\nHost: x\r\n\r\nHEAD /limited HTTP/1.1\r\nHost: x\r\n\r\n", 2},
			{"inside a head", "GET /limited HTTP/1.1\r\nHost: x\r\n\r\nGET /limited HTTP/1.1\r\nHo", 1},
			{"before any byte", "", 0},
		} {
			for round := 0; round < 5; round++ {
				conn, err := net.Dial("tcp", srv.Addr())
				if err != nil {
					t.Fatal(err)
				}
				conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				br := bufio.NewReader(conn)
				if round%2 == 1 {
					// The connection is the loop's already, idle.
					io.WriteString(conn, "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
					readAnswers(t, br, "GET")
				}
				io.WriteString(conn, c.raw)
				conn.(*net.TCPConn).CloseWrite()
				got, err := io.ReadAll(br)
				conn.Close()
				// net/http cancels the request's context when the client
				// half-closes (it takes it for gone): the memory store
				// decides all the same, every denial answered; a check on
				// Redis cut short answers nothing (and lets nothing
				// through); the connection ends either way.
				_, inProcess := limiter.Store().(*memory.Store)
				if n := strings.Count(string(got), "HTTP/1.1 429 "); err != nil || n > c.answers || inProcess && n != c.answers {
					t.Fatalf("%s, round %d: %d answers, %v: want %d and the connection closed within 2 s (idle timeout 1m)",
						c.name, round, n, err, c.answers)
				}
			}
		}
	})
}

func countersOf(l *ratelimit.Limiter, rule string) ratelimit.RuleCounters {
	for _, c := range l.Stats().Snapshot() {
		if c.Rule == rule {
			return c
		}
	}
	return ratelimit.RuleCounters{}
}

func deniedBy(l *ratelimit.Limiter, rule string) int64 { return countersOf(l, rule).Denied }

func allowedBy(l *ratelimit.Limiter, rule string) int64 { return countersOf(l, rule).Allowed }

func TestSmuggling_CountersEqualTheAnswersGiven(t *testing.T) {
	forEachStore(t, func(t *testing.T, limiter *ratelimit.Limiter) {
		srv, up := startWireGateway(t, openTestPolicy, gateway.Config{Limiter: limiter})
		spend(t, srv.Addr())
		deny := "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n"
		tails := []string{
			closeProbe + strings.Repeat(deny, 20),
			"GET /limited HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n" + strings.Repeat(deny, 20),
			"GET /limited HTTP/1.0\r\n\r\n" + strings.Repeat(deny, 20),
			"GARBAGE\r\n\r\n" + strings.Repeat(deny, 20),
		}
		got := map[int]int{}
		for i := 0; i < 8; i++ {
			raw := strings.Repeat(deny, 50) + "GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat(deny, 50) +
				"HEAD /limited HTTP/1.1\r\nHost: x\r\n\r\n" + tails[i%len(tails)]
			answers, closed := rawExchange(t, srv.Addr(), "", raw, 5*time.Second)
			if !closed {
				t.Fatalf("exchange %d not closed", i)
			}
			for _, code := range []int{200, 400, 429} {
				// net/http answers HTTP/1.0 in HTTP/1.0.
				got[code] += strings.Count(answers, fmt.Sprintf("HTTP/1.1 %d ", code)) + strings.Count(answers, fmt.Sprintf("HTTP/1.0 %d ", code))
			}
		}
		// 101 denials each, and the 4 closing ones (Connection: close, HTTP/1.0).
		if got[429] != 8*101+4 || got[200] != 8 || got[400] != 4 {
			t.Errorf("answers %v, want 429: %d, 200: 8, 400: 4", got, 8*101+4)
		}
		if d := deniedBy(limiter, "limited"); d != int64(got[429]) {
			t.Errorf("the limiter counted %d denials, the clients were answered %d", d, got[429])
		}
		if a := allowedBy(limiter, "api"); a != int64(got[200]) || up.count() != 1+got[200] {
			t.Errorf("the limiter allowed %d, the upstream saw %d (spend included), the clients got %d 200s", a, up.count(), got[200])
		}
	})
}

func spend(t *testing.T, addr string) {
	t.Helper()
	if codes, _ := exchange(t, addr, "GET /limited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); len(codes) != 1 || codes[0] != 200 {
		t.Fatalf("spending /limited: answers %v, want one 200", codes)
	}
}

func readAnswers(t *testing.T, br *bufio.Reader, methods ...string) (codes []int, bodies []string) {
	t.Helper()
	for i, m := range methods {
		resp, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			t.Fatalf("answer %d: %v (got %v so far)", i, err, codes)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		codes, bodies = append(codes, resp.StatusCode), append(bodies, string(b))
	}
	return codes, bodies
}

func TestPipelining_PipelinedDenialsThenAllowedKeepOrder(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{})
	spend(t, srv.Addr())
	conn := dialClient(t, srv.Addr())
	var raw strings.Builder
	methods := []string{}
	for i := 0; i < 20; i++ {
		raw.WriteString("GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
		methods = append(methods, "GET")
	}
	raw.WriteString("GET /api/after HTTP/1.1\r\nHost: x\r\nX-Keep: 1\r\n\r\n")
	methods = append(methods, "GET")
	for i := 0; i < 5; i++ {
		raw.WriteString("GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
		methods = append(methods, "GET")
	}
	io.WriteString(conn, raw.String())
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	codes, bodies := readAnswers(t, bufio.NewReader(conn), methods...)
	for i, c := range codes {
		want := 429
		if i == 20 {
			want = 200
		}
		if c != want || (i == 20 && bodies[i] != "path=/api/after") {
			t.Fatalf("answer %d: %d %q, want %d (answers %v)", i, c, bodies[i], want, codes)
		}
	}
	if seen := up.seen(); len(seen) != 2 || seen[1] != "GET /api/after" {
		t.Errorf("the upstream saw %v: want the spent /limited, then GET /api/after", seen)
	}
}

func TestPipelining_HeadSplitByteByByte(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{})
	spend(t, srv.Addr())
	conn := dialClient(t, srv.Addr())
	conn.(*net.TCPConn).SetNoDelay(true)
	head := "GET /limited HTTP/1.1\r\nHost: x\r\nUser-Agent: slow-but-honest\r\nAccept: */*\r\n\r\n"
	for i := 0; i < len(head); i++ {
		if _, err := conn.Write([]byte{head[i]}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	if codes, _ := readAnswers(t, br, "GET"); codes[0] != 429 {
		t.Fatalf("the head sent a byte at a time: %d, want 429", codes[0])
	}
	io.WriteString(conn, "HEAD /limited HTTP/1.1\r\nHost: x\r\n\r\nGET /api/next HTTP/1.1\r\nHost: x\r\n\r\n")
	codes, bodies := readAnswers(t, br, "HEAD", "GET")
	if codes[0] != 429 || bodies[0] != "" || codes[1] != 200 || bodies[1] != "path=/api/next" {
		t.Fatalf("answers %v %q: want 429 without a body, 200 path=/api/next", codes, bodies)
	}
}

func TestPipelining_ClientThatPipelinesDenialsThenDiesLeavesNothing(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{})
	spend(t, srv.Addr())
	raw := strings.Repeat("GET /limited HTTP/1.1\r\nHost: x\r\n\r\n", 3000) // more answers than a socket buffer holds
	for round := 0; round < 10; round++ {
		conn, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			io.WriteString(conn, raw)
		}()
		time.Sleep(5 * time.Millisecond)
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	}
	if codes, _ := exchange(t, srv.Addr(), "GET /limited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); len(codes) != 1 || codes[0] != 429 {
		t.Fatalf("after the dead clients: %v, want one 429", codes)
	}
}

func TestPipelining_LongHeadHandedOverWhole(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{})
	spend(t, srv.Addr())
	long := "GET /limited HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("a", 40<<10) + "\r\n\r\n" +
		"GET /api/after-long HTTP/1.1\r\nHost: x\r\n\r\n"
	conn := dialClient(t, srv.Addr())
	io.WriteString(conn, long)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if codes, bodies := readAnswers(t, bufio.NewReader(conn), "GET", "GET"); codes[0] != 429 || codes[1] != 200 || bodies[1] != "path=/api/after-long" {
		t.Fatalf("a 40 KiB head, then a request: %v %q, want 429 then 200", codes, bodies)
	}
	tooLong := "GET /limited HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("a", 80<<10) + "\r\n\r\n"
	if codes, closed := exchange(t, srv.Addr(), tooLong); len(codes) != 1 || codes[0] != 431 || !closed {
		t.Fatalf("an 80 KiB head: %v, closed %v: want one 431 and the connection closed", codes, closed)
	}
	if seen := up.seen(); len(seen) != 2 {
		t.Errorf("the upstream saw %v", seen)
	}
}

func TestPipelining_SlowHeadAndIdleConnectionCut(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{ReadHeaderTimeout: 300 * time.Millisecond,
		IdleTimeout: time.Minute})
	spend(t, srv.Addr())
	conn := dialClient(t, srv.Addr())
	head := "GET /limited HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 100)
	start := time.Now()
	if !trickleUntilCut(conn, head) {
		t.Fatalf("a head trickled for %v was not cut (header timeout 300ms)", time.Since(start).Round(time.Millisecond))
	}
	srv, _ = startFrontGateway(t, gateway.Config{ReadHeaderTimeout: time.Minute,
		IdleTimeout: 400 * time.Millisecond})
	spend(t, srv.Addr())
	idle := dialClient(t, srv.Addr())
	io.WriteString(idle, "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(idle)
	idle.SetReadDeadline(time.Now().Add(3 * time.Second))
	if codes, _ := readAnswers(t, br, "GET"); codes[0] != 429 {
		t.Fatalf("answer %v, want 429", codes)
	}
	start = time.Now()
	_, err := br.ReadByte()
	if err == nil || isTimeout(err) || time.Since(start) > 2*time.Second {
		t.Fatalf("an idle connection after %v: %v, want it closed at the idle timeout (400ms)", time.Since(start).Round(time.Millisecond), err)
	}
}

func TestPipelining_HandoffWithABody(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{})
	spend(t, srv.Addr())
	conn := dialClient(t, srv.Addr())
	io.WriteString(conn, "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n"+
		"POST /api/body HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello")
	time.Sleep(50 * time.Millisecond) // the body's rest comes later
	io.WriteString(conn, " world"+"GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	codes, bodies := readAnswers(t, bufio.NewReader(conn), "GET", "POST", "GET")
	if codes[0] != 429 || codes[1] != 200 || bodies[1] != "path=/api/body" || codes[2] != 429 {
		t.Fatalf("answers %v %q: want 429, 200, 429", codes, bodies)
	}
	up.mu.Lock()
	body := up.body[len(up.body)-1]
	up.mu.Unlock()
	if body != "hello world" {
		t.Errorf("the upstream got the body %q, want %q", body, "hello world")
	}
}

func TestPipelining_SpoofedForwardedForFromUntrustedPeerKeyedOnThePeer(t *testing.T) {
	upstream := httptest.NewServer(&pathRecorder{})
	t.Cleanup(upstream.Close)
	srv := startGateway(t, upstream.URL, "identity:\n  trusted_proxies: [127.0.0.1]\n"+openTestPolicy,
		gateway.Config{Logger: discardLogger()})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	conn, err := d.Dial("tcp", srv.Addr())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("dial from 127.0.0.2 (Linux routes all of 127/8 to lo; CI=true: the test must run): %v", err)
		}
		t.Skipf("no 127.0.0.2 on this machine (macOS: sudo ifconfig lo0 alias 127.0.0.2): %v", err)
	}
	defer conn.Close()
	var raw strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&raw, "GET /limited HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.1.2.%d\r\n\r\n", i)
	}
	io.WriteString(conn, raw.String())
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	codes, _ := readAnswers(t, bufio.NewReader(conn), strings.Split(strings.Repeat("GET ", 10), " ")[:10]...)
	if codes[0] != 200 {
		t.Fatalf("the peer's first request: %d, want 200", codes[0])
	}
	for i, c := range codes[1:] {
		if c != 429 {
			t.Fatalf("spoofed hop %d from an untrusted peer: %d, want 429 (answers %v)", i+1, c, codes)
		}
	}
	// From the trusted proxy, each hop is its own client: each is allowed once.
	var trusted strings.Builder
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&trusted, "GET /limited HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.9.9.%d\r\n\r\n", i)
	}
	trusted.WriteString("GET /limited HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.9.9.0\r\nConnection: close\r\n\r\n")
	if codes, _ := exchange(t, srv.Addr(), trusted.String()); fmt.Sprint(codes) != "[200 200 200 429]" {
		t.Fatalf("hops from the trusted proxy: %v, want [200 200 200 429]", codes)
	}
}

var dateField = regexp.MustCompile(`(?m)^Date: [^\r]*\r\n`)

func TestPipelining_SlowReaderGetsEveryAnswer(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{})
	spend(t, srv.Addr())
	conn := dialClient(t, srv.Addr())
	const n = 20000 // 14 MB of answers: more than the kernel's buffers on both sides
	go io.WriteString(conn, strings.Repeat("GET /limited HTTP/1.1\r\nHost: x\r\n\r\n", n)+
		"GET /api/last HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(300 * time.Millisecond) // the answers fill the buffers; the loop waits for room
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	for i := 0; i <= n; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d of %d: %v", i, n+1, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := 429; i < n && resp.StatusCode != want || i == n && string(b) != "path=/api/last" {
			t.Fatalf("answer %d: %d %q", i, resp.StatusCode, b)
		}
	}
}

func newRedisLimiter(t *testing.T) *ratelimit.Limiter {
	l, _ := redisLimiter(t, ratelimit.Options{Budget: 5 * time.Second})
	return l
}

func redisLimiter(t *testing.T, opts ratelimit.Options) (*ratelimit.Limiter, *redistest.Server) {
	rs := redistest.StartRedis(t)
	client, err := redisstore.NewClient(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return ratelimit.New(redisstore.New(client, redisstore.Options{}), opts), rs
}
