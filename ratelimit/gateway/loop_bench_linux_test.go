package gateway

import (
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkLoop_DenialInMemory is one denied request through an event
// loop's parse and the gateway's handler, from the request's bytes in the
// connection's buffer to the answer's in its output: what the loop's own
// code costs per denial, without the socket's read and write.
func BenchmarkLoop_DenialInMemory(b *testing.B) {
	srv, req := denialBenchServer(b)
	f := srv.clientSrv
	lp, err := f.loops.newLoop()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(lp.epfd); unix.Close(lp.wakefd) })
	f.loops.local = true
	lc := &evConn{l: lp, fd: -1}
	lc.nc = evNetConn{lc: lc, local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80},
		rem: &net.TCPAddr{IP: net.IPv4(203, 0, 113, 9), Port: 4000}}
	lc.c = f.initConn(&lc.nc, lc.nc.rem.String())
	lc.c.inLoop = true
	f.byRemote.Store(lc.c.remoteAddr, lc.c)
	serve := func() {
		lc.in, lc.rpos = append(lc.in[:0], req...), 0
		lc.out = lc.out[:0]
		lp.serveHeads(lc, time.Now())
	}
	spent := httptest.NewRequest("GET", "/x", nil)
	spent.RemoteAddr = lc.c.remoteAddr
	srv.handler.ServeHTTP(httptest.NewRecorder(), spent) // the one allowed request (the upstream is down: 502)
	serve()
	if len(lc.out) == 0 || string(lc.out[:12]) != "HTTP/1.1 429" {
		b.Fatalf("answer %q, want a 429", lc.out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		serve()
	}
}
