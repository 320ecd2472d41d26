package gateway

// Attacks on the front through handlers of its own (the gateway's proxy
// strips what these handlers set, its admin API and any later handler do
// not): what a handler sets must never make the answer framed two ways.

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startTestFront serves h on a front of its own over a real socket.
func startTestFront(t *testing.T, h http.Handler) string {
	t.Helper()
	f := newFront(h, Config{ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, IdleTimeout: 2 * time.Second}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go f.Serve(ln)
	t.Cleanup(f.Close)
	return ln.Addr().String()
}

// A Transfer-Encoding set by the handler went out beside the front's own
// Content-Length with the body unchunked: a client reads the body as chunk
// sizes, and the answers after it are whatever the body says (response
// splitting). On a 204 it announced a body that never comes. The front
// frames every body itself; a 1xx or 204 carries no Content-Length either.
func TestFrontAttack_HandlerTransferEncodingNeverFramesTheAnswer(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/te", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		io.WriteString(w, "HTTP/1.1 200 OK\r\nX-Split: 1\r\n\r\n")
	})
	mux.HandleFunc("/identity", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Transfer-Encoding", "identity")
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, "abc")
	})
	mux.HandleFunc("/204", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		w.Header().Set("Content-Length", "10")
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "next") })
	addr := startTestFront(t, mux)
	for _, c := range []struct{ path, body string }{
		{"/te", "HTTP/1.1 200 OK\r\nX-Split: 1\r\n\r\n"},
		{"/identity", "abc"},
		{"/204", ""},
	} {
		t.Run(c.path, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, "GET "+c.path+" HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n")
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil || string(b) != c.body {
				t.Errorf("body %q, %v: want %q", b, err, c.body)
			}
			if te, cl := resp.Header["Transfer-Encoding"], resp.Header["Content-Length"]; len(resp.TransferEncoding) > 0 && cl != nil || te != nil {
				t.Errorf("framed by Transfer-Encoding %v and Content-Length %v", resp.TransferEncoding, cl)
			}
			if resp.StatusCode == http.StatusNoContent && resp.Header["Content-Length"] != nil {
				t.Errorf("a 204 with Content-Length %v", resp.Header["Content-Length"])
			}
			next, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("the answer after it: %v", err)
			}
			if b, _ := io.ReadAll(next.Body); string(b) != "next" || next.Header.Get("X-Split") != "" {
				t.Errorf("the answer after it: %d %q %v: want the next request's", next.StatusCode, b, next.Header)
			}
		})
	}
}

// Trailers the handler announces are sent, but never the framing and
// routing fields (Content-Length, Transfer-Encoding, Host, …) a client
// that merges trailers would take as the answer's; an HTTP/1.0 client is
// sent no 1xx answer.
func TestFrontAttack_ForbiddenTrailersAndEarlyHintsToHTTP10(t *testing.T) {
	addr := startTestFront(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hints" {
			w.Header().Set("Link", "</a>")
			w.WriteHeader(http.StatusEarlyHints)
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Trailer", "Content-Length, Host, X-Checksum")
		w.(http.Flusher).Flush()
		io.WriteString(w, "body")
		w.Header().Set("Content-Length", "99")
		w.Header().Set("Host", "evil")
		w.Header().Set("X-Checksum", "c")
		w.Header().Set(http.TrailerPrefix+"Transfer-Encoding", "chunked")
	}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	raw, _ := io.ReadAll(conn)
	_, trailers, ok := strings.Cut(string(raw), "\r\n0\r\n")
	if !ok {
		t.Fatalf("no last chunk in %q", raw)
	}
	if !strings.Contains(trailers, "X-Checksum: c\r\n") {
		t.Errorf("trailers %q: want X-Checksum: c", trailers)
	}
	for _, k := range []string{"Content-Length:", "Host:", "Transfer-Encoding:"} {
		if strings.Contains(trailers, k) {
			t.Errorf("trailers %q: %s sent", trailers, k)
		}
	}
	conn10, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn10.Close()
	io.WriteString(conn10, "GET /hints HTTP/1.0\r\n\r\n")
	conn10.SetReadDeadline(time.Now().Add(3 * time.Second))
	raw10, _ := io.ReadAll(conn10)
	if strings.Contains(string(raw10), " 103 ") {
		t.Errorf("an HTTP/1.0 client was sent a 1xx: %q", raw10)
	}
}
