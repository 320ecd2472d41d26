package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit/gateway"
)

// bodyRecorder is an upstream that keeps, per request, the body it read
// and how its reading ended.
type bodyRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (u *bodyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	u.mu.Lock()
	u.seen = append(u.seen, fmt.Sprintf("%s %q err=%v", r.URL.Path, b, err))
	u.mu.Unlock()
	io.WriteString(w, "read")
}

func (u *bodyRecorder) complete() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for _, s := range u.seen {
		if len(s) < 8 || s[len(s)-8:] != "err=<nil>" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// A chunked request body that breaks the chunked framing is answered 400
// (nginx's answer) and the connection closed: the client sent a malformed
// request, the upstream did nothing wrong. It was a 502, the upstream
// failing, and the upstream must never take what arrived for a whole
// request.
func TestGateway_MalformedChunkedBodyIs400(t *testing.T) {
	up := &bodyRecorder{}
	upstream := httptest.NewServer(up)
	t.Cleanup(upstream.Close)
	srv := startGateway(t, upstream.URL, openTestPolicy, gateway.Config{Logger: discardLogger()})
	for _, body := range []string{
		"5\r\nhello\r\nzz\r\nxyz\r\n0\r\n\r\n",                // a chunk size that is not hex
		"5\r\nhello\r\n3\nxyz\n0\n\n",                         // chunk lines ending in a bare LF
		"5\r\nhello\r\n1ffffffffffffffff\r\nxyz\r\n0\r\n\r\n", // a chunk size over 64 bits
		"5\r\nhelloXX3\r\nxyz\r\n0\r\n\r\n",                   // a chunk longer than its size
	} {
		raw := "POST /api/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body
		got, closed := rawExchange(t, srv.Addr(), "", raw, 3*time.Second)
		if len(got) < 12 || got[:12] != "HTTP/1.1 400" || !closed {
			t.Errorf("%q: answered %.80q, closed %v: want 400 and the connection closed", body, got, closed)
		}
	}
	if done := up.complete(); len(done) != 0 {
		t.Errorf("the upstream took %q for whole requests", done)
	}
}

// A request body that stops arriving for the read idle timeout is answered
// 408 (nginx's client_body_timeout answer), not blamed on the upstream.
func TestGateway_StalledRequestBodyIs408(t *testing.T) {
	up := &bodyRecorder{}
	upstream := httptest.NewServer(up)
	t.Cleanup(upstream.Close)
	srv := startGateway(t, upstream.URL, openTestPolicy, gateway.Config{ReadIdleTimeout: 300 * time.Millisecond, Logger: discardLogger()})
	start := time.Now()
	got, _ := rawExchange(t, srv.Addr(), "", "POST /api/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789", 3*time.Second)
	if len(got) < 12 || got[:12] != "HTTP/1.1 408" || time.Since(start) > 2*time.Second {
		t.Errorf("a body stalled after 10 of 100 bytes: %.60q after %v, want 408 after about 300ms", got, time.Since(start).Round(time.Millisecond))
	}
	if done := up.complete(); len(done) != 0 {
		t.Errorf("the upstream took %q for whole requests", done)
	}
}
