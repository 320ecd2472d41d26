package live

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// The view's "top denied" comes from a real gateway's /top?by=denied: the
// identity denied most first, with its count. (Before the gateway kept the
// ranking it answered by hits, and the view showed none.)
func TestSample_TopDeniedFromARealGateway(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	pol, err := policy.Parse("p.yaml", []byte("rules:\n  - {name: api, paths: [/], key: [ip], limits: [{limit: 1, window: 1h}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", Upstream: up.URL, Policy: pol,
		Limiter: ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	send := func(from string, n int) {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		for range n {
			resp, err := c.Get("http://" + srv.Addr() + "/x")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	send("127.0.0.2", 3) // 2 denied
	send("127.0.0.3", 6) // 5 denied
	snap := NewSampler(Sources{GatewayURL: "http://" + srv.AdminAddr()}).Sample(context.Background())
	g := snap.Gateway
	if g == nil || len(g.TopDenied) != 2 {
		t.Fatalf("top denied: %+v", g)
	}
	if a, b := g.TopDenied[0], g.TopDenied[1]; a.Key != "api|ip=127.0.0.3" || a.Denied != 5 || b.Key != "api|ip=127.0.0.2" || b.Denied != 2 {
		t.Fatalf("top denied %+v, want 127.0.0.3 denied 5 then 127.0.0.2 denied 2", g.TopDenied)
	}
}
