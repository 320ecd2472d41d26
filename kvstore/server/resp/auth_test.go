package resp_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// heapInUse is the process's live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Before AUTH a connection may send only small requests (Redis's bounds:
// 10 arguments, 16 KiB bulks); one that announces more is answered Redis's
// protocol error and closed before the payload is read, so connections that
// never authenticate cannot make the server hold memory. (Before the bound,
// each connection's 4 MiB was buffered while it waited for the rest of its
// 8 MiB bulk: 80 MiB of heap for 20 connections, and no reply.)
func TestAuth_UnauthenticatedClientsCannotMakeTheServerHoldMemory(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{Password: "s3cret"})
	const conns, payload = 20, 4 << 20
	base := heapInUse()
	raws := make([]*raw, conns)
	var wg sync.WaitGroup
	for i := range raws {
		c := dialRaw(t, addr)
		raws[i] = c
		hdr := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$8388608\r\n"
		if i%2 == 1 {
			hdr = "*1000000\r\n$3\r\nSET\r\n"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The server may close the connection mid-write: that is the point.
			io.WriteString(c, hdr+strings.Repeat("x", payload))
		}()
	}
	for i, c := range raws {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		want := "-ERR Protocol error: unauthenticated bulk length\r\n"
		if i%2 == 1 {
			want = "-ERR Protocol error: unauthenticated multibulk length\r\n"
		}
		if got, err := c.r.ReadString('\n'); got != want {
			t.Fatalf("connection %d: got %q (%v), want %q", i, got, err, want)
		}
	}
	grown := int64(heapInUse()) - int64(base)
	t.Logf("heap grew by %d KiB with %d unauthenticated connections each sending %d MiB", grown>>10, conns, payload>>20)
	if grown > 16<<20 {
		t.Fatalf("heap grew by %d MiB: the server buffers unauthenticated payloads", grown>>20)
	}
	for i, c := range raws {
		if !c.closed() {
			t.Fatalf("connection %d is still open after the protocol error", i)
		}
	}
	wg.Wait()

	// Within the bounds the request is served (NOAUTH), and after AUTH the
	// connection's limits are the server's own.
	c := dialRaw(t, addr)
	big := strings.Repeat("v", 100<<10)
	c.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16384\r\n" + big[:16384] + "\r\n")
	c.send("AUTH s3cret\r\n")
	c.send(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\nSTRLEN k\r\n", len(big), big))
	for _, want := range []string{"-NOAUTH Authentication required.\r\n", "+OK\r\n", "+OK\r\n", fmt.Sprintf(":%d\r\n", len(big))} {
		if got := c.line(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// Password guessing is slowed and a right password is not: pipelined wrong
// AUTHs get ten WRONGPASS replies, held longer and longer, and then the
// connection is closed; a right AUTH on a fresh connection from the same
// address is answered at once; and once the address has failed often, its
// next wrong guess, on a fresh connection, is held too. (Before, one
// pipelined connection had every one of its guesses answered at once.)
func TestAuth_GuessingIsSlowedAndClosedButARightPasswordIsNot(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{Password: "s3cret"})
	guesser := dialRaw(t, addr)
	begun := time.Now()
	guesser.send(strings.Repeat("AUTH guess\r\n", 50))
	wrong := 0
	for {
		guesser.SetReadDeadline(time.Now().Add(20 * time.Second))
		l, err := guesser.r.ReadString('\n')
		if err != nil {
			break
		}
		if l != "-WRONGPASS invalid username-password pair or user is disabled.\r\n" {
			t.Fatalf("got %q", l)
		}
		wrong++
	}
	held := time.Since(begun)
	t.Logf("%d wrong passwords answered in %v before the connection closed", wrong, held)
	if wrong != 10 {
		t.Fatalf("%d WRONGPASS replies before the close, want 10", wrong)
	}
	// 1+2+...+512 ms: the holds double from 1 ms.
	if held < time.Second {
		t.Fatalf("ten wrong passwords took %v, want the holds (over 1s)", held)
	}

	right := dialRaw(t, addr)
	begun = time.Now()
	right.send("AUTH s3cret\r\nPING\r\n")
	for _, want := range []string{"+OK\r\n", "+PONG\r\n"} {
		if got := right.line(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if d := time.Since(begun); d > time.Second {
		t.Fatalf("a right password on a fresh connection took %v", d)
	}

	// The address has 10 failures: a fresh connection's guess is held for
	// the 11th (over a second), not the 1 ms of a first failure.
	again := dialRaw(t, addr)
	begun = time.Now()
	again.send("AUTH guess\r\n")
	if got := again.line(); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Fatalf("got %q", got)
	}
	if d := time.Since(begun); d < time.Second {
		t.Fatalf("a guess from an address that failed 10 times was answered in %v, want it held over 1s", d)
	}
}

// HELLO as Redis 7.0 answers it: go-redis v9 opens every connection with
// HELLO (protocol 3 by default, 2 when asked). Over a real socket: HELLO
// AUTH authenticates and SETNAME names the connection in one round trip,
// in either protocol; HELLO 3 switches the connection to RESP3 and HELLO 2
// back, each answering the server's description in the new protocol (a
// map, RESP2's flat array); a version other than 2 or 3 is NOPROTO; a
// wrong password in HELLO counts as AUTH's, and the error texts are
// Redis's.
func TestHello_AuthenticatesNamesAndSwitchesProtocol(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{Password: "s3cret"})
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, Password: "s3cret", ClientName: fmt.Sprintf("app-%d", proto), MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("protocol %d: SET: %v", proto, err)
		}
		if name, err := c.ClientGetName(ctx).Result(); err != nil || name != fmt.Sprintf("app-%d", proto) {
			t.Errorf("protocol %d: CLIENT GETNAME %q %v", proto, name, err)
		}
	}

	raw := dialRaw(t, addr)
	for _, tc := range []struct{ send, want string }{
		{"HELLO\r\n", "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"},
		{"HELLO 3\r\n", "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"},
		{"HELLO 1\r\n", "-NOPROTO unsupported protocol version\r\n"},
		{"HELLO 4\r\n", "-NOPROTO unsupported protocol version\r\n"},
		{"HELLO x\r\n", "-ERR Protocol version is not an integer or out of range\r\n"},
		{"HELLO 2 FOO\r\n", "-ERR Syntax error in HELLO option 'FOO'\r\n"},
		{"HELLO 2 AUTH default wrong\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"HELLO 2 AUTH someone s3cret\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"HELLO 2 AUTH default s3cret SETNAME me\r\n", "*14\r\n"},
	} {
		raw.send(tc.send)
		if got := raw.line(); got != tc.want {
			t.Fatalf("%q: %q, want %q", tc.send, got, tc.want)
		}
	}
	got := helloFields(raw)
	if !strings.HasPrefix(got, "server redis version 5.0.0 proto :2 id :") || !strings.HasSuffix(got, "mode standalone role master modules *0") {
		t.Errorf("HELLO's description: %q", got)
	}
	raw.send("CLIENT GETNAME\r\n")
	if l, name := raw.line(), raw.line(); l != "$2\r\n" || name != "me\r\n" {
		t.Errorf("CLIENT GETNAME after HELLO SETNAME: %q %q", l, name)
	}
	// HELLO 3 answers in RESP3 already, and what follows is RESP3: a
	// missing key is RESP3's null; HELLO 2 goes back (its map flat again).
	raw.send("HELLO 3\r\n")
	if l := raw.line(); l != "%7\r\n" {
		t.Fatalf("HELLO 3: %q, want a map of 7", l)
	}
	if got := helloFields(raw); !strings.Contains(got, "proto :3 id :") {
		t.Errorf("HELLO 3's description: %q", got)
	}
	raw.send("GET nosuchkey\r\nCLIENT INFO\r\n")
	if l := raw.line(); l != "_\r\n" {
		t.Errorf("GET of a missing key in RESP3: %q, want _", l)
	}
	if l := raw.line(); !strings.HasPrefix(l, "=") {
		t.Errorf("CLIENT INFO in RESP3: %q, want a verbatim string", l)
	} else if info := raw.line(); !strings.Contains(info, " resp=3") || !strings.HasPrefix(info, "txt:") {
		t.Errorf("CLIENT INFO in RESP3: %q, want txt: and resp=3", info)
	} else {
		raw.line() // the line ends in "\n", then the reply's "\r\n"
	}
	raw.send("HELLO 2\r\nGET nosuchkey\r\n")
	if l := raw.line(); l != "*14\r\n" {
		t.Fatalf("HELLO 2 after 3: %q, want the flat array of 14", l)
	}
	helloFields(raw)
	if l := raw.line(); l != "$-1\r\n" {
		t.Errorf("GET of a missing key back in RESP2: %q", l)
	}
}

// helloFields reads the 14 keys and values of HELLO's description (after
// its header) and returns them joined by spaces, each bulk's text alone.
func helloFields(raw *raw) string {
	var fields []string
	for range 14 {
		l := raw.line()
		if strings.HasPrefix(l, "$") {
			l = raw.line()
		}
		fields = append(fields, strings.TrimSpace(l))
	}
	return strings.Join(fields, " ")
}
