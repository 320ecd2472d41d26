package gateway_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/internal/testcert"
	"github.com/devkit-go/devkit/ratelimit/gateway"
)

// With a certificate and a key, the client listener serves TLS and
// HTTP/2 (ALPN); the upstream is told the scheme the client verifiably
// used — https in X-Forwarded-Proto and Forwarded's proto= — and never
// the one a client claims. Limits hold over HTTP/2 as over HTTP/1.1.
func TestGateway_TLSWithHTTP2AndTheVerifiedScheme(t *testing.T) {
	certFile, keyFile, pool := testcert.SelfSigned(t, t.TempDir())
	up := &recorder{}
	upstream := httptest.NewServer(up)
	t.Cleanup(upstream.Close)
	srv := startGateway(t, upstream.URL, openTestPolicy, gateway.Config{TLSCertFile: certFile, TLSKeyFile: keyFile, Logger: discardLogger()})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	t.Cleanup(client.CloseIdleConnections)
	get := func(path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://"+srv.Addr()+path, nil)
		req.Header.Set("X-Forwarded-Proto", "http") // a claim, not what was verified
		req.Header.Set("Forwarded", "proto=http")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := get("/limited")
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Fatalf("%s %d: want HTTP/2 and 200", resp.Proto, resp.StatusCode)
	}
	h := up.header()
	if h.Get("X-Forwarded-Proto") != "https" || !strings.Contains(h.Get("Forwarded"), "proto=https") || strings.Contains(h.Get("Forwarded"), "proto=http;") {
		t.Errorf("the upstream was told X-Forwarded-Proto %q, Forwarded %q: want https in both, and nothing the client claimed",
			h.Get("X-Forwarded-Proto"), h.Get("Forwarded"))
	}
	if resp := get("/limited"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the second /limited over HTTP/2: %d, want 429", resp.StatusCode)
	}

	// In clear text the scheme is http, whatever the client claims.
	plain := startGateway(t, upstream.URL, openTestPolicy, gateway.Config{Logger: discardLogger()})
	req, _ := http.NewRequest("GET", "http://"+plain.Addr()+"/x", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if h := up.header(); h.Get("X-Forwarded-Proto") != "http" || !strings.Contains(h.Get("Forwarded"), "proto=http") {
		t.Errorf("in clear text the upstream was told X-Forwarded-Proto %q, Forwarded %q: want http", h.Get("X-Forwarded-Proto"), h.Get("Forwarded"))
	}
}

// A certificate without its key (or the reverse), or files that do not
// load, are refused at New.
func TestGateway_TLSNeedsALoadableCertificateAndKey(t *testing.T) {
	certFile, keyFile, _ := testcert.SelfSigned(t, t.TempDir())
	for _, c := range []struct{ cert, key string }{{certFile, ""}, {"", keyFile}, {keyFile, certFile}, {certFile, "/nonexistent"}} {
		_, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", Upstream: "http://127.0.0.1:1", Policy: mustPolicy(t, openTestPolicy),
			Limiter: newMemoryLimiter(), TLSCertFile: c.cert, TLSKeyFile: c.key})
		if err == nil {
			t.Errorf("cert %q, key %q: no error", c.cert, c.key)
		}
	}
}
