package gateway

import (
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// BenchmarkLoop_DenialInMemory is one denied request through an event
// loop's parse and the gateway's handler, from the request's bytes in the
// connection's buffer to the answer's in its output: what the loop's own
// code costs per denial, without the socket's read and write.
func BenchmarkLoop_DenialInMemory(b *testing.B) {
	p, err := policy.Parse("bench.yaml", []byte("rules:\n  - {name: api, paths: [/], key: [ip], limits: [{limit: 1, window: 1h}]}\n"))
	if err != nil {
		b.Fatal(err)
	}
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{BlockedCacheSize: 1000})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := New(Config{Listen: "127.0.0.1:0", Upstream: "http://127.0.0.1:1", Policy: p, Limiter: l, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	req := []byte("GET /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n")
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
