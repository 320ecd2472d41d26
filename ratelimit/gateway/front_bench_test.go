package gateway

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// loopConn is a connection that sends the same request n times, one per
// Read, and discards what is written: the front's own cost per request,
// without the kernel's.
type loopConn struct {
	req  []byte
	left int
}

func (c *loopConn) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	c.left--
	return copy(p, c.req), nil
}
func (c *loopConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *loopConn) Close() error                { return nil }
func (c *loopConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }
func (c *loopConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(203, 0, 113, 9), Port: 4000}
}
func (c *loopConn) SetDeadline(t time.Time) error      { return nil }
func (c *loopConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *loopConn) SetWriteDeadline(t time.Time) error { return nil }

// denialBenchServer is a gateway whose one rule allows a single request
// per hour, in memory, never listening, and the request the denial
// benchmarks send (as Go's client writes it).
func denialBenchServer(b *testing.B) (*Server, []byte) {
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
	return srv, []byte("GET /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n")
}

// BenchmarkFront_DenialInMemory is one denied request through the front
// and the gateway's handler, from the request's bytes to the answer's, on
// a connection without a kernel: what the gateway's own code costs per
// denial (the rest is the socket's read and write).
func BenchmarkFront_DenialInMemory(b *testing.B) {
	srv, req := denialBenchServer(b)
	f := srv.clientSrv
	c := f.newConn(&loopConn{req: req, left: 1})
	c.serve() // spends the one allowed request
	b.ReportAllocs()
	b.ResetTimer()
	c = f.newConn(&loopConn{req: req, left: b.N})
	c.serve()
}
