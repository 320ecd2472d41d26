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
