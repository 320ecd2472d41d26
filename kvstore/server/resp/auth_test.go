package resp_test

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

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
