package tcpjson_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/metrics"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// start serves store on a fresh port and shuts the server down at cleanup.
func start(t *testing.T, store backend.Store, opts tcpjson.Options) (*tcpjson.Server, string) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = servertest.Logger(t)
	}
	srv := tcpjson.NewServer(store, opts)
	return srv, servertest.Serve(t, srv)
}

func dial(t *testing.T, addr string) *tcpjson.Client {
	t.Helper()
	c, err := tcpjson.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a line-level connection for speaking the protocol by hand.
type rawConn struct {
	t testing.TB
	net.Conn
	r *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, Conn: c, r: bufio.NewReaderSize(c, 1<<20)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) reply() map[string]any {
	c.t.Helper()
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("reply %q: %v", line, err)
	}
	return m
}

func TestClient_SetGetDeleteRoundTrip(t *testing.T) {
	db := servertest.OpenDB(t)
	_, addr := start(t, db, tcpjson.Options{})
	c := dial(t, addr)
	ctx := context.Background()

	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ key, value []byte }{
		{[]byte("user:1"), []byte("alice")},
		{[]byte("empty"), []byte{}},
		{[]byte{0xff, 0x00, 'k'}, []byte{0x00, 0xfe, 0xff, '\n', '"'}},
		{[]byte("line\nbreak"), []byte("ünïcødé \u2028")},
	}
	for _, tc := range cases {
		if err := c.Set(ctx, tc.key, tc.value); err != nil {
			t.Fatalf("Set(%q): %v", tc.key, err)
		}
		got, err := c.Get(ctx, tc.key)
		if err != nil || !bytes.Equal(got, tc.value) {
			t.Fatalf("Get(%q) = %q, %v; want %q", tc.key, got, err, tc.value)
		}
		inEngine, err := db.Get(tc.key)
		if err != nil || !bytes.Equal(inEngine, tc.value) {
			t.Fatalf("engine has %q, %v for %q", inEngine, err, tc.key)
		}
	}
	existed, err := c.Delete(ctx, []byte("user:1"))
	if err != nil || !existed {
		t.Fatalf("Delete = %v, %v; want true", existed, err)
	}
	existed, err = c.Delete(ctx, []byte("user:1"))
	if err != nil || existed {
		t.Fatalf("second Delete = %v, %v; want false", existed, err)
	}
	if _, err := c.Get(ctx, []byte("user:1")); !errors.Is(err, kvstore.ErrNotFound) {
		t.Fatalf("Get deleted key: %v, want ErrNotFound", err)
	}
	st, err := c.Stats(ctx)
	if err != nil || st.Keys != 3 || st.Sets != 4 {
		t.Fatalf("Stats = %+v, %v; want 3 keys, 4 sets", st, err)
	}
}

func TestClient_EngineErrorsMatchSentinels(t *testing.T) {
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncNone, MaxKeySize: 8, MaxValueSize: 16})
	_, addr := start(t, db, tcpjson.Options{})
	c := dial(t, addr)
	ctx := context.Background()
	for _, tc := range []struct {
		key, value string
		want       error
	}{
		{"", "v", kvstore.ErrEmptyKey},
		{"123456789", "v", kvstore.ErrKeyTooLarge},
		{"k", strings.Repeat("v", 17), kvstore.ErrValueTooLarge},
	} {
		if err := c.Set(ctx, []byte(tc.key), []byte(tc.value)); !errors.Is(err, tc.want) {
			t.Errorf("Set(%q, %d bytes) = %v, want %v", tc.key, len(tc.value), err, tc.want)
		}
	}
	// The connection lives on after the errors.
	if err := c.Set(ctx, []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
}

func TestClient_KeysPagesThroughEveryKeyOnce(t *testing.T) {
	db := servertest.OpenDB(t)
	_, addr := start(t, db, tcpjson.Options{MaxScanLimit: 7})
	c := dial(t, addr)
	ctx := context.Background()
	for i := range 50 {
		db.Set(fmt.Appendf(nil, "user:%03d", i), []byte("x"))
		db.Set(fmt.Appendf(nil, "order:%03d", i), []byte("x"))
	}
	db.Set([]byte{'u', 's', 'e', 'r', ':', 0xff}, []byte("binary key"))

	var got []string
	after := []byte(nil)
	pages := 0
	for {
		page, err := c.Keys(ctx, kvstore.ScanOptions{Prefix: []byte("user:"), After: after, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Keys) > 7 {
			t.Fatalf("page of %d keys, over MaxScanLimit 7", len(page.Keys))
		}
		for _, k := range page.Keys {
			got = append(got, string(k))
		}
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	if len(got) != 51 || pages != 8 {
		t.Fatalf("got %d keys in %d pages, want 51 in 8", len(got), pages)
	}
	if got[0] != "user:000" || got[50] != "user:\xff" {
		t.Fatalf("first %q last %q", got[0], got[50])
	}
}

func TestServer_SeedCompatibleLines(t *testing.T) {
	_, addr := start(t, servertest.OpenDB(t), tcpjson.Options{})
	c := dialRaw(t, addr)
	c.send(`{"op":"set","key":"k","value":"v"}` + "\n")
	if m := c.reply(); m["ok"] != true || m["error"] != nil {
		t.Fatalf("set reply %v", m)
	}
	c.send(`{"op":"get","key":"k"}` + "\n")
	if m := c.reply(); m["ok"] != true || m["found"] != true || m["value"] != "v" {
		t.Fatalf("get reply %v", m)
	}
	c.send(`{"op":"get","key":"missing"}` + "\n")
	if m := c.reply(); m["ok"] != true || m["found"] != false {
		t.Fatalf("get missing reply %v", m)
	}
	c.send(`{"op":"ping"}` + "\r\n")
	if m := c.reply(); m["ok"] != true {
		t.Fatalf("ping reply %v", m)
	}
}

func TestServer_PipelinedRepliesComeInRequestOrder(t *testing.T) {
	_, addr := start(t, servertest.OpenDB(t), tcpjson.Options{})
	c := dialRaw(t, addr)
	var batch strings.Builder
	const n = 500
	for i := range n {
		fmt.Fprintf(&batch, `{"id":%d,"op":"set","key":"k%d","value":"v%d"}`+"\n", i, i, i)
		fmt.Fprintf(&batch, `{"id":%d,"op":"get","key":"k%d"}`+"\n", n+i, i)
	}
	c.send(batch.String())
	for i := range n {
		if m := c.reply(); m["id"] != float64(i) || m["ok"] != true {
			t.Fatalf("reply %d: %v", i, m)
		}
		if m := c.reply(); m["id"] != float64(n+i) || m["value"] != fmt.Sprintf("v%d", i) {
			t.Fatalf("reply %d: %v", n+i, m)
		}
	}
}

func TestServer_BadRequestsGetPreciseErrorsAndConnectionLivesOn(t *testing.T) {
	_, addr := start(t, servertest.OpenDB(t), tcpjson.Options{MaxLineBytes: 1 << 10})
	c := dialRaw(t, addr)
	for _, tc := range []struct{ line, code string }{
		{"garbage\n", tcpjson.CodeBadJSON},
		{"{\"op\":\n", tcpjson.CodeBadJSON},
		{"[1,2,3]\n", tcpjson.CodeBadJSON},
		{`{"op":"frobnicate"}` + "\n", tcpjson.CodeUnknownOp},
		{`{"key":"k"}` + "\n", tcpjson.CodeBadRequest},
		{`{"op":"set","key":"k"}` + "\n", tcpjson.CodeBadRequest},
		{`{"op":"set","key":"","value":"v"}` + "\n", backend.CodeEmptyKey},
		{`{"op":"set","key_b64":"!!!","value":"v"}` + "\n", tcpjson.CodeBadJSON},
		{`{"op":"keys","limit":-1}` + "\n", tcpjson.CodeBadRequest},
		{`{"op":"set","key":"k","value":"` + strings.Repeat("x", 2000) + "\"}\n", tcpjson.CodeLineTooLong},
	} {
		c.send(tc.line)
		m := c.reply()
		if m["ok"] != false || m["code"] != tc.code || m["error"] == "" {
			t.Errorf("%.40q: reply %v, want code %s", tc.line, m, tc.code)
		}
	}
	c.send(`{"op":"set","key":"k","value":"after errors"}` + "\n" + `{"op":"get","key":"k"}` + "\n")
	c.reply()
	if m := c.reply(); m["value"] != "after errors" {
		t.Fatalf("connection did not live on: %v", m)
	}
}

func TestServer_HundredMegabyteLineIsRefusedAndConnectionLivesOn(t *testing.T) {
	_, addr := start(t, servertest.OpenDB(t), tcpjson.Options{})
	c := dialRaw(t, addr)
	other := dial(t, addr)
	sent := make(chan error, 1)
	go func() {
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			_, err = c.Write(chunk)
		}
		if err == nil {
			_, err = c.Write([]byte("\n" + `{"op":"ping"}` + "\n"))
		}
		sent <- err
	}()
	// Others are served while the long line streams in.
	if err := other.Set(context.Background(), []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if m := c.reply(); m["code"] != tcpjson.CodeLineTooLong {
		t.Fatalf("reply %v, want line_too_long", m)
	}
	if m := c.reply(); m["ok"] != true || m["value"] != "pong" {
		t.Fatalf("ping after the long line: %v", m)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

func TestServer_SilentAndHalfDoneClientsDoNotStopOthers(t *testing.T) {
	db := servertest.OpenDB(t)
	m := metrics.New(db)
	_, addr := start(t, db, tcpjson.Options{IdleTimeout: 300 * time.Millisecond, Metrics: m})

	silent := dialRaw(t, addr) // connects and sends nothing
	half := dialRaw(t, addr)
	half.send(`{"op":"set","key":"half","val`)
	half.Close() // disconnects mid-request

	c := dial(t, addr)
	if err := c.Set(context.Background(), []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	// The idle connection is closed by the server.
	silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.r.ReadByte(); err == nil {
		t.Fatal("silent connection got data instead of being closed")
	} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("silent connection was not closed by the idle timeout")
	}
	if _, err := db.Get([]byte("half")); !errors.Is(err, kvstore.ErrNotFound) {
		t.Fatalf("half-sent request was applied: %v", err)
	}
	waitFor(t, func() bool { return m.Snapshot().Transports["tcp"].OpenConnections == 0 }, "every connection to close")
	if got := m.Snapshot().Transports["tcp"].AcceptedConns; got != 3 {
		t.Fatalf("accepted %d connections, want 3", got)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServer_PerAddressLimitTurnsAwayExtraClients(t *testing.T) {
	_, addr := start(t, servertest.OpenDB(t), tcpjson.Options{MaxConns: 10, MaxConnsPerIP: 2})
	a, b := dial(t, addr), dial(t, addr)
	ctx := context.Background()
	for _, c := range []*tcpjson.Client{a, b} {
		if err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	extra := dialRaw(t, addr)
	if m := extra.reply(); m["code"] != tcpjson.CodeTooManyConn {
		t.Fatalf("third connection from one address got %v, want too_many_connections", m)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	other, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	io.WriteString(other, `{"op":"ping"}`+"\n")
	if line, err := bufio.NewReader(other).ReadString('\n'); err != nil || !strings.Contains(line, "pong") {
		t.Fatalf("another address was turned away: %q %v", line, err)
	}
	a.Close()
	waitFor(t, func() bool {
		c, err := tcpjson.Dial(ctx, addr)
		if err != nil {
			return false
		}
		defer c.Close()
		return c.Ping(ctx) == nil
	}, "a slot to free up")
}

func TestServer_AtTheLimitTheLongestIdleConnectionMakesRoom(t *testing.T) {
	_, addr := start(t, servertest.OpenDB(t), tcpjson.Options{MaxConns: 2, MaxConnsPerIP: -1})
	ctx := context.Background()
	a := dial(t, addr)
	if err := a.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	b := dial(t, addr)
	if err := b.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr)
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("a new client at the limit was not admitted: %v", err)
	}
	if err := a.Ping(ctx); err == nil {
		t.Fatal("the longest idle connection was not the one closed")
	}
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("a younger connection was closed: %v", err)
	}
}

func TestServer_FirstRequestMustArriveWithinTheHandshakeTimeout(t *testing.T) {
	_, addr := start(t, servertest.OpenDB(t), tcpjson.Options{HandshakeTimeout: 200 * time.Millisecond})
	slow := dialRaw(t, addr)
	io.WriteString(slow.Conn, `{"op":"pi`)
	start := time.Now()
	if _, err := slow.r.ReadString('\n'); err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("a silent new connection was kept %v (%v)", time.Since(start), err)
	}
	// After its first request a connection gets the idle timeout instead.
	ok := dial(t, addr)
	if err := ok.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := ok.Ping(context.Background()); err != nil {
		t.Fatalf("a connection that had sent a request was closed by the handshake timeout: %v", err)
	}
}

func TestServer_PanicBecomesInternalErrorAndConnectionLivesOn(t *testing.T) {
	db := servertest.OpenDB(t)
	_, addr := start(t, servertest.PanickyStore{Store: db}, tcpjson.Options{})
	c := dial(t, addr)
	ctx := context.Background()
	err := c.Set(ctx, []byte(servertest.PanicKey), []byte("v"))
	var se *tcpjson.Error
	if !errors.As(err, &se) || se.Code != backend.CodeInternal {
		t.Fatalf("Set on the panicking key = %v, want an internal error", err)
	}
	if err := c.Set(ctx, []byte("k"), []byte("v")); err != nil {
		t.Fatalf("connection did not live on: %v", err)
	}
}

func TestServer_ShutdownKeepsEveryAcknowledgedWrite(t *testing.T) {
	dir := t.TempDir()
	db, err := kvstore.Open(dir, kvstore.Options{Sync: kvstore.SyncAlways, Logger: servertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := tcpjson.NewServer(db, tcpjson.Options{Logger: servertest.Logger(t)})
	ln := servertest.Listen(t)
	go srv.Serve(ln)

	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := tcpjson.Dial(context.Background(), ln.Addr().String())
			if err != nil {
				return
			}
			defer c.Close()
			for i := 0; ; i++ {
				key := fmt.Sprintf("w%d:%d", w, i)
				if err := c.Set(context.Background(), []byte(key), []byte(key)); err != nil {
					return // the server went away
				}
				mu.Lock()
				acked = append(acked, key)
				mu.Unlock()
			}
		}()
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) > 200 }, "writes to flow")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	servertest.CheckAcknowledged(t, db, dir, acked)
	t.Logf("%d acknowledged writes all present after restart", len(acked))
}

func TestServer_RepliesAreNotHeldWhileTheNextLineIsIncomplete(t *testing.T) {
	_, addr := start(t, servertest.OpenDB(t), tcpjson.Options{})
	c := dialRaw(t, addr)
	c.send(`{"op":"ping"}` + "\n" + `{"op":"pi`)
	if m := c.reply(); m["value"] != "pong" {
		t.Fatalf("reply %v", m)
	}
	c.send(`ng"}` + "\n")
	if m := c.reply(); m["value"] != "pong" {
		t.Fatalf("reply %v", m)
	}
}

func TestProtocol_InvalidUTF8IsRefusedNotMangled(t *testing.T) {
	db := servertest.OpenDB(t)
	_, addr := start(t, db, tcpjson.Options{})
	c := dialRaw(t, addr)
	for _, line := range []string{
		"{\"op\":\"set\",\"key\":\"k\",\"value\":\"a\xffb\"}\n",
		"{\"op\":\"set\",\"key\":\"k\xc3\",\"value\":\"v\"}\n",
		`{"op":"set","key":"k","value":"\ud800"}` + "\n",
		`{"op":"set","key":"k","value":"x\udc00y"}` + "\n",
		`{"op":"set","key":"k","value":"\ud800\u0041"}` + "\n",
	} {
		c.send(line)
		m := c.reply()
		if m["ok"] != false || m["code"] != tcpjson.CodeInvalidUTF8 || !strings.Contains(fmt.Sprint(m["error"]), "value_b64") {
			t.Errorf("%q: got %v, want invalid_utf8 naming value_b64", line, m)
		}
	}
	if db.Len() != 0 {
		t.Fatalf("an invalid request stored %d keys", db.Len())
	}
	// Valid escapes, a surrogate pair, a literal U+FFFD and an escaped backslash before u pass.
	c.send(`{"op":"set","key":"k","value":"\u00e9 \ud83d\ude00 ` + "\uFFFD" + ` \\ud800"}` + "\n")
	if m := c.reply(); m["ok"] != true {
		t.Fatalf("valid request refused: %v", m)
	}
	if v, _ := db.Get([]byte("k")); string(v) != "é 😀 \uFFFD \\ud800" {
		t.Fatalf("stored %q", v)
	}
	// Binary values travel as value_b64 and come back byte for byte.
	bin := []byte{0xff, 0x00, 0xc3}
	cl := dial(t, addr)
	if err := cl.Set(context.Background(), []byte("bin"), bin); err != nil {
		t.Fatal(err)
	}
	if v, err := cl.Get(context.Background(), []byte("bin")); err != nil || !bytes.Equal(v, bin) {
		t.Fatalf("binary round trip: %q %v", v, err)
	}
}
