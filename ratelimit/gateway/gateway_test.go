package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/policy"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
	"github.com/redis/go-redis/v9"
)

// recorder is an upstream that keeps the headers of the last request.
type recorder struct {
	mu   sync.Mutex
	last http.Header
	hits int
}

func (u *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.last, u.hits = r.Header.Clone(), u.hits+1
	u.mu.Unlock()
	io.WriteString(w, "ok")
}

func (u *recorder) header() http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last
}

func startGateway(t *testing.T, upstream string, pol string, cfg gateway.Config) *gateway.Server {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen, cfg.Upstream, cfg.Policy = "127.0.0.1:0", upstream, p
	if cfg.Limiter == nil {
		cfg.Limiter = newMemoryLimiter()
	}
	srv, cancel, done := launchGateway(t, cfg)
	t.Cleanup(stopper(t, cancel, done))
	return srv
}

// serveGateway starts a gateway on upstream with the open test policy and,
// unless cfg says otherwise, the in-memory limiter, and returns it, the
// cancel that begins its stop, and Serve's result.
func serveGateway(t *testing.T, upstream string, cfg gateway.Config) (*gateway.Server, context.CancelFunc, <-chan error) {
	t.Helper()
	cfg.Listen, cfg.Upstream, cfg.Policy = "127.0.0.1:0", upstream, mustPolicy(t, openTestPolicy)
	if cfg.Limiter == nil {
		cfg.Limiter = newMemoryLimiter()
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	return launchGateway(t, cfg)
}

// stopper is the function that stops a gateway (cancel) and checks the
// end of its Serve (done).
func stopper(t *testing.T, cancel context.CancelFunc, done <-chan error) func() {
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
}

// launchGateway starts a gateway on cfg as given and returns it, the
// cancel that begins its stop, and Serve's result.
func launchGateway(t *testing.T, cfg gateway.Config) (*gateway.Server, context.CancelFunc, <-chan error) {
	t.Helper()
	srv, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Listen(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	return srv, cancel, done
}

// clientFrom is an HTTP client whose connections come from a given local
// address (127.0.0.2: an untrusted peer on this machine).
func clientFrom(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

const trustingPolicy = `
identity:
  trusted_proxies: [127.0.0.1]
  user_header: X-User-ID
  tenant_header: X-Workspace-ID
  plan_header: X-Workspace-Plan
defaults: {plan: free}
rules:
  - name: api
    paths: [/]
    scope: tenant
    key: [tenant, ip]
    plans:
      free: {"*": [{limit: 2, window: 1h}]}
      enterprise: {"*": [{limit: 1000, window: 1h}]}
`

// An untrusted peer (127.0.0.2) that claims a plan, a tenant, a user, a
// client address in X-Forwarded-For, X-Real-IP and Forwarded gets none of
// it believed, and none of it reaches the upstream: the upstream sees the
// verified peer only. Before, the proxy forwarded the identity headers and
// X-Real-IP as sent.
func TestGateway_SpoofedIdentityFromUntrustedPeerNeitherBelievedNorForwarded(t *testing.T) {
	up := &recorder{}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	srv := startGateway(t, upstream.URL, trustingPolicy, gateway.Config{})
	client := clientFrom("127.0.0.2")
	codes := map[int]int{}
	for i := 0; i < 5; i++ {
		req, _ := http.NewRequest("GET", "http://"+srv.Addr()+"/x", nil)
		req.Header.Set("X-Workspace-Plan", "enterprise")
		req.Header.Set("X-Workspace-ID", fmt.Sprintf("victim-%d", i))
		req.Header.Set("X-User-ID", "admin")
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.0.0.%d", i))
		req.Header.Set("X-Real-IP", "10.9.9.9")
		req.Header.Set("Forwarded", "for=10.8.8.8")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[200] != 2 || codes[429] != 3 {
		t.Errorf("codes %v: want the free plan's 2, then 429 (no plan, tenant or address believed)", codes)
	}
	h := up.header()
	for _, name := range []string{"X-Workspace-Plan", "X-Workspace-Id", "X-User-Id"} {
		if v := h.Get(name); v != "" {
			t.Errorf("upstream got %s: %q from an untrusted peer", name, v)
		}
	}
	if h.Get("X-Forwarded-For") != "127.0.0.2" || h.Get("X-Real-Ip") != "127.0.0.2" || !strings.HasPrefix(h.Get("Forwarded"), "for=127.0.0.2;proto=http") {
		t.Errorf("upstream got X-Forwarded-For %q, X-Real-IP %q, Forwarded %q: want the verified peer 127.0.0.2",
			h.Get("X-Forwarded-For"), h.Get("X-Real-Ip"), h.Get("Forwarded"))
	}
}

// From a trusted proxy, the identity is believed and forwarded, and the
// chain is cut at the first untrusted hop (what the client prepended is
// dropped); hops written with ports ("IP:port", "[v6]:port") are read.
func TestGateway_TrustedProxyChainVerifiedAndForwarded(t *testing.T) {
	up := &recorder{}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	srv := startGateway(t, upstream.URL, trustingPolicy, gateway.Config{})
	req, _ := http.NewRequest("GET", "http://"+srv.Addr()+"/x", nil)
	req.Header.Set("X-Workspace-Plan", "enterprise")
	req.Header.Set("X-Forwarded-For", "6.6.6.6, [2001:db8::7]:4711, 127.0.0.1:9000")
	resp, err := clientFrom("127.0.0.1").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := up.header()
	if got := h.Get("X-Forwarded-For"); got != "2001:db8::7, 127.0.0.1, 127.0.0.1" {
		t.Errorf("X-Forwarded-For %q: want the verified chain without the spoofed 6.6.6.6", got)
	}
	if h.Get("X-Workspace-Plan") != "enterprise" || resp.Header.Get("X-RateLimit-Limit") != "1000" {
		t.Errorf("plan from a trusted proxy: upstream %q, limit %q", h.Get("X-Workspace-Plan"), resp.Header.Get("X-RateLimit-Limit"))
	}
}

func TestGateway_UpstreamDownIsProblemJSON502AndCounted(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	srv := startGateway(t, dead, "rules:\n  - {name: r, paths: [/], limits: [{limit: 100, window: 1m}]}\n", gateway.Config{Admin: ":0"})
	resp, err := http.Get("http://" + srv.Addr() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	var prob struct {
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	json.NewDecoder(resp.Body).Decode(&prob)
	resp.Body.Close()
	if resp.StatusCode != 502 || resp.Header.Get("Content-Type") != "application/problem+json" || prob.Status != 502 || prob.Detail == "" {
		t.Fatalf("upstream down: %d %s %+v", resp.StatusCode, resp.Header.Get("Content-Type"), prob)
	}
	if !strings.HasPrefix(srv.AdminAddr(), "127.0.0.1:") {
		t.Errorf("admin --admin :0 bound %s, want loopback", srv.AdminAddr())
	}
	m, err := http.Get("http://" + srv.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(m.Body)
	m.Body.Close()
	if !strings.Contains(string(body), "gateway_upstream_errors_total 1") {
		t.Errorf("metrics do not count the upstream error:\n%s", body)
	}
}

// A slow upstream is cut off at the response-header timeout with a 504.
func TestGateway_UpstreamTimeoutIs504(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	}))
	defer upstream.Close()
	srv := startGateway(t, upstream.URL, "rules:\n  - {name: r, paths: [/], limits: [{limit: 100, window: 1m}]}\n",
		gateway.Config{ResponseHeaderTimeout: 100 * time.Millisecond})
	resp, err := http.Get("http://" + srv.Addr() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("slow upstream: %d, want 504", resp.StatusCode)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The whole path through the gateway: 200 spellings of POST /auth/login
// (case, //, /./, ;params, %-escapes) sent raw over real sockets to the
// gateway in front of an app that routes case-insensitively like Express;
// the policy allows 5 then blocks for an hour, so at most 5 reach the app.
func TestGateway_LoginSpellingsReachTheAppAtMost5Times(t *testing.T) {
	var logins atomic.Int64
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.EqualFold(path.Clean(strings.Split(r.URL.EscapedPath(), ";")[0]), "/auth/login") {
			logins.Add(1)
		}
	}))
	defer app.Close()
	srv := startGateway(t, app.URL, `
rules:
  - name: login
    paths: [/auth/login]
    key: [ip]
    limits: [{limit: 5, window: 15m, block: 1h}]
`, gateway.Config{})
	spellings := []string{"/auth/login", "/AUTH/LOGIN", "/Auth//Login", "/auth/./login", "/x/../auth/login", "/auth/login/",
		"/auth/login;jsessionid=1", "/auth/%6Cogin", "/%61uth/LOGIN", "/aUtH/lOgIn?x=1"}
	for i := 0; i < 200; i++ {
		conn, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", spellings[i%len(spellings)])
		io.Copy(io.Discard, conn)
		conn.Close()
	}
	if n := logins.Load(); n > 5 {
		t.Fatalf("%d logins reached the app through a limit of 5", n)
	}
}

// 32 clients × 50 requests reuse a pool of upstream connections instead of
// opening one per request. With the old transport (MaxIdleConnsPerHost: 2)
// this test counted 725 upstream connections.
func TestGateway_UpstreamConnectionsAreReused(t *testing.T) {
	var opened atomic.Int64
	upstream := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	upstream.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	upstream.Start()
	defer upstream.Close()
	srv := startGateway(t, upstream.URL, "rules:\n  - {name: r, paths: [/], limits: [{limit: 1000000, window: 1m}]}\n", gateway.Config{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				resp, err := client.Get("http://" + srv.Addr() + "/x")
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	client.CloseIdleConnections() // or Shutdown waits for the ones dialed but never used
	if n := opened.Load(); n > 64 {
		t.Fatalf("%d upstream connections for 1600 requests from 32 clients: the pool does not keep them", n)
	}
}

// A client that connects and sends nothing does not make a stop an error
// (nor hold it past the drain timeout); a request really in flight does.
func TestGateway_ShutdownIgnoresSilentConnectionsNotRequests(t *testing.T) {
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
	}))
	defer upstream.Close()
	defer close(release)
	p, err := policy.Parse("p.yaml", []byte("rules:\n  - {name: r, paths: [/], limits: [{limit: 100, window: 1m}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		slow    bool
		wantErr bool
	}{{"silent connection", false, false}, {"request in flight", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", Upstream: upstream.URL, Policy: p,
				Limiter: ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{}), ShutdownTimeout: 300 * time.Millisecond,
				Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if err := srv.Listen(ctx); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ctx) }()
			conn := dialClient(t, srv.Addr())
			if c.slow {
				fmt.Fprint(conn, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
			}
			time.Sleep(100 * time.Millisecond)
			cancel()
			err = <-done
			if (err != nil) != c.wantErr {
				t.Fatalf("Serve after stop: %v, want an error: %v", err, c.wantErr)
			}
		})
	}
}

// A client that leaves while its request is being checked cancels the
// request's context, and with it the check and everything after: on a
// store that hangs, the request ends when its client goes, not at the end
// of the limiter's budget (5 s here). The gateway's own HTTP/1.1 server
// gave handlers a context that never ended.
func TestGateway_ClientGoneCancelsTheRequestContext(t *testing.T) {
	hanging := redistest.HangingServer(t)
	client := redis.NewClient(&redis.Options{Addr: hanging, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	limiter := ratelimit.New(redisstore.New(client, redisstore.Options{}), ratelimit.Options{Budget: 5 * time.Second, Fail: ratelimit.FailOpen})
	up := &recorder{}
	upstream := httptest.NewServer(up)
	t.Cleanup(upstream.Close)
	srv := startGateway(t, upstream.URL, openTestPolicy, gateway.Config{Admin: ":0", Limiter: limiter, Logger: discardLogger()})
	conn := dialClient(t, srv.Addr())
	io.WriteString(conn, "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(200 * time.Millisecond) // the check waits on the store
	conn.Close()
	left := time.Now()
	for !strings.Contains(adminMetrics(t, srv), "gateway_client_gone_total 1") {
		if time.Since(left) > 2*time.Second {
			t.Fatalf("the request still in flight %v after its client left (budget 5s)", time.Since(left).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.hits != 0 {
		t.Errorf("the upstream saw %d requests of a client gone", up.hits)
	}
}

// adminMetrics is the admin API's /metrics page.
func adminMetrics(t *testing.T, srv *gateway.Server) string {
	t.Helper()
	m, err := http.Get("http://" + srv.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Body.Close()
	body, _ := io.ReadAll(m.Body)
	return string(body)
}
