package middleware_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/middleware"
	"github.com/devkit-go/devkit/ratelimit/policy"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
	"github.com/redis/go-redis/v9"
)

// rawRequest sends one request line as written (no client-side cleaning)
// over a real socket and returns the status.
func rawRequest(t *testing.T, addr, method, target string, headers ...string) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n", method, target)
	for _, h := range headers {
		fmt.Fprintf(conn, "%s\r\n", h)
	}
	fmt.Fprint(conn, "\r\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// caseInsensitiveApp routes like Express does by default: /AUTH/Login is
// /auth/login. It counts the logins that reach it.
type caseInsensitiveApp struct{ logins int }

func (a *caseInsensitiveApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if policy.NormalizePath(r.URL.EscapedPath(), false) == "/auth/login" && r.Method == "POST" {
		a.logins++
	}
	w.WriteHeader(200)
}

// 200 spellings of POST /auth/login (case, //, /./, /x/.., ;params, %-escapes
// of unreserved characters, a trailing /) reach a case-insensitive app; the
// login rule allows 5 per 15 minutes then blocks: 5 may reach it, not 200.
func TestBypass_SpellingsOfLoginShareOneBudget(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	app := &caseInsensitiveApp{}
	srv := httptest.NewServer(middleware.New(l, loadPolicy(t, "saas.yaml"), middleware.Options{}).Handler(app))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	spellings := []string{"/auth/login", "/auth//login", "/auth/./login", "/x/../auth/login", "/auth/login/",
		"/auth/login;jsessionid=1", "/auth/%6Cogin", "/%61uth/login", "//auth/login", "/auth/login%2F"}
	passed := 0
	for i := 0; i < 200; i++ {
		target := spellings[i%len(spellings)]
		if i%len(spellings) != len(spellings)-1 { // vary the case of every other character
			var b strings.Builder
			for j, c := range target {
				if (i+j)%2 == 0 {
					b.WriteString(strings.ToUpper(string(c)))
				} else {
					b.WriteRune(c)
				}
			}
			target = strings.ReplaceAll(b.String(), "%6C", "%6c")
		}
		if rawRequest(t, addr, "POST", target) == 200 {
			passed++
		}
	}
	if app.logins > 5 {
		t.Fatalf("%d logins reached the app through a limit of 5 (%d requests passed)", app.logins, passed)
	}
}

// A policy may opt into case-sensitive matching.
func TestMatch_CaseSensitiveOptIn(t *testing.T) {
	p := parsePolicy(t, "defaults: {case_sensitive: true}\nrules:\n  - {name: login, paths: [/auth/login], limits: [{limit: 1, window: 1m}]}\n")
	if p.Match(httptest.NewRequest("POST", "/AUTH/LOGIN", nil)) != nil {
		t.Fatal("case_sensitive: /AUTH/LOGIN matched /auth/login")
	}
	if p.Match(httptest.NewRequest("POST", "/auth//login/", nil)) == nil {
		t.Fatal("case_sensitive: the other normalizations still apply")
	}
}

// 300 GETs of /api/items/{i} share the template's budget (100): before,
// each id was its own key and every one of them passed, and 2 KB ids grew
// the store without bound.
func TestBypass_IDsInPathsDoNotMintKeys(t *testing.T) {
	store := memory.New(memory.Options{})
	l := ratelimit.New(store, ratelimit.Options{})
	h := middleware.New(l, loadPolicy(t, "saas.yaml"), middleware.Options{}).Handler(ok)
	hdr := map[string]string{"X-Workspace-ID": "ws", "X-Workspace-Plan": "free", "X-User-ID": "u"}
	passed := 0
	for i := 0; i < 300; i++ {
		if serve(h, "GET", fmt.Sprintf("/api/items/%d%s", i, strings.Repeat("z", i*7)), "127.0.0.1:1", hdr).Code == 200 {
			passed++
		}
	}
	if passed != 100 {
		t.Fatalf("%d of 300 GETs of /api/items/{i} passed a limit of 100", passed)
	}
	top, _ := l.Top(t.Context(), 10)
	if len(top) != 1 || strings.Contains(top[0].Key, "zzz") {
		t.Fatalf("keys %+v: want one, holding the template", top)
	}
}

// HEAD spends GET's budget, and a method a plan does not list (no "*") is
// charged under the plan's strictest limits instead of going unlimited.
func TestBypass_EveryMethodIsLimited(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	p := parsePolicy(t, `
identity: {trusted_proxies: [127.0.0.1], plan_header: X-Plan}
defaults: {plan: free}
rules:
  - name: api
    paths: [/]
    scope: tenant
    key: [ip]
    skip_methods: [OPTIONS]
    plans:
      free:
        GET:  [{limit: 3, window: 1m}]
        POST: [{limit: 2, window: 1m}]
`)
	if len(p.Warnings) == 0 || !strings.Contains(strings.Join(p.Warnings, "\n"), "PUT, PATCH, DELETE") {
		t.Errorf("lint warnings %q: want the methods the plan lacks", p.Warnings)
	}
	h := middleware.New(l, p, middleware.Options{}).Handler(ok)
	count := func(method string, n int) (passed int) {
		for i := 0; i < n; i++ {
			if serve(h, method, "/x", "127.0.0.1:1", nil).Code == 200 {
				passed++
			}
		}
		return passed
	}
	if got := count("GET", 2) + count("HEAD", 5); got != 3 {
		t.Errorf("GET+HEAD: %d passed, want 3 (HEAD charged as GET)", got)
	}
	if got := count("PATCH", 10); got != 2 {
		t.Errorf("PATCH: %d of 10 passed, want 2 (the plan's strictest, POST's)", got)
	}
	if got := count("OPTIONS", 10); got != 10 {
		t.Errorf("OPTIONS: %d of 10, want all (skip_methods)", got)
	}
}

// net/http cancels a request's context when the client half-closes (its
// background read meets EOF), yet the client still reads the answers: an
// attacker pipelines requests and half-closes. A check cut short by the
// cancelled context was decided by the failure policy, fail open by
// default, and the request handed to the next handler counted by nothing,
// so an in-process handler (a login) ran once per pipelined request past
// the limit. Now an in-process store decides regardless (the request is
// limited and answered) and a check on Redis cut short lets nothing
// through: the handler is aborted (http.ErrAbortHandler, the connection
// closed).
func TestBypass_ACancelledRequestContextIsStillLimited(t *testing.T) {
	for _, store := range []struct {
		name                string
		new                 func(t *testing.T) ratelimit.Store
		ran, denied, abortd int
	}{
		{"memory", func(*testing.T) ratelimit.Store { return memory.New(memory.Options{}) }, 2, 8, 0},
		{"redis", func(t *testing.T) ratelimit.Store {
			client := redis.NewClient(&redis.Options{Addr: redistest.StartRedis(t).Addr})
			t.Cleanup(func() { client.Close() })
			return redisstore.New(client, redisstore.Options{})
		}, 0, 0, 10},
	} {
		t.Run(store.name, func(t *testing.T) {
			l := ratelimit.New(store.new(t), ratelimit.Options{})
			p := parsePolicy(t, `
rules:
  - {name: login, paths: [/login], key: [ip], limits: [{limit: 2, window: 1h}]}
`)
			var ran, denied, aborted int
			h := middleware.New(l, p, middleware.Options{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ran++
			}))
			serveCancelled := func() {
				defer func() {
					if v := recover(); v != nil {
						if err, _ := v.(error); !errors.Is(err, http.ErrAbortHandler) {
							panic(v)
						}
						aborted++
					}
				}()
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				r := httptest.NewRequest("POST", "/login", nil).WithContext(ctx)
				r.RemoteAddr = "203.0.113.9:5000"
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code == http.StatusTooManyRequests {
					denied++
				}
			}
			for range 10 {
				serveCancelled()
			}
			if ran != store.ran || denied != store.denied || aborted != store.abortd {
				t.Errorf("10 requests with a cancelled context: the handler ran %d times, %d denied, %d aborted; want %d, %d, %d",
					ran, denied, aborted, store.ran, store.denied, store.abortd)
			}
		})
	}
}
