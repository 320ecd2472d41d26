//go:build unix

package gateway_test

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit/gateway"
)

// A last request the client itself marked "Connection: close", read whole,
// with nothing of the client's waiting: the gateway closes the connection
// at once, as nginx's lingering_close on does, instead of half-closing and
// draining it (a shutdown, a goroutine, a deadline and a read per
// connection). Seen from the client: bytes it sends after the answer are
// refused with a reset (its next write fails), where a lingering gateway
// would swallow them. The
// other side of the rule, bytes pipelined behind such a request still
// drained so that every answer arrives, is TestSmuggling_CountersEqualTheAnswersGiven.
func TestFront_ConnectionCloseFromTheClientClosesAtOnce(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{})
	for _, req := range []string{
		"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello",
		"GET /a HTTP/1.0\r\nHost: x\r\n\r\n",
	} {
		conn, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, req)
		answer, err := io.ReadAll(conn)
		if err != nil || len(answer) == 0 {
			t.Fatalf("%q: answer %q, %v", req, answer, err)
		}
		_, err = io.WriteString(conn, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
		if err == nil {
			time.Sleep(50 * time.Millisecond) // the reset comes back
			_, err = io.WriteString(conn, "x")
		}
		conn.Close()
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			t.Errorf("%q: after the answer, a second write got %v, want a reset: the connection lingered", req, err)
		}
	}
}
