package gateway_test

// A real Express app (testdata/express, express pinned in its
// package-lock.json) behind the gateway, attacked as the filers did:
// spellings of the login and item routes that Express routes to the same
// handler, and identity headers from an untrusted peer. The app counts what
// reached each handler and keeps the headers it saw. Only the gateway's
// public API (gateway.New, Listen, Serve) is used.
//
// Without node and npm the test skips with the install hint; under CI=true
// it fails instead (.ci/run installs them and runs npm ci).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/policy"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// nodeHint tells how to get what the Express test needs.
const nodeHint = "apt-get install nodejs npm, then npm ci --prefix ratelimit/gateway/testdata/express"

// requireOrSkip skips t with msg, or fails it under CI=true.
func requireOrSkip(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: the Express test must run)")
	}
	t.Skip(msg)
}

// expressDir is a directory holding the app and its node_modules: the
// testdata one when npm ci ran there, else a copy in which the test runs
// npm ci itself.
func expressDir(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			requireOrSkip(t, bin+" not found on PATH; install it: "+nodeHint)
		}
	}
	src, err := filepath.Abs(filepath.Join("testdata", "express"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "node_modules", "express", "package.json")); err == nil {
		return src
	}
	dir := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json", "app.js"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--prefer-offline")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		requireOrSkip(t, fmt.Sprintf("npm ci for the Express app failed (no registry?): %v\n%s", err, out))
	}
	return dir
}

// startExpress runs the app on a free 127.0.0.1 port and returns its base
// URL; it is stopped (stdin closed, then killed by its PID) at cleanup.
func startExpress(t *testing.T) string {
	t.Helper()
	dir := expressDir(t)
	cmd := exec.Command("node", "app.js")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
		}
	}()
	select {
	case p := <-port:
		return "http://127.0.0.1:" + p
	case <-time.After(20 * time.Second):
		t.Fatal("the Express app did not say it was listening within 20s")
	}
	return ""
}

// expressView is the app's own account (GET /__counts).
type expressView struct {
	Counts struct{ Login, Items, Other int }
	Seen   []struct {
		Path, IP, XFF, XRealIP, Forwarded, Tenant, Plan string
	}
}

func viewOf(t *testing.T, app string) expressView {
	t.Helper()
	resp, err := http.Get(app + "/__counts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v expressView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

const expressPolicy = `
identity:
  trusted_proxies: [127.0.0.1]
  tenant_header: X-Tenant-ID
  plan_header: X-Plan
defaults: {plan: free}
rules:
  - name: login
    paths: [/auth/login]
    key: [ip]
    limits: [{limit: 5, window: 15m, block: 1h}]
  - name: items
    paths: ["/api/items/{id}"]
    scope: tenant
    key: [tenant, ip, route]
    plans:
      free: {"*": [{limit: 20, window: 1h}]}
      enterprise: {"*": [{limit: 100000, window: 1h}]}
`

// rawRequest sends one request line as written (no client-side cleaning of
// the path) from the local address from, with extra header lines, and
// returns the status code.
func rawRequest(t *testing.T, from, addr, method, target string, headers ...string) int {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: app.example\r\nContent-Length: 0\r\nConnection: close\r\n", method, target)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// 200 POSTs of login spellings and 300 GETs of item spellings from an
// untrusted peer (127.0.0.2) that also claims another client address
// (X-Forwarded-For, X-Real-IP, Forwarded), a tenant and the enterprise plan
// on every request, through the gateway (Redis store) to Express: exactly
// the limits' 5 logins and 20 item reads reach the app (the logins spelled
// as Express routes them to its handler), and no request carries a header
// the peer made up: Express's own req.ip is the peer.
func TestExpress_AttacksFromAnUntrustedPeerHoldTheLimitsAndReachNoHandlerSpoofed(t *testing.T) {
	app := startExpress(t)
	srv := redistest.StartRedis(t)
	client, err := redisstore.NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	pol, err := policy.Parse("express.yaml", []byte(expressPolicy))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{
		Listen: "127.0.0.1:0", Upstream: app, Policy: pol,
		Limiter: ratelimit.New(redisstore.New(client, redisstore.Options{}), ratelimit.Options{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := gw.Listen(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- gw.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})

	spoof := func(i int) []string {
		return []string{
			fmt.Sprintf("X-Forwarded-For: 10.%d.%d.1, 127.0.0.1", i/250, i%250),
			fmt.Sprintf("X-Real-IP: 10.99.%d.%d", i/250, i%250),
			fmt.Sprintf("Forwarded: for=10.98.%d.%d;proto=https", i/250, i%250),
			fmt.Sprintf("X-Tenant-ID: victim-%d", i),
			"X-Plan: enterprise",
		}
	}
	// The first five are spellings Express itself routes to POST
	// /auth/login, so the five the limit lets through reach the handler.
	logins := []string{"/auth/login", "/AUTH/LOGIN", "/Auth/Login/", "/auth/login?next=/", "/aUtH/lOgIn",
		"/auth//login", "/auth/./login", "/x/../auth/login", "/auth/login;jsessionid=1", "/auth/%6Cogin", "/%61uth/LOGIN", "//auth/login"}
	codes := map[int]int{}
	for i := 0; i < 200; i++ {
		codes[rawRequest(t, "127.0.0.2", gw.Addr(), "POST", logins[i%len(logins)], spoof(i)...)]++
	}
	items := []string{"/api/items/%d", "/API/Items/%d", "/api/items/%d/", "/api/items/%d;v=2", "/Api/ITEMS/%d?x=1",
		"/api//items/%d", "/api/./items/%d", "/api/x/../items/%d", "/api/items/%d%%2F", "/%%61pi/items/%d"}
	for i := 0; i < 300; i++ {
		codes[rawRequest(t, "127.0.0.2", gw.Addr(), "GET", fmt.Sprintf(items[i%len(items)], i), spoof(1000+i)...)]++
	}

	v := viewOf(t, app)
	// Express routes some admitted spellings elsewhere (its router does not
	// clean //, /./ or %-escapes: a 404 there, which is no bypass); every
	// request that reached it counts, whatever handler took it.
	if v.Counts.Login != 5 || v.Counts.Items < 1 || v.Counts.Items+v.Counts.Other != 20 {
		t.Errorf("the login handler ran %d times (limit 5), the item handler %d and the 404 handler %d (limit 20 together); gateway answers %v",
			v.Counts.Login, v.Counts.Items, v.Counts.Other, codes)
	}
	reached := 0
	for _, s := range v.Seen {
		if strings.HasPrefix(s.Path, "/__counts") {
			continue // the test's own question
		}
		reached++
		if s.Tenant != "" || s.Plan != "" || s.IP != "127.0.0.2" || s.XFF != "127.0.0.2" ||
			(s.XRealIP != "" && s.XRealIP != "127.0.0.2") || (s.Forwarded != "" && !strings.HasPrefix(s.Forwarded, "for=127.0.0.2")) {
			t.Errorf("Express saw %s with tenant %q, plan %q, req.ip %q, X-Forwarded-For %q, X-Real-IP %q, Forwarded %q: "+
				"want only the verified peer 127.0.0.2", s.Path, s.Tenant, s.Plan, s.IP, s.XFF, s.XRealIP, s.Forwarded)
		}
	}
	if reached != 25 {
		t.Errorf("%d requests reached Express; want exactly the 25 the limits allow", reached)
	}
	// The 30 spellings with an encoded slash are refused (400) before the
	// limit: the policy's escaped_slashes is reject by default.
	if codes[http.StatusTooManyRequests] != 500-25-30 || codes[http.StatusBadRequest] != 30 {
		t.Errorf("gateway answers %v: want 445 × 429 and 30 × 400", codes)
	}
}
