package ratelimit

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const servePolicy = `
identity:
  trusted_proxies: [127.0.0.2/32]
rules:
  - name: api
    paths: [/api]
    key: [ip]
    limits: [{limit: 2, window: 1m}]
`

// serve answers the auth path for a trusted proxy (204, then 429 past the
// limit), 403 to any other peer, and 404 elsewhere: it has no upstream.
func TestServe_AnswersAuthChecksWithNoUpstream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(servePolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	listen, _ := startProxy(t, &ProxyOptions{Store: &StoreOptions{}, Listen: "127.0.0.1:0", AuthPath: DefaultAuthPath,
		Policy: path, WatchInterval: time.Hour, Reload: make(chan struct{})})
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	proxy := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	status := func(c *http.Client, p string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+listen+p, nil)
		req.Header.Set("X-Original-URI", "/api/x")
		req.Header.Set("X-Original-Method", "GET")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, want := range []int{204, 204, 429} {
		if got := status(proxy, DefaultAuthPath); got != want {
			t.Fatalf("check %d: %d, want %d", i+1, got, want)
		}
	}
	if got := status(http.DefaultClient, DefaultAuthPath); got != 403 {
		t.Errorf("from an untrusted peer: %d, want 403", got)
	}
	if got := status(proxy, "/api/x"); got != 404 {
		t.Errorf("another path: %d, want 404", got)
	}
}
