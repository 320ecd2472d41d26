//go:build unix

package gateway_test

// nginx's auth_request in front of the gateway's auth endpoint, with a real
// nginx (Debian's nginx-light): nginx instances that ask devkit share one
// budget in Redis, where nginx's own limit_req counts per instance.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// authPolicy trusts 127.0.0.2, the address nginx asks devkit from
// (proxy_bind), and no other: clients on 127.0.0.1 are never believed.
const authPolicy = `
identity:
  trusted_proxies: [127.0.0.2/32]
  user_header: X-User-ID
rules:
  - {name: free, paths: [/free], skip: true}
  - name: api
    paths: [/api]
    key: [ip]
    limits: [{limit: 10, window: 1m}]
`

const authLimit = 10

// nginxAuthLocations is the configuration of docs/ratelimit.md (nginx
// auth_request): the protected location, the internal auth location and
// the named location that answers a denial with devkit's fields.
const nginxAuthLocations = `
    location / {
      auth_request /_ratelimit;
      auth_request_set $rl_limit $upstream_http_x_ratelimit_limit;
      auth_request_set $rl_remaining $upstream_http_x_ratelimit_remaining;
      auth_request_set $rl_reset $upstream_http_x_ratelimit_reset;
      auth_request_set $rl_policy $upstream_http_ratelimit_policy;
      auth_request_set $rl_ratelimit $upstream_http_ratelimit;
      auth_request_set $rl_retry_after $upstream_http_retry_after;
      add_header X-RateLimit-Limit $rl_limit always;
      add_header X-RateLimit-Remaining $rl_remaining always;
      add_header X-RateLimit-Reset $rl_reset always;
      add_header RateLimit-Policy $rl_policy always;
      add_header RateLimit $rl_ratelimit always;
      error_page 403 = @ratelimited;
      proxy_pass http://app;
    }
    location = /_ratelimit {
      internal;
      proxy_pass http://devkit/ratelimit/auth?deny_status=403;
      proxy_bind 127.0.0.2;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URI $request_uri;
      proxy_set_header X-Original-Method $request_method;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
    location @ratelimited {
      auth_request off;
      add_header X-RateLimit-Limit $rl_limit always;
      add_header X-RateLimit-Remaining $rl_remaining always;
      add_header X-RateLimit-Reset $rl_reset always;
      add_header RateLimit-Policy $rl_policy always;
      add_header RateLimit $rl_ratelimit always;
      add_header Retry-After $rl_retry_after always;
      default_type application/problem+json;
      return 429 '{"type":"about:blank","title":"Too Many Requests","status":429}\n';
    }
`

// nginxLimitReqLocations is nginx's own limiter at the same limit: 10 at
// once (burst 9 with nodelay), refilled at 10 a minute, per instance.
const nginxLimitReqLocations = `
    location / {
      limit_req zone=perip burst=9 nodelay;
      proxy_pass http://app;
    }
`

// nginxBinary finds nginx, or skips (fails under CI=true) with the install hint.
func nginxBinary(t *testing.T) string {
	t.Helper()
	if bin, err := exec.LookPath("nginx"); err == nil {
		return bin
	}
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("nginx not found (apt-get install nginx-light); CI=true: the auth_request tests must run")
	}
	t.Skip("nginx not found: apt-get install nginx-light")
	return ""
}

// startNginxWith runs one nginx in the foreground (a single process, no
// workers to leave behind) with its own prefix and configuration in a
// temporary directory, listening on a free 127.0.0.1 port; devkit is the
// auth server's address (may be empty), app the upstream's. It is stopped
// at cleanup.
func startNginxWith(t *testing.T, locations, devkit, app string) string {
	t.Helper()
	bin := nginxBinary(t)
	dir := t.TempDir()
	port := redistest.FreePort(t)
	devkitUpstream := ""
	if devkit != "" {
		devkitUpstream = "upstream devkit { server " + devkit + "; keepalive 8; }"
	}
	conf := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path %[1]s/body; proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fcgi; uwsgi_temp_path %[1]s/uwsgi; scgi_temp_path %[1]s/scgi;
  limit_req_zone $binary_remote_addr zone=perip:1m rate=10r/m;
  limit_req_status 429;
  upstream app { server %[2]s; }
  %[3]s
  server {
    listen 127.0.0.1:%[4]d;
%[5]s
  }
}
`, dir, app, devkitUpstream, port, locations)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt) // fast shutdown
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "error.log")); err == nil {
				t.Logf("nginx error.log:\n%s", b)
			}
		}
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(5 * time.Second); ; {
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited at start:\n%s", b)
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nginx did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + addr
}

// countingApp is the upstream behind nginx; it counts what reaches it.
func countingApp(t *testing.T) (string, *atomic.Int64) {
	var hits atomic.Int64
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(app.Close)
	return app.Listener.Addr().String(), &hits
}

// startAuthServer starts a gateway with no upstream, answering the auth
// path only, on limiter.
func startAuthServer(t *testing.T, limiter *ratelimit.Limiter) *gateway.Server {
	t.Helper()
	srv, cancel, done := launchGateway(t, gateway.Config{Listen: "127.0.0.1:0", AuthPath: "/ratelimit/auth",
		Policy: mustPolicy(t, authPolicy), Limiter: limiter, Logger: discardLogger()})
	t.Cleanup(stopper(t, cancel, done))
	return srv
}

func limiterOn(t *testing.T, rs *redistest.Server) *ratelimit.Limiter {
	t.Helper()
	client, err := redisstore.NewClient(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return ratelimit.New(redisstore.New(client, redisstore.Options{}), ratelimit.Options{})
}

// spread sends n GETs of path, round robin over the targets, 10 at a time,
// and counts the answers by status.
func spread(t *testing.T, targets []string, path string, n int, header http.Header) map[int]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 10)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			req, _ := http.NewRequest(http.MethodGet, targets[i%len(targets)]+path, nil)
			for k, v := range header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			counts[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return counts
}

// Three nginx instances, each asking its own devkit auth server, all on one
// Redis, admit exactly the limit of one identity; three nginx with
// limit_req at the same limit admit about three times it (each counts
// alone). Every request is counted once: twice would admit half the limit.
func TestNginxAuthRequest_ThreeInstancesOneRedisAdmitExactlyTheLimit(t *testing.T) {
	nginxBinary(t)
	rs := redistest.StartRedis(t)
	app, hits := countingApp(t)
	var shared []string
	for range 3 {
		srv := startAuthServer(t, limiterOn(t, rs))
		shared = append(shared, startNginxWith(t, nginxAuthLocations, srv.Addr(), app))
	}
	got := spread(t, shared, "/api/items", 60, nil)
	if got[200] != authLimit || got[429] != 60-authLimit || hits.Load() != authLimit {
		t.Fatalf("auth_request, 3 nginx on one Redis: answers %v, app reached %d times; want exactly %d of 60 admitted, the rest 429",
			got, hits.Load(), authLimit)
	}

	app2, hits2 := countingApp(t)
	var own []string
	for range 3 {
		own = append(own, startNginxWith(t, nginxLimitReqLocations, "", app2))
	}
	peer := spread(t, own, "/api/items", 60, nil)
	t.Logf("limit %d over 60 requests: 3 nginx + devkit on one Redis admitted %d; 3 nginx with limit_req admitted %d",
		authLimit, got[200], peer[200])
	if peer[200] < 3*authLimit-1 || hits2.Load() != int64(peer[200]) {
		t.Fatalf("limit_req on 3 nginx admitted %d (app %d); want about 3×%d: each instance counts on its own", peer[200], hits2.Load(), authLimit)
	}
}

// The answer nginx gives carries devkit's fields, copied with
// auth_request_set and add_header: on an admitted request and on a denial
// (429 with Retry-After).
func TestNginxAuthRequest_FieldsCopiedToAdmissionsAndDenials(t *testing.T) {
	nginxBinary(t)
	app, _ := countingApp(t)
	srv := startAuthServer(t, newMemoryLimiter())
	base := startNginxWith(t, nginxAuthLocations, srv.Addr(), app)
	for i := range authLimit + 1 {
		resp, err := http.Get(base + "/api/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		h := resp.Header
		if h.Get("X-RateLimit-Limit") != "10" || h.Get("RateLimit-Policy") == "" || h.Get("RateLimit") == "" {
			t.Fatalf("request %d: %s without devkit's fields: %v", i+1, resp.Status, h)
		}
		if i < authLimit {
			if resp.StatusCode != 200 || h.Get("X-RateLimit-Remaining") != strconv.Itoa(authLimit-1-i) {
				t.Fatalf("request %d: %s, remaining %q", i+1, resp.Status, h.Get("X-RateLimit-Remaining"))
			}
			continue
		}
		if resp.StatusCode != 429 || h.Get("Retry-After") == "" || h.Get("X-RateLimit-Remaining") != "0" {
			t.Fatalf("over the limit: %s, Retry-After %q, remaining %q", resp.Status, h.Get("Retry-After"), h.Get("X-RateLimit-Remaining"))
		}
	}
}

// A client cannot move its request to another key or rule: X-Original-URI
// and X-Original-Method sent to nginx are replaced by nginx's own, and
// X-Forwarded-For is read from the right (nginx appends the client), so the
// spoofed requests spend the budget of the route and address they are.
// A client that calls the auth endpoint itself (not a trusted proxy) is
// refused 403, without a count.
func TestNginxAuthRequest_SpoofedOriginalHeadersDoNotChangeTheKey(t *testing.T) {
	nginxBinary(t)
	app, hits := countingApp(t)
	limiter := newMemoryLimiter()
	srv := startAuthServer(t, limiter)
	base := startNginxWith(t, nginxAuthLocations, srv.Addr(), app)
	spoof := http.Header{
		"X-Original-Uri":     {"/free"},
		"X-Original-Method":  {"OPTIONS"},
		"X-Forwarded-Uri":    {"/free"},
		"X-Forwarded-Method": {"OPTIONS"},
	}
	for i := range 3 * authLimit {
		spoof.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i)) // a new client address each time
		got := spread(t, []string{base}, "/api/x", 1, spoof)
		if i >= authLimit {
			if got[429] != 1 {
				t.Fatalf("spoofed request %d over the limit: %v, want 429: the spoofed headers moved it to another key", i+1, got)
			}
		} else if got[200] != 1 {
			t.Fatalf("spoofed request %d: %v, want 200", i+1, got)
		}
	}
	if hits.Load() != authLimit {
		t.Fatalf("the app was reached %d times, want %d", hits.Load(), authLimit)
	}
	before := limiter.Stats().Snapshot()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+srv.Addr()+"/ratelimit/auth", nil)
	req.Header.Set("X-Original-URI", "/api/x")
	req.Header.Set("X-Original-Method", "GET")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "trusted proxies") {
		t.Fatalf("the auth endpoint called by a client: %s %s, want 403", resp.Status, body)
	}
	if after := limiter.Stats().Snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a refused auth call was counted: %v → %v", before, after)
	}
}

// The auth endpoint's own answers: 204 with the fields, 429 (or the
// deny_status asked for), 204 without fields for an unlimited route, and a
// precise 400 for a request it cannot decide.
func TestAuthEndpoint_AnswersAndErrors(t *testing.T) {
	srv := startAuthServer(t, newMemoryLimiter())
	client := clientFrom("127.0.0.2")
	ask := func(query string, h map[string]string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+srv.Addr()+"/ratelimit/auth"+query, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	api := map[string]string{"X-Original-URI": "/API//items/../x?q=1", "X-Original-Method": "GET"}
	for i := range authLimit {
		resp, _ := ask("", api)
		if resp.StatusCode != 204 || resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(authLimit-1-i) {
			t.Fatalf("check %d: %s remaining %q", i+1, resp.Status, resp.Header.Get("X-RateLimit-Remaining"))
		}
	}
	if resp, body := ask("", api); resp.StatusCode != 429 || !strings.Contains(body, `"rule":"api"`) {
		t.Fatalf("over the limit: %s %s", resp.Status, body)
	}
	if resp, _ := ask("?deny_status=403", api); resp.StatusCode != 403 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("deny_status=403: %s %v", resp.Status, resp.Header)
	}
	// The Traefik/Caddy spelling, for an unlimited route.
	if resp, _ := ask("", map[string]string{"X-Forwarded-Uri": "/free/x", "X-Forwarded-Method": "POST"}); resp.StatusCode != 204 ||
		resp.Header.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("unlimited route: %s %v", resp.Status, resp.Header)
	}
	for _, c := range []struct {
		query string
		h     map[string]string
		want  string
	}{
		{"", map[string]string{"X-Original-Method": "GET"}, "X-Original-URI (or X-Forwarded-Uri) is required"},
		{"", map[string]string{"X-Original-URI": "/api"}, "X-Original-Method (or X-Forwarded-Method) is required"},
		{"", map[string]string{"X-Original-URI": "/api", "X-Original-Method": "G(T"}, "not an HTTP method"},
		{"", map[string]string{"X-Original-URI": "api", "X-Original-Method": "GET"}, "not a request URI"},
		{"", map[string]string{"X-Original-URI": "/free/..%2fapi", "X-Original-Method": "GET"}, "encoded slash"},
		{"?deny_status=500", api, "deny_status must be 401, 403 or 429"},
	} {
		if resp, body := ask(c.query, c.h); resp.StatusCode != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%v %s: %s %s, want 400 saying %q", c.h, c.query, resp.Status, body, c.want)
		}
	}
	// With no upstream, other paths are 404.
	resp, err := client.Get("http://" + srv.Addr() + "/api/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("a path other than the auth path with no upstream: %s, want 404", resp.Status)
	}
}
