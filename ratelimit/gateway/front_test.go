package gateway_test

// Attacks on the gateway's HTTP/1.1 front, over real sockets: request
// smuggling, oversized and slow heads, pipelining (answered in order, or
// abandoned by a client that dies), HEAD, 100-continue, protocol upgrades
// and streaming through the proxy.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// pathRecorder is an upstream that answers with the path it was asked for
// and remembers every request line it saw.
type pathRecorder struct {
	mu    sync.Mutex
	paths []string
	body  []string
}

func (u *pathRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.paths = append(u.paths, r.Method+" "+r.URL.Path)
	u.body = append(u.body, string(b))
	u.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "path="+r.URL.Path)
}

func (u *pathRecorder) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.paths...)
}

const openTestPolicy = "rules:\n  - {name: limited, paths: [/limited], key: [ip], limits: [{limit: 1, window: 1h}]}\n" +
	"  - {name: api, paths: [/], key: [ip], limits: [{limit: 1000000, window: 1h}]}\n"

func startFrontGateway(t *testing.T, cfg gateway.Config) (*gateway.Server, *pathRecorder) {
	t.Helper()
	up := &pathRecorder{}
	upstream := httptest.NewUnstartedServer(up)
	// No upstream keep-alive: the gateway's goroutines are its clients' only.
	upstream.Config.SetKeepAlivesEnabled(false)
	upstream.Start()
	t.Cleanup(upstream.Close)
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	return startGateway(t, upstream.URL, openTestPolicy, cfg), up
}

// exchange writes raw to the gateway and reads every answer until the
// gateway closes the connection (or 3 s pass): the status codes in order.
func exchange(t *testing.T, addr, raw string) (codes []int, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(conn)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			return codes, !(errorsAs(err, &ne) && ne.Timeout())
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
}

func errorsAs(err error, target *net.Error) bool {
	ne, ok := err.(net.Error) //nolint:errorlint // a read error from a conn is the net.Error itself
	if ok {
		*target = ne
	}
	return ok
}

// Heads a peer (a cache, a second proxy, the upstream) may frame otherwise
// never get a request to the upstream uncounted. net/http refuses some
// (two lengths, two Hosts, a bad field name), the gateway refuses the
// HTTP/2 preface in clear text, each with the connection closed so nothing
// behind is read. The others net/http frames one way (Transfer-Encoding
// over Content-Length, obs-fold joined, a bare LF as a line end, no body
// for HTTP/1.0): what follows is read as the next request, which goes
// through the limit like any other. The request hidden behind each is for
// /limited, spent: it is refused or answered 429, and never reaches the
// upstream.
func TestFront_SmugglingHeadsRefusedOrCounted(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{})
	spend(t, srv.Addr())
	const smuggled = "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, c := range []struct {
		name, head string
		want       []int
	}{
		{"CL and TE", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", []int{200, 429}},
		{"TE and CL", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\ncontent-length: 40\r\n\r\n0\r\n\r\n", []int{200, 429}},
		{"two different CL", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 38\r\n\r\n", []int{400}},
		{"obs-fold", "GET /a HTTP/1.1\r\nHost: x\r\nX-Long: a\r\n b\r\n\r\n", []int{200, 429}},
		{"obs-fold of TE", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-Pad: x\r\n\tTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", []int{200, 429}},
		{"bare LF", "GET /a HTTP/1.1\nHost: x\n\n", []int{200, 429}},
		{"bare LF inside", "GET /a HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n", []int{200, 429}},
		{"HTTP/1.0 with TE", "POST /a HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n", []int{200, 429}},
		{"two Host", "GET /a HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", []int{400}},
		{"no Host", "GET /a HTTP/1.1\r\n\r\n", []int{400}},
		{"TE not chunked", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", []int{501}},
		{"space before colon", "GET /a HTTP/1.1\r\nHost: x\r\nContent-Length : 38\r\n\r\n", []int{400}},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", []int{505}},
	} {
		t.Run(c.name, func(t *testing.T) {
			codes, closed := exchange(t, srv.Addr(), c.head+smuggled+closeProbe)
			if len(c.want) > 1 {
				c.want = append(c.want, 429) // closeProbe
			}
			if fmt.Sprint(codes) != fmt.Sprint(c.want) || !closed {
				t.Errorf("answers %v, closed %v: want %v and the connection closed", codes, closed, c.want)
			}
		})
	}
	for _, seen := range up.seen()[1:] {
		if seen != "GET /a" && seen != "POST /a" {
			t.Errorf("the upstream saw %q: want only /a", seen)
		}
	}
}

// A request head over the limit is answered 431 and the connection closed.
func TestFront_OversizedHeadIs431(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{})
	big := "GET /a HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 80<<10) + "\r\n\r\n"
	codes, closed := exchange(t, srv.Addr(), big)
	if len(codes) != 1 || codes[0] != http.StatusRequestHeaderFieldsTooLarge || !closed {
		t.Errorf("answers %v, closed %v: want one 431 and the connection closed", codes, closed)
	}
	many := "GET /a HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Many: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 3000) + "\r\n"
	if codes, _ := exchange(t, srv.Addr(), many); len(codes) != 1 || codes[0] != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("3000 fields: answers %v, want one 431", codes)
	}
	if seen := up.seen(); len(seen) != 0 {
		t.Errorf("the upstream saw %v", seen)
	}
}

// trickleUntilCut sends head a byte every 20 ms (well within any idle
// timeout), for at most 5 s, and reports whether the gateway cut the
// connection meanwhile or within a second after.
func trickleUntilCut(conn net.Conn, head string) bool {
	start := time.Now()
	for i := 0; i < len(head) && time.Since(start) < 5*time.Second; i++ {
		if _, err := conn.Write([]byte{head[i]}); err != nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn.SetReadDeadline(time.Now().Add(time.Second))
	_, err := conn.Read(make([]byte, 1))
	return err != nil && !isTimeout(err)
}

// A client that sends its head a byte at a time (slowloris) is cut off at
// the header timeout, although every byte comes well within the idle
// timeout, and never reaches the upstream.
func TestFront_SlowlorisCutAtHeaderTimeout(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: time.Minute})
	conn := dialClient(t, srv.Addr())
	head := "GET /a HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200)
	start := time.Now()
	if !trickleUntilCut(conn, head) {
		t.Fatalf("a head sent over %v was never cut off (header timeout 300ms)", time.Since(start).Round(time.Millisecond))
	}
	if seen := up.seen(); len(seen) != 0 {
		t.Errorf("the upstream saw %v", seen)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errorsAs(err, &ne) && ne.Timeout()
}

// Requests pipelined in one write are answered in order, denials and
// HEAD among them, on the one connection.
func TestFront_PipelinedRequestsAnsweredInOrder(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{})
	conn := dialClient(t, srv.Addr())
	type step struct{ method, path, body string }
	steps := []step{{"GET", "/p/0", "path=/p/0"}, {"GET", "/limited", "path=/limited"}, {"GET", "/limited", ""},
		{"HEAD", "/p/1", ""}, {"POST", "/p/2", "path=/p/2"}, {"GET", "/limited", ""}, {"GET", "/p/3", "path=/p/3"}}
	var raw strings.Builder
	for _, s := range steps {
		if s.method == "POST" {
			fmt.Fprintf(&raw, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\npayload", s.path)
		} else {
			fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\nHost: x\r\n\r\n", s.method, s.path)
		}
	}
	io.WriteString(conn, raw.String())
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	for i, s := range steps {
		resp, err := http.ReadResponse(br, &http.Request{Method: s.method})
		if err != nil {
			t.Fatalf("answer %d (%s %s): %v", i, s.method, s.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wantCode := 200
		if s.path == "/limited" && s.body == "" {
			wantCode = 429
		}
		if resp.StatusCode != wantCode || (wantCode == 200 && string(body) != s.body) {
			t.Fatalf("answer %d (%s %s): %d %q, want %d %q", i, s.method, s.path, resp.StatusCode, body, wantCode, s.body)
		}
		if s.method == "HEAD" && (len(body) != 0 || resp.ContentLength != int64(len("path=/p/1"))) {
			t.Fatalf("HEAD: body %q, Content-Length %d", body, resp.ContentLength)
		}
	}
}

// A client that pipelines many requests and dies without reading leaves
// nothing behind: its connection's goroutines end and the gateway serves
// the next client.
func TestFront_ClientThatPipelinesThenDiesLeavesNothingBehind(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{})
	if resp, err := http.Get("http://" + srv.Addr() + "/warm"); err == nil {
		resp.Body.Close()
	}
	base := runtime.NumGoroutine()
	for round := 0; round < 20; round++ {
		conn, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		var raw strings.Builder
		for i := 0; i < 200; i++ {
			fmt.Fprintf(&raw, "GET /p/%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
			if i%3 == 0 {
				raw.WriteString("GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
			}
		}
		io.WriteString(conn, raw.String())
		conn.(*net.TCPConn).SetLinger(0) // dies with a reset, unread answers and all
		conn.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before the dead clients:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
	resp, err := http.Get("http://" + srv.Addr() + "/after")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "path=/after" {
		t.Fatalf("after the dead clients: %d %q", resp.StatusCode, body)
	}
}

// HEAD gets the fields of GET and no body, allowed or denied, and the
// connection goes on with the next request framed right.
func TestFront_HEADHasNoBodyAndKeepsTheConnection(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{})
	conn := dialClient(t, srv.Addr())
	br := bufio.NewReader(conn)
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	for i, c := range []struct {
		method, path string
		code         int
	}{{"GET", "/limited", 200}, {"HEAD", "/limited", 429}, {"HEAD", "/a", 200}, {"GET", "/b", 200}} {
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\n\r\n", c.method, c.path)
		resp, err := http.ReadResponse(br, &http.Request{Method: c.method})
		if err != nil {
			t.Fatalf("%d %s %s: %v", i, c.method, c.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || (c.method == "HEAD" && len(body) != 0) || (c.method == "HEAD" && resp.ContentLength <= 0) {
			t.Fatalf("%s %s: %d, Content-Length %d, body %q", c.method, c.path, resp.StatusCode, resp.ContentLength, body)
		}
	}
	// Nothing of a HEAD body was sent: the connection has nothing more.
	conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _ := br.Read(make([]byte, 1)); n != 0 {
		t.Fatal("bytes after the last answer: a HEAD body leaked")
	}
}

// Expect: 100-continue: an allowed request gets its 100 Continue and the
// body reaches the upstream; a denied one gets its 429 without a 100, its
// body never sent, and the connection closed (nothing of it is ever read
// as a request).
func TestFront_ExpectContinue(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{})
	for _, path := range []string{"/limited", "/limited"} {
		conn, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n", path)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusContinue {
			io.WriteString(conn, "hello world")
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode == http.StatusContinue {
				t.Fatal("a second 100 Continue")
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("after 100 Continue: %d", resp.StatusCode)
			}
		} else {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 429 || !resp.Close {
				t.Fatalf("denied: %d, close %v: want 429 and Connection: close", resp.StatusCode, resp.Close)
			}
		}
		conn.Close()
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.body) != 1 || up.body[0] != "hello world" {
		t.Fatalf("the upstream got bodies %q: want the allowed one only", up.body)
	}
}

// A body the handler never read (a denial) is drained, so the request
// pipelined behind it is read as a request, not the body as one.
func TestFront_UnreadBodyDrainedBeforeTheNextRequest(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{})
	body := "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	raw := "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n" +
		fmt.Sprintf("POST /limited HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body) +
		"GET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	codes, _ := exchange(t, srv.Addr(), raw)
	if fmt.Sprint(codes) != "[200 429 200]" {
		t.Fatalf("answers %v, want [200 429 200]", codes)
	}
	if seen := fmt.Sprint(up.seen()); seen != "[GET /limited GET /next]" {
		t.Fatalf("the upstream saw %s", seen)
	}
}

// An Upgrade (WebSocket's handshake) goes through the proxy: the 101 comes
// back and bytes flow both ways on the switched connection.
func TestFront_UpgradeThroughTheProxy(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "want Upgrade: echo", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		buf := make([]byte, 64)
		for {
			n, err := brw.Read(buf)
			if err != nil {
				return
			}
			conn.Write([]byte(strings.ToUpper(string(buf[:n]))))
		}
	}))
	defer upstream.Close()
	srv := startGateway(t, upstream.URL, openTestPolicy, gateway.Config{Logger: discardLogger()})
	conn := dialClient(t, srv.Addr())
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %d", resp.StatusCode)
	}
	for _, msg := range []string{"ping", "second"} {
		io.WriteString(conn, msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(br, got); err != nil {
			t.Fatal(err)
		}
		if string(got) != strings.ToUpper(msg) {
			t.Fatalf("echo %q, want %q", got, strings.ToUpper(msg))
		}
	}
}

// A streaming upstream (server-sent events) reaches the client event by
// event: the first is read while the upstream still holds the second.
func TestFront_StreamingUpstreamFlushedAsItComes(t *testing.T) {
	release := make(chan struct{})
	var released atomic.Bool
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		io.WriteString(w, "data: second\n\n")
	}))
	defer upstream.Close()
	defer func() {
		if released.CompareAndSwap(false, true) {
			close(release)
		}
	}()
	srv := startGateway(t, upstream.URL, openTestPolicy, gateway.Config{Logger: discardLogger()})
	resp, err := http.Get("http://" + srv.Addr() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || first != "data: first\n" {
		t.Fatalf("first event %q, %v", first, err)
	}
	if released.CompareAndSwap(false, true) {
		close(release)
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != "\ndata: second\n\n" || len(resp.TransferEncoding) == 0 {
		t.Fatalf("rest %q, transfer encoding %v", rest, resp.TransferEncoding)
	}
}

// HTTP/1.0: a request without keep-alive is answered and the connection
// closed; one asking for keep-alive keeps it, with a length on every answer.
func TestFront_HTTP10KeepAliveOnlyWhenAsked(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{})
	codes, closed := exchange(t, srv.Addr(), "GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n")
	if fmt.Sprint(codes) != "[200]" || !closed {
		t.Errorf("HTTP/1.0 without keep-alive: answers %v, closed %v: want one 200, then closed", codes, closed)
	}
	conn := dialClient(t, srv.Addr())
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	for i, path := range []string{"/c", "/limited", "/limited"} {
		fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", path)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("keep-alive request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.ContentLength < 0 || resp.Close || resp.Header.Get("Connection") != "keep-alive" {
			t.Fatalf("keep-alive request %d: %d, length %d, Connection %q", i, resp.StatusCode, resp.ContentLength, resp.Header.Get("Connection"))
		}
	}
}

// A stop lets the request in flight finish (its answer says
// Connection: close) and closes the idle connection at once; Serve then
// returns nil.
func TestFront_ShutdownDrainsTheRequestInFlight(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "done")
	}))
	defer upstream.Close()
	p := mustPolicy(t, openTestPolicy)
	srv, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", Upstream: upstream.URL, Policy: p,
		Limiter: newMemoryLimiter(), ShutdownTimeout: 3 * time.Second, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	idle := dialClient(t, srv.Addr())
	busy := dialClient(t, srv.Addr())
	busy.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(100 * time.Millisecond) // the request is with the upstream
	cancel()
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the request in flight was cut: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "done" || !resp.Close {
		t.Fatalf("in flight at stop: %d %q, close %v", resp.StatusCode, body, resp.Close)
	}
	idle.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("the idle connection was not closed: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve after a clean drain: %v", err)
	}
}

func mustPolicy(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newMemoryLimiter() *ratelimit.Limiter {
	return ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
}

// Trailers of a chunked upstream answer reach the client after the body.
func TestFront_TrailersPassThrough(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		w.WriteHeader(200)
		io.WriteString(w, "part one, ")
		w.(http.Flusher).Flush()
		io.WriteString(w, "part two")
		w.Header().Set("X-Checksum", "abc123")
	}))
	defer upstream.Close()
	srv := startGateway(t, upstream.URL, openTestPolicy, gateway.Config{Logger: discardLogger()})
	resp, err := http.Get("http://" + srv.Addr() + "/t")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "part one, part two" || resp.Trailer.Get("X-Checksum") != "abc123" {
		t.Fatalf("body %q, trailer %v", body, resp.Trailer)
	}
}

// A client that leaves while the upstream is still working cancels the
// upstream request (the front's CloseNotify, which ReverseProxy watches),
// and is counted as gone, not as an upstream error.
func TestFront_ClientGoneCancelsTheUpstreamRequest(t *testing.T) {
	canceled := make(chan struct{}, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			canceled <- struct{}{}
		case <-time.After(5 * time.Second):
		}
	}))
	defer upstream.Close()
	srv := startGateway(t, upstream.URL, openTestPolicy, gateway.Config{Admin: ":0", Logger: discardLogger()})
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(100 * time.Millisecond) // the request is with the upstream
	conn.Close()
	select {
	case <-canceled:
	case <-time.After(3 * time.Second):
		t.Fatal("the upstream request went on after its client left")
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		m, err := http.Get("http://" + srv.AdminAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(m.Body)
		m.Body.Close()
		if strings.Contains(string(body), "gateway_client_gone_total 1") && strings.Contains(string(body), "gateway_upstream_errors_total 0") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics after a client left:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dialClient connects to addr as a raw HTTP client, closed when the test ends.
func dialClient(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
