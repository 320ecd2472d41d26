package envoyrls_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/envoyrls"
	"github.com/devkit-go/devkit/ratelimit/middleware"
	"github.com/devkit-go/devkit/ratelimit/policy"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

const testPolicy = `
identity:
  trusted_proxies: [127.0.0.1/32]
defaults: {plan: free}
rules:
  - {name: health, paths: [/health], skip: true}
  - name: login
    paths: [/auth/login]
    methods: [POST]
    scope: global
    key: [ip]
    limits: [{limit: 3, window: 15m}]
  - name: api
    paths: ["/api/items/{id}"]
    scope: tenant
    key: [tenant, route]
    plans:
      free: {"*": [{limit: 2, window: 1h}]}
      pro: {"*": [{limit: 5, window: 1h}]}
`

// startService serves the service on a real socket with a limiter on the
// given Redis, and returns its address.
func startService(t *testing.T, rs *redistest.Server) string {
	addr, _ := startServiceLimiter(t, rs)
	return addr
}

func startServiceLimiter(t *testing.T, rs *redistest.Server) (string, *ratelimit.Limiter) {
	t.Helper()
	client, err := redisstore.NewClient(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	l := ratelimit.New(redisstore.New(client, redisstore.Options{}), ratelimit.Options{})
	return serveWith(t, l), l
}

// serveWith serves the service with testPolicy and l on a real socket
// until the test ends, and returns its address.
func serveWith(t *testing.T, l *ratelimit.Limiter) string {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- envoyrls.Serve(ctx, ln, envoyrls.New(l, func() *policy.Policy { return p }), time.Second, nil)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func dial(t *testing.T, addr, from string) rlsv3.RateLimitServiceClient {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return rlsv3.NewRateLimitServiceClient(cc)
}

func desc(kv ...string) *commonv3.RateLimitDescriptor {
	d := &commonv3.RateLimitDescriptor{}
	for i := 0; i < len(kv); i += 2 {
		d.Entries = append(d.Entries, &commonv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func ask(t *testing.T, c rlsv3.RateLimitServiceClient, ds ...*commonv3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	t.Helper()
	resp, err := c.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: ds})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func header(resp *rlsv3.RateLimitResponse, key string) string {
	for _, h := range resp.GetResponseHeadersToAdd() {
		if h.GetKey() == key {
			return h.GetValue()
		}
	}
	return ""
}

// Descriptors are decided by the policy's rules and keys: the login rule
// by path, method and address (any spelling of the path), the api rule by
// tenant and route template under the tenant's plan; the answer carries the
// limit, what is left, the reset and the rate-limit fields.
func TestShouldRateLimit_DescriptorsMapOntoRulesAndKeys(t *testing.T) {
	c := dial(t, startService(t, redistest.StartRedis(t)), "127.0.0.1")
	login := desc("method", "POST", "path", "/auth/login", "remote_address", "203.0.113.9")
	for i := range 3 {
		resp := ask(t, c, desc(":method", "POST", ":path", []string{"/auth/login", "/AUTH//login/", "/auth/./login?x=1"}[i], "remote_address", "203.0.113.9"))
		st := resp.Statuses[0]
		if resp.OverallCode != rlsv3.RateLimitResponse_OK || st.LimitRemaining != uint32(2-i) || st.CurrentLimit.GetRequestsPerUnit() != 3 ||
			st.CurrentLimit.GetUnit() != rlsv3.RateLimitResponse_RateLimit_MINUTE || st.CurrentLimit.GetUnitMultiplier().GetValue() != 15 {
			t.Fatalf("login %d: %v", i+1, resp)
		}
	}
	resp := ask(t, c, login)
	if resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT || header(resp, "retry-after") == "" || header(resp, "x-ratelimit-remaining") != "0" ||
		header(resp, "ratelimit-policy") == "" {
		t.Fatalf("login over the limit: %v", resp)
	}
	if resp := ask(t, c, desc("method", "POST", "path", "/auth/login", "remote_address", "203.0.113.10")); resp.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Fatalf("another address: %v", resp)
	}
	if resp := ask(t, c, desc("method", "GET", "path", "/auth/login", "remote_address", "203.0.113.9"), desc("path", "/health")); resp.OverallCode != rlsv3.RateLimitResponse_OK ||
		resp.Statuses[0].CurrentLimit != nil || len(resp.ResponseHeadersToAdd) != 0 {
		t.Fatalf("unlimited (another method, a skipped rule): %v", resp)
	}
	// The api rule: keyed by tenant and route, not by item id; pro has 5.
	for i := range 3 {
		resp := ask(t, c, desc("path", "/api/items/"+string(rune('a'+i)), "tenant", "acme"))
		if want := []rlsv3.RateLimitResponse_Code{1, 1, 2}[i]; resp.OverallCode != want {
			t.Fatalf("free tenant, item %d: %v", i, resp)
		}
	}
	if resp := ask(t, c, desc("path", "/api/items/z", "tenant", "big", "plan", "pro")); resp.Statuses[0].LimitRemaining != 4 {
		t.Fatalf("pro tenant: %v", resp)
	}
	// Several descriptors: each is decided; one over the limit is the overall answer.
	if resp := ask(t, c, desc("path", "/api/items/1", "tenant", "new"), login); resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT ||
		resp.Statuses[0].Code != rlsv3.RateLimitResponse_OK || resp.Statuses[1].Code != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("two descriptors: %v", resp)
	}
}

// Mistakes are precise errors, and a peer that is not a trusted proxy is
// refused before anything is counted.
func TestShouldRateLimit_ErrorsAndUntrustedPeers(t *testing.T) {
	addr := startService(t, redistest.StartRedis(t))
	c := dial(t, addr, "127.0.0.1")
	for _, c2 := range []struct {
		d    *commonv3.RateLimitDescriptor
		want string
	}{
		{desc("header_match", "x"), `descriptors[0]: unknown descriptor key "header_match"`},
		{desc("remote_address", "nope"), `remote_address "nope" is not an IP address`},
		{desc("path", "api"), `path "api" is not a request path`},
	} {
		_, err := c.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Descriptors: []*commonv3.RateLimitDescriptor{c2.d}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), c2.want) {
			t.Errorf("%v: %v, want INVALID_ARGUMENT %q", c2.d, err, c2.want)
		}
	}
	_, err := dial(t, addr, "127.0.0.2").ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{
		Descriptors: []*commonv3.RateLimitDescriptor{desc("method", "POST", "path", "/auth/login", "remote_address", "203.0.113.9")}})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("untrusted peer: %v, want PERMISSION_DENIED", err)
	}
	if resp := ask(t, c, desc("method", "POST", "path", "/auth/login", "remote_address", "203.0.113.9")); resp.Statuses[0].LimitRemaining != 2 {
		t.Fatalf("the refused call was counted: %v", resp)
	}
}

// Three services on one Redis, 30 concurrent clients each on one identity:
// exactly the limit is OK, unless checks outlived the budget (a machine
// too loaded), which are the failure policy's, counted, and the only
// excess (the bound docs/ratelimit.md states).
func TestShouldRateLimit_ThreeServicesOneRedisExact(t *testing.T) {
	rs := redistest.StartRedis(t)
	var clients []rlsv3.RateLimitServiceClient
	var limiters []*ratelimit.Limiter
	for range 3 {
		addr, l := startServiceLimiter(t, rs)
		clients, limiters = append(clients, dial(t, addr, "127.0.0.1")), append(limiters, l)
	}
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := range 90 {
		wg.Go(func() {
			resp, err := clients[i%3].ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{
				Descriptors: []*commonv3.RateLimitDescriptor{desc("method", "POST", "path", "/auth/login", "remote_address", "198.51.100.1")}})
			if err != nil {
				t.Error(err)
				return
			}
			if resp.OverallCode == rlsv3.RateLimitResponse_OK {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	var failOpen int64
	for _, l := range limiters {
		for _, c := range l.Stats().Snapshot() {
			failOpen += c.FailOpen
		}
	}
	if ok.Load()-failOpen > 3 || (failOpen == 0 && ok.Load() != 3) {
		t.Fatalf("%d OK of 90 for a limit of 3, %d of them by the failure policy", ok.Load(), failOpen)
	}
	if failOpen > 0 {
		t.Logf("%d checks outlived the budget and were let through by fail-open (a loaded machine)", failOpen)
	}
}

// The fields returned are every rate-limit field SetHeaders writes, each
// named in lower case.
func TestHeadersToAdd_EveryFieldInLowerCase(t *testing.T) {
	res := ratelimit.Result{Allowed: false, Limit: ratelimit.Limit{Name: "n", Rate: 3, Period: time.Minute},
		Remaining: 0, ResetAfter: 30 * time.Second, RetryAfter: 30 * time.Second}
	res.Limits = []ratelimit.LimitResult{{Limit: res.Limit, ResetAfter: res.ResetAfter}}
	h := http.Header{}
	middleware.SetHeaders(h, &res)
	got := map[string]string{}
	for _, f := range envoyrls.HeadersToAdd(&res) {
		got[f.GetKey()] = f.GetValue()
	}
	if len(got) != len(h) || len(h) != 6 {
		t.Fatalf("fields %v, SetHeaders wrote %v", got, h)
	}
	for name, v := range h {
		if got[strings.ToLower(name)] != v[0] {
			t.Errorf("%s: %q, want %q", strings.ToLower(name), got[strings.ToLower(name)], v[0])
		}
	}
}
