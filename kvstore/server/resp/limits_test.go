package resp_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// These tests hold on both connection paths (TestMain runs the suite on
// each): the timeouts and the drain are enforced by connserver's deadlines
// on one and by the event loop's own checks on the other.

// clientCount is the number of connections CLIENT LIST shows.
func clientCount(t *testing.T, c *raw) int {
	t.Helper()
	c.send("CLIENT LIST\r\n")
	hdr := c.line()
	n, err := strconv.Atoi(strings.TrimSpace(hdr[1:]))
	if err != nil {
		t.Fatalf("CLIENT LIST header %q", hdr)
	}
	body := make([]byte, n+2) // the lines, then the bulk's CRLF
	for got := 0; got < len(body); {
		m, err := c.r.Read(body[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += m
	}
	return strings.Count(string(body[:n]), "\n")
}

func waitClients(t *testing.T, c *raw, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := clientCount(t, c)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections after %v, want %d", n, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServer_AReaderThatNeverReadsIsClosedAfterTheWriteTimeout(t *testing.T) {
	db := servertest.OpenDB(t)
	if err := db.Set([]byte("big"), []byte(strings.Repeat("x", 512<<10))); err != nil {
		t.Fatal(err)
	}
	addr := start(t, db, resp.Options{WriteTimeout: 300 * time.Millisecond})
	watcher := dialRaw(t, addr)
	stuck := dialRaw(t, addr)
	// 400 replies of 512 KiB: far more than the socket buffers hold.
	stuck.send(strings.Repeat("GET big\r\n", 400))
	waitClients(t, watcher, 2, 2*time.Second)
	waitClients(t, watcher, 1, 5*time.Second)
}

func TestServer_AClientThatSendsNothingIsClosedAfterTheHandshakeTimeout(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{HandshakeTimeout: 300 * time.Millisecond, IdleTimeout: time.Hour})
	watcher := dialRaw(t, addr)
	watcher.send("PING\r\n")
	watcher.line()
	silent := dialRaw(t, addr)
	start := time.Now()
	if !silent.closed() {
		t.Fatal("not closed")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("closed after %v, want about 300ms", d)
	}
	// The watcher, past its handshake, stays (the idle timeout is an hour).
	time.Sleep(400 * time.Millisecond)
	watcher.send("PING\r\n")
	if got := watcher.line(); got != "+PONG\r\n" {
		t.Fatalf("watcher got %q", got)
	}
}

func TestShutdown_AnswersWhatItRanClosesTheRestAndEveryAcknowledgedWriteIsStored(t *testing.T) {
	dir := t.TempDir()
	db, err := kvstore.Open(dir, kvstore.Options{Sync: kvstore.SyncAlways, Logger: servertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	opts := resp.Options{Logger: servertest.Logger(t)}
	if v, ok := os.LookupEnv(eventLoopEnv); ok {
		opts.GoroutinePerConn = v == "0"
	}
	srv := resp.NewServer(db, opts)
	ln := servertest.Listen(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	idle := dialRaw(t, ln.Addr().String())
	idle.send("PING\r\n")
	idle.line()
	busy := dialRaw(t, ln.Addr().String())
	const n = 2000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "SET k%d v\r\n", i)
	}
	busy.send(b.String())
	if got := busy.line(); got != "+OK\r\n" {
		t.Fatalf("first reply %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; !resp.IsClosed(err) {
		t.Fatalf("Serve returned %v", err)
	}
	if !idle.closed() {
		t.Fatal("idle connection not closed by the drain")
	}
	acked := 1
	for {
		l, err := busy.r.ReadString('\n')
		if err != nil {
			break
		}
		if l != "+OK\r\n" {
			t.Fatalf("reply %q", l)
		}
		acked++
	}
	var keys []string
	for i := range acked {
		keys = append(keys, "k"+strconv.Itoa(i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = kvstore.Open(dir, kvstore.Options{Logger: servertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range keys {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != "v" {
			t.Fatalf("acknowledged %s (of %d) is %q, %v", k, acked, v, err)
		}
	}
	t.Logf("%d of %d pipelined SETs answered before the drain closed the connection", acked, n)
}

// A client that pipelines strict SETs and resets the connection without
// reading a reply must cost only itself: its acknowledged-or-not writes are
// awaited (the round's group still commits), its place is released, and
// the next client is served. (Such a connection is closed by its failed
// reply write: with that close removed, the dead clients stay listed.)
func TestServer_AClientThatPipelinesThenDiesLeavesTheServerServing(t *testing.T) {
	db, err := kvstore.Open(t.TempDir(), kvstore.Options{Sync: kvstore.SyncAlways, Logger: servertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	addr := start(t, db, resp.Options{})
	for round := range 5 {
		dying := dialRaw(t, addr)
		var burst strings.Builder
		for i := range 2000 {
			fmt.Fprintf(&burst, "*3\r\n$3\r\nSET\r\n$8\r\nk%d-%05d\r\n$1\r\nv\r\n", round, i)
		}
		dying.send(burst.String())
		if round%2 == 1 {
			dying.Conn.(*net.TCPConn).SetLinger(0) // close with a reset
		}
		dying.Close()
	}
	other := dialRaw(t, addr)
	deadline := time.Now().Add(10 * time.Second)
	for n := clientCount(t, other); n != 1; n = clientCount(t, other) {
		if time.Now().After(deadline) {
			t.Fatalf("%d clients listed: the dead ones are still counted", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	other.send("*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n1\r\n*2\r\n$3\r\nGET\r\n$5\r\nafter\r\n")
	if got := other.line() + other.line() + other.line(); got != "+OK\r\n$1\r\n1\r\n" {
		t.Fatalf("after the dead clients: %q", got)
	}
}

// The hard limits on a transaction, on WATCH and on a command's arguments
// are options (and devkit kv serve flags), answered with Redis-shaped
// errors: a refused queued command aborts the EXEC, as Redis's queue-time
// errors do; too many arguments is Redis's protocol error and a close.
func TestLimits_QueuedWatchedAndArgumentsAreConfigurable(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{MaxQueuedCommands: 3, MaxWatchedKeys: 2, MaxArgs: 5})
	c := dialRaw(t, addr)
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			if got := c.line(); got != w+"\r\n" {
				t.Fatalf("got %q, want %q", got, w)
			}
		}
	}
	c.send("WATCH a b\r\nWATCH c\r\nWATCH a\r\nUNWATCH\r\n")
	expect("+OK", "-ERR max watched keys reached: a connection watches at most 2 (devkit kv serve --max-watched-keys)", "+OK", "+OK")
	c.send("MULTI\r\nSET a 1\r\nSET b 2\r\nSET c 3\r\nSET d 4\r\nEXEC\r\n")
	expect("+OK", "+QUEUED", "+QUEUED", "+QUEUED",
		"-ERR max queued commands reached: a transaction holds at most 3 (devkit kv serve --max-queued-commands)",
		"-EXECABORT Transaction discarded because of previous errors.")
	c.send("MULTI\r\nSET a 1\r\nEXEC\r\n")
	expect("+OK", "+QUEUED", "*1", "+OK")
	c.send("MSET a 1 b 2\r\n")
	expect("+OK")
	c.send("*7\r\n$4\r\nMSET\r\n")
	expect("-ERR Protocol error: invalid multibulk length")
	if !c.closed() {
		t.Fatal("the connection is open after the protocol error")
	}
}
