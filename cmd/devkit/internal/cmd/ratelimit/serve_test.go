package ratelimit

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/devkit-go/devkit/ratelimit/redistest"
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

// serve --grpc-addr answers Envoy's ShouldRateLimit from the same policy
// and store as the auth endpoint: the two count one budget.
func TestServe_GRPCSharesTheAuthEndpointsBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(servePolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	grpcAddr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	listen, _ := startProxy(t, &ProxyOptions{Store: &StoreOptions{}, Listen: "127.0.0.1:0", AuthPath: DefaultAuthPath, GRPCAddr: grpcAddr,
		Policy: path, WatchInterval: time.Hour, Reload: make(chan struct{})})
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	cc, err := grpc.NewClient("passthrough:///"+grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := rlsv3.NewRateLimitServiceClient(cc)
	codes := []rlsv3.RateLimitResponse_Code{}
	for range 3 {
		resp, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge",
			Descriptors: []*commonv3.RateLimitDescriptor{{Entries: []*commonv3.RateLimitDescriptor_Entry{
				{Key: "path", Value: "/api/x"}, {Key: "remote_address", Value: "127.0.0.2"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.OverallCode)
	}
	want := []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("ShouldRateLimit ×3: %v, want %v", codes, want)
	}
	// The auth endpoint keys the same request (client 127.0.0.2) the same way: spent.
	proxy := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	req, _ := http.NewRequest(http.MethodGet, "http://"+listen+DefaultAuthPath, nil)
	req.Header.Set("X-Original-URI", "/api/x")
	req.Header.Set("X-Original-Method", "GET")
	resp, err := proxy.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 {
		t.Fatalf("auth endpoint after the gRPC checks: %d, want 429", resp.StatusCode)
	}
}
