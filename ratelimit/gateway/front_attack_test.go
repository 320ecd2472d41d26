package gateway_test

// Attacks on the gateway's HTTP/1.1 front found by sending it what net/http's
// server is sent in the wild, over real sockets, with net/http's server
// beside it as the reference: the front must be at least as safe.

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit/gateway"
)

// A request line the parser refuses (a control byte in the target: the
// URL parser's error is a net.Error) is answered 400, like net/http does,
// instead of the connection being dropped without a word as if the
// client had left.
func TestFrontAttack_UnparsableTargetIsAnswered400(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{})
	for _, target := range []string{"/a\x01b", "/a\x7fb", "http://a\x00b/"} {
		codes, closed := exchange(t, srv.Addr(), "GET "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if len(codes) != 1 || codes[0] != http.StatusBadRequest || !closed {
			t.Errorf("target %q: answers %v, closed %v: want one 400 and the connection closed", target, codes, closed)
		}
	}
	if seen := up.seen(); len(seen) != 0 {
		t.Errorf("the upstream saw %v: want nothing", seen)
	}
}

// "OPTIONS *" asks about the server, not a resource: net/http answers it
// itself (200, no body). The front forwarded it to the upstream as a
// request for the resource "/*", which the client never named; any other
// method with the target "*" is refused.
func TestFrontAttack_AsteriskTargetNeverForwardedAsAPath(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{})
	conn := dialClient(t, srv.Addr())
	io.WriteString(conn, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || len(b) != 0 {
		t.Errorf("OPTIONS *: %d %q: want 200 and no body", resp.StatusCode, b)
	}
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the request after OPTIONS *: %v %v: want it served on the same connection", resp, err)
	}
	codes, closed := exchange(t, srv.Addr(), "GET * HTTP/1.1\r\nHost: x\r\n\r\n")
	if len(codes) != 1 || codes[0] != http.StatusBadRequest || !closed {
		t.Errorf("GET *: answers %v, closed %v: want one 400 and the connection closed", codes, closed)
	}
	if seen := up.seen(); len(seen) != 1 || seen[0] != "GET /after" {
		t.Errorf("the upstream saw %v: want only GET /after", seen)
	}
}

// An answer is sent when its request is done, even when part of the next
// request is already there: the front held the answers of pipelined
// requests back while more was buffered, also when what was buffered was
// only the start of a head, so the answer waited for the rest of that
// head, and was lost when the head never completed (the read timed out or
// the client half-closed, and the connection closed with the answer still
// in the buffer). net/http sends it at once.
func TestFrontAttack_AnswerNotHeldBehindAPartialNextHead(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{ReadHeaderTimeout: 5 * time.Second})
	for _, halfClose := range []bool{false, true} {
		conn := dialClient(t, srv.Addr())
		io.WriteString(conn, "GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHo")
		if halfClose {
			conn.(*net.TCPConn).CloseWrite()
		}
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if halfClose && err != nil && !isTimeout(err) {
			// net/http takes a half-close for a client gone, and cancels
			// its request: no answer, and no made-up one either.
			continue
		}
		if err != nil {
			t.Fatalf("half-close %v: the first answer: %v (want it within 2 s, before the next head is complete)", halfClose, err)
		}
		if b, _ := io.ReadAll(io.LimitReader(resp.Body, 64)); resp.StatusCode != http.StatusOK || string(b) != "path=/first" {
			t.Errorf("half-close %v: %d %q: want 200 path=/first", halfClose, resp.StatusCode, b)
		}
	}
	if seen := up.seen(); len(seen) < 1 {
		t.Errorf("the upstream saw %v: want GET /first", seen)
	}
}

// The same for a next request whose body is not all there: its handler
// waits for the body, the client for the answer before it.
func TestFrontAttack_AnswerNotHeldBehindAPartialNextBody(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{})
	for _, second := range []string{
		"POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234",
		"POST /second HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n01234\r\n",
	} {
		conn := dialClient(t, srv.Addr())
		io.WriteString(conn, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"+second)
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q behind: the first answer: %v (want it within 2 s)", second, err)
		}
		if b, _ := io.ReadAll(io.LimitReader(resp.Body, 64)); resp.StatusCode != http.StatusOK || string(b) != "path=/first" {
			t.Errorf("%q behind: %d %q: want 200 path=/first", second, resp.StatusCode, b)
		}
	}
}

// With an absolute-form target the host is the target's, and the Host
// field was not checked at all: userinfo or a space in it passed, where
// net/http answers 400 (a peer that routes by the field would read it).
func TestFrontAttack_HostFieldCheckedBesideAnAbsoluteTarget(t *testing.T) {
	srv, up := startFrontGateway(t, gateway.Config{})
	for _, host := range []string{"a b", "user@evil", "a/b"} {
		codes, closed := exchange(t, srv.Addr(), "GET http://a/x HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		if len(codes) != 1 || codes[0] != http.StatusBadRequest || !closed {
			t.Errorf("Host %q: answers %v, closed %v: want one 400 and the connection closed", host, codes, closed)
		}
	}
	for _, host := range []string{"a:80", " \tb.example \t", "[::1]:8080"} {
		codes, _ := exchange(t, srv.Addr(), "GET http://a/ok HTTP/1.1\r\nHost:"+host+"\r\nConnection: close\r\n\r\n")
		if len(codes) != 1 || codes[0] != http.StatusOK {
			t.Errorf("Host %q: answers %v: want 200", host, codes)
		}
	}
	if seen := up.seen(); len(seen) != 3 {
		t.Errorf("the upstream saw %v: want only the three GET /ok", seen)
	}
}

// A client that sends its request and half-closes (CloseWrite, as
// "nc -N" and some health checkers do) is taken for gone: the upstream
// request is cancelled and the gateway answers nothing, and the front then
// sent the handler's default, an empty 200, as if it were the upstream's
// answer (net/http does the same). Now the connection closes with no
// made-up answer.
func TestFrontAttack_HalfClosedClientNeverGetsAMadeUpAnswer(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(200 * time.Millisecond)
		io.WriteString(w, "the upstream's answer")
	}))
	t.Cleanup(up.Close)
	srv := startGateway(t, up.URL, openTestPolicy, gateway.Config{Logger: discardLogger()})
	conn := dialClient(t, srv.Addr())
	io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	conn.(*net.TCPConn).CloseWrite()
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	raw, _ := io.ReadAll(conn)
	if len(raw) > 0 && !strings.Contains(string(raw), "the upstream's answer") {
		t.Errorf("answered %q: want the upstream's answer or nothing", raw)
	}
}

// A connection that sent only part of a head has no request in flight,
// yet Shutdown waited for it to the end of ShutdownTimeout and then
// reported requests cut off: one slowloris connection made every graceful
// stop slow and an error. net/http closes such connections at once. An
// answer in progress is still waited for.
func TestFrontAttack_ShutdownNotHeldByAPartialHead(t *testing.T) {
	srv, _ := startFrontGateway(t, gateway.Config{ShutdownTimeout: 3 * time.Second, ReadHeaderTimeout: 10 * time.Second})
	conn := dialClient(t, srv.Addr())
	io.WriteString(conn, "GET /a HTTP/1.1\r\nHo")
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	err := srv.Shutdown(context.Background())
	if took := time.Since(start); err != nil || took > time.Second {
		t.Errorf("Shutdown took %v: %v; want at once and no error", took.Round(time.Millisecond), err)
	}
	conn.SetReadDeadline(time.Now().Add(time.Second))
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Errorf("the connection still open after Shutdown (read %q): %v", b, err)
	}
	// The head was cut, not malformed: 503 (before: 400 "malformed request").
	if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 503 ") {
		t.Errorf("answered %q: want 503 or nothing", b)
	}
}
