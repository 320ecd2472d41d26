package ratelimit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil/cmdtest"
	rl "github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// run executes `devkit ratelimit args...` in process with env as the
// environment, and returns stdout, stderr and the exit code.
func run(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	f := cmdutil.NewFactory(ios)
	f.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cmd := NewCmd(f)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	var ee *cmdutil.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.Silent) {
		errOut.WriteString(err.Error())
	}
	cmdtest.CheckJSONOutput(t, args, out.String())
	return out.String(), errOut.String(), cmdutil.ExitCode(err)
}

func TestCheck_WithoutStoreSaysHowToGiveOne(t *testing.T) {
	_, stderr, code := run(t, nil, "check", "k", "--limit", "5", "--window", "1m")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "--redis") || !strings.Contains(stderr, "REDIS_URL") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestCheck_UsageErrors(t *testing.T) {
	env := map[string]string{"REDIS_URL": "redis://127.0.0.1:1"}
	for _, args := range [][]string{
		{"check", "k", "--limit", "5", "--window", "1m", "--algorithm", "leaky-bucket"},
		{"check", "k", "--limit", "0", "--window", "1m"},
		{"check", "k", "--limit", "5", "--window", "1m", "--burst", "9"},
		{"check", "k", "--limit", "5", "--window", "1m", "--cost", "0"},
		{"check", "--limit", "5", "--window", "1m"},
		{"top", "-n", "0"},
	} {
		if _, stderr, code := run(t, env, args...); code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}
}

// A --prefix with a brace would put the store's keys in the wrong cluster
// slots (or every identity in one): every verb that opens the store refuses
// it as a usage error before it connects, naming the flag and a fix.
func TestStoreVerbs_PrefixWithABraceIsAUsageError(t *testing.T) {
	env := map[string]string{"REDIS_URL": "redis://127.0.0.1:1"}
	for _, prefix := range []string{"app{x}:", "app{}:", "}:", "{"} {
		for _, verb := range [][]string{
			{"check", "k", "--limit", "5", "--window", "1m"},
			{"info", "k"},
			{"reset", "k"},
			{"top"},
			{"proxy", "--upstream", "http://127.0.0.1:1", "--policy", "../../../../../examples/policies/saas.yaml", "--listen", "127.0.0.1:0"},
		} {
			args := append([]string{"--prefix", prefix}, verb...)
			_, stderr, code := run(t, env, args...)
			if code != cmdutil.ExitUsage || !strings.Contains(stderr, "--prefix") || !strings.Contains(stderr, "without braces") {
				t.Errorf("%v: exit %d, stderr %q; want 2 naming --prefix", args, code, stderr)
			}
		}
	}
}

func TestCheckInfoResetHealth_RealRedis(t *testing.T) {
	srv := redistest.StartRedis(t)
	env := map[string]string{"REDIS_URL": srv.URL()}
	login := []string{"check", "login:203.0.113.9", "--limit", "5", "--window", "15m", "--block", "1h"}
	for i := 1; i <= 5; i++ {
		if out, stderr, code := run(t, env, login...); code != 0 || !strings.HasPrefix(out, "allowed:") {
			t.Fatalf("attempt %d: exit %d %q %q", i, code, out, stderr)
		}
	}
	out, _, code := run(t, env, append(login, "--json")...)
	// One flat object: the library's LimitResult fields of the binding
	// limit, and what check adds (key, algorithm, cost, store_seconds).
	var res struct {
		Key        string  `json:"key"`
		Name       string  `json:"name"`
		Algorithm  string  `json:"algorithm"`
		Limit      int64   `json:"limit"`
		Allowed    bool    `json:"allowed"`
		Blocked    bool    `json:"blocked"`
		RetryAfter float64 `json:"retry_after_seconds"`
		Cost       int64   `json:"cost"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json %q: %v", out, err)
	}
	if code != cmdutil.ExitNegative || res.Allowed || !res.Blocked || res.RetryAfter != 3600 || res.Limit != 5 ||
		res.Key != "login:203.0.113.9" || res.Algorithm != "fixed-window" || res.Cost != 1 || res.Name == "" {
		t.Fatalf("attempt 6: exit %d %+v", code, res)
	}
	out, _, code = run(t, env, "info", "login:203.0.113.9")
	if code != 0 || !strings.Contains(out, "hits:     6") || !strings.Contains(out, "blocked:  for ") {
		t.Fatalf("info: exit %d\n%s", code, out)
	}
	if _, _, code := run(t, env, "info", "nobody"); code != cmdutil.ExitNegative {
		t.Fatalf("info of an unknown key: exit %d, want 3", code)
	}
	// --json is the library's ratelimit.KeyInfo, storage key included.
	out, _, code = run(t, env, "info", "login:203.0.113.9", "--json")
	var info rl.KeyInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || code != 0 || info.Hits != 6 ||
		info.StorageKey != "rl:{login:203.0.113.9}" || info.BlockedFor <= 59*time.Minute || info.TTL <= 0 {
		t.Fatalf("info --json: exit %d %+v %v\n%s", code, info, err, out)
	}
	if out, _, code := run(t, env, "health", "--json"); code != 0 || !strings.Contains(out, `"latency_seconds"`) {
		t.Fatalf("health --json: exit %d %s", code, out)
	}
	// --redis wins over REDIS_URL; --prefix separates namespaces.
	if _, _, code := run(t, map[string]string{"REDIS_URL": "redis://127.0.0.1:1"}, "--redis", srv.URL(), "--prefix", "other:", "info", "login:203.0.113.9"); code != cmdutil.ExitNegative {
		t.Fatalf("info under another prefix: exit %d, want 3", code)
	}
	if out, _, code := run(t, env, "reset", "login:203.0.113.9"); code != 0 || !strings.Contains(out, "reset login:203.0.113.9") {
		t.Fatalf("reset: exit %d %q", code, out)
	}
	if out, _, code := run(t, env, "reset", "login:203.0.113.9", "--json"); code != cmdutil.ExitNegative || !strings.Contains(out, `"existed": false`) {
		t.Fatalf("second reset: exit %d, want 3; %s", code, out)
	}
	if out, _, code := run(t, env, login...); code != 0 || !strings.Contains(out, "4 of 5 left") {
		t.Fatalf("after reset: exit %d %q", code, out)
	}
	if out, _, code := run(t, env, "health"); code != 0 || !strings.HasPrefix(out, "ok:") {
		t.Fatalf("health: exit %d %q", code, out)
	}
	srv.Stop()
	if out, _, code := run(t, env, "health", "--json"); code != cmdutil.ExitNegative || !strings.Contains(out, `"ok": false`) {
		t.Fatalf("health with redis stopped: exit %d %q", code, out)
	}
	if _, _, code := run(t, env, login...); code != cmdutil.ExitFailure {
		t.Fatalf("check with redis stopped: exit %d, want 1", code)
	}
}

func TestTop_ClusterFromCommaList(t *testing.T) {
	cl := redistest.StartCluster(t)
	env := map[string]string{"REDIS_URL": cl.URL()}
	for i, key := range []string{"a", "b", "b", "c", "c", "c", "d", "e", "f", "g"} {
		if _, stderr, code := run(t, env, "check", key, "--limit", "100", "--window", "1m", "--algorithm", "gcra"); code != 0 {
			t.Fatalf("check %d: exit %d %s", i, code, stderr)
		}
	}
	out, _, code := run(t, env, "top", "-n", "2", "--json")
	var top []rl.Consumer
	if err := json.Unmarshal([]byte(out), &top); err != nil || code != 0 {
		t.Fatalf("top: exit %d %q %v", code, out, err)
	}
	if len(top) != 2 || top[0].Key != "c" || top[0].Hits != 3 || top[1].Key != "b" {
		t.Fatalf("top = %+v", top)
	}
	out, _, _ = run(t, env, "top", "-n", "100")
	if got := strings.Count(out, "\n"); got != 8 { // header + 7 keys, spread over 3 masters
		t.Fatalf("top lists %d lines, want 8:\n%s", got, out)
	}
}

func TestLint(t *testing.T) {
	out, _, code := run(t, nil, "lint", "--policy", "../../../../../examples/policies/saas.yaml")
	if code != 0 || !strings.Contains(out, "login: fixed-window 5/15m0s block 1h0m0s") || !strings.Contains(out, "[pro DELETE] api-pro-delete: fixed-window 50/1m0s") {
		t.Fatalf("lint saas: exit %d\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("rules:\n  - name: a\n    paths: [/]\n    limits:\n      - {limit: 5, window: soon}\n"), 0o644)
	_, stderr, code := run(t, nil, "lint", "--policy", bad)
	if code != cmdutil.ExitFailure || !strings.Contains(stderr, `bad.yaml:5: rules[0].limits[0].window: "soon" is not a duration`) {
		t.Fatalf("lint bad: exit %d %q", code, stderr)
	}
	if _, _, code := run(t, nil, "lint"); code == 0 {
		t.Fatal("lint without --policy succeeded")
	}
	// Valid but unsafe: warned about on stderr, exit 0.
	unsafe := filepath.Join(t.TempDir(), "unsafe.yaml")
	os.WriteFile(unsafe, []byte(`identity: {plan_header: X-Plan}
defaults: {plan: free}
rules:
  - name: api
    paths: [/]
    key: [path]
    plans:
      free: {GET: [{limit: 5, window: 1m}]}
`), 0o644)
	_, stderr, code = run(t, nil, "lint", "--policy", unsafe)
	for _, want := range []string{"keys on the raw path", "no limits for POST, PUT, PATCH, DELETE, OPTIONS", "never believed"} {
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("lint unsafe: exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
}

// TestLint_ReportsEveryMistakeOfTheFile: a wrong type in one rule does not
// hide a wrong value in another, so one lint run is enough to fix a file.
func TestLint_ReportsEveryMistakeOfTheFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte(`rules:
  - name: a
    paths: [/a]
    limits: [{limit: 5, window: soon}]
  - name: b
    paths: [/b]
    key: [nosuch]
    limits: [{limit: 5, window: 1m}]
  - name: c
    paths: [/c]
    limits: [{algorithm: leaky, limit: 5, window: 1m}]
`), 0o644)
	_, stderr, code := run(t, nil, "lint", "--policy", bad)
	want := []string{
		`bad.yaml:4: rules[0].limits[0].window: "soon" is not a duration`,
		`bad.yaml:7: rules[1].key[0]: unknown key part "nosuch"`,
		`bad.yaml:11: rules[2].limits[0].algorithm: unknown algorithm "leaky"`,
	}
	for _, w := range want {
		if code != cmdutil.ExitFailure || !strings.Contains(stderr, w) {
			t.Errorf("lint: exit %d, stderr lacks %q:\n%s", code, w, stderr)
		}
	}
}

const proxyPolicy = `
identity:
  trusted_proxies: [10.0.0.0/8]
rules:
  - {name: health, paths: [/health], skip: true}
  - name: login
    paths: [/auth/login]
    key: [ip]
    limits: [{limit: LIMIT, window: 15m, block: 1h}]
`

func writePolicy(t *testing.T, path, limit string) { writePolicyTB(t, path, limit) }

func writePolicyTB(t testing.TB, path, limit string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Replace(proxyPolicy, "LIMIT", limit, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func startProxy(t *testing.T, opts *ProxyOptions) (listen, admin string) {
	return startProxyTB(t, opts)
}

func startProxyTB(t testing.TB, opts *ProxyOptions) (listen, admin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	opts.Ready = func(l, a string) { ready <- [2]string{l, a} }
	if opts.IO == nil {
		opts.IO = &cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}
	}
	done := make(chan error, 1)
	go func() { done <- proxyRun(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
	})
	select {
	case addrs := <-ready:
		return addrs[0], addrs[1]
	case err := <-done:
		t.Fatalf("proxy did not start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("proxy did not start")
	}
	return "", ""
}

func TestProxy_LimitsForwardsAndReloads(t *testing.T) {
	var mu sync.Mutex
	var seenXFF []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seenXFF = append(seenXFF, r.Header.Get("X-Forwarded-For"))
		mu.Unlock()
		io.WriteString(w, "upstream:"+r.URL.Path)
	}))
	defer upstream.Close()
	policyPath := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicy(t, policyPath, "2")
	reload := make(chan struct{}, 1)
	listen, admin := startProxy(t, &ProxyOptions{
		Store: &StoreOptions{}, Listen: "127.0.0.1:0", Admin: "127.0.0.1:0",
		Upstream: upstream.URL, Policy: policyPath, WatchInterval: time.Hour, Reload: reload,
	})
	post := func(path string) *http.Response {
		req, _ := http.NewRequest("POST", "http://"+listen+path, nil)
		req.Header.Set("X-Forwarded-For", "6.6.6.6") // from an untrusted peer: ignored for limiting
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := 0; i < 2; i++ {
		if resp := post("/auth/login"); resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("login %d: %d %v", i, resp.StatusCode, resp.Header)
		}
	}
	resp := post("/auth/login")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3600" || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("login 3: %d %v", resp.StatusCode, resp.Header)
	}
	for i := 0; i < 10; i++ {
		if resp := post("/health"); resp.StatusCode != 200 {
			t.Fatalf("health: %d", resp.StatusCode)
		}
	}
	mu.Lock()
	// The untrusted client's claimed hop is dropped, not passed on.
	if len(seenXFF) != 12 || seenXFF[0] != "127.0.0.1" {
		t.Fatalf("upstream saw %d requests, X-Forwarded-For %q", len(seenXFF), seenXFF)
	}
	mu.Unlock()

	metrics := adminGet(t, admin, "/metrics")
	if !strings.Contains(metrics, `ratelimit_denied_total{rule="login"} 1`) || !strings.Contains(metrics, `ratelimit_allowed_total{rule="login"} 2`) {
		t.Fatalf("metrics:\n%s", metrics)
	}
	// The admin JSON keeps the schema rule (adminGet checks it).
	if info := adminGet(t, admin, "/info?key=login|ip=127.0.0.1"); !strings.Contains(info, `"blocked_for_seconds"`) {
		t.Fatalf("admin /info: %s", info)
	}
	adminGet(t, admin, "/top?n=3")
	adminGet(t, admin, "/health")
	// The admin address resets; the public one cannot.
	post("/reset?key=login|ip=127.0.0.1") // goes to the upstream, not to the limiter
	if resp := post("/auth/login"); resp.StatusCode != 429 {
		t.Fatalf("a public /reset lifted the limit: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", "http://"+admin+"/reset?key=login|ip=127.0.0.1", nil)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 200 {
		t.Fatalf("admin reset: %v %v", r, err)
	}

	writePolicy(t, policyPath, "50")
	reload <- struct{}{}
	deadline := time.Now().Add(5 * time.Second)
	for post("/auth/login").Header.Get("X-RateLimit-Limit") != "50" {
		if time.Now().After(deadline) {
			t.Fatal("policy not reloaded on signal")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProxy_RedisStoreSharedByTwoProxies(t *testing.T) {
	srv := redistest.StartRedis(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer upstream.Close()
	policyPath := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicy(t, policyPath, "3")
	var addrs []string
	for i := 0; i < 2; i++ {
		l, _ := startProxy(t, &ProxyOptions{Store: &StoreOptions{RedisURL: srv.URL()}, Listen: "127.0.0.1:0",
			Upstream: upstream.URL, Policy: policyPath, WatchInterval: time.Hour, Reload: make(chan struct{})})
		addrs = append(addrs, l)
	}
	var codes []int
	for i := 0; i < 6; i++ {
		resp, err := http.Post("http://"+addrs[i%2]+"/auth/login", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	want := []int{200, 200, 200, 429, 429, 429}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("codes across two proxies %v, want %v", codes, want)
		}
	}
}

func TestProxy_BadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"proxy", "--listen", ":0", "--upstream", "ftp://x", "--policy", "p.yaml"},
		{"proxy", "--listen", ":0", "--upstream", "http://x", "--policy", "../../../../../examples/policies/saas.yaml", "--fail", "maybe"},
		{"proxy", "--listen", ":0", "--upstream", "http://x", "--policy", "../../../../../examples/policies/saas.yaml", "--tls-cert", "c.pem"},
	} {
		if _, stderr, code := run(t, nil, args...); code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
}

func adminGet(t *testing.T, addr, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		cmdtest.CheckJSONOutput(t, []string{"GET", path, "--json"}, string(b))
	}
	return string(b)
}

// A missing required flag is a usage error (exit 2), as documented; cobra's
// own check exited 1.
func TestMissingRequiredFlag_Exits2(t *testing.T) {
	env := map[string]string{"REDIS_URL": "redis://127.0.0.1:1"}
	for _, args := range [][]string{
		{"check", "k", "--limit", "5"},
		{"check", "k", "--window", "1m"},
		{"lint"},
		{"proxy", "--listen", "127.0.0.1:0", "--policy", "p.yaml"},
	} {
		if _, stderr, code := run(t, env, args...); code != cmdutil.ExitUsage || !strings.Contains(stderr, "required flag") {
			t.Errorf("%v: exit %d (%s), want 2 naming the missing flag", args, code, stderr)
		}
	}
}

// check and info answer for the rule a described request would get: the
// same key and limits as the proxy (normalized path, template, identity).
func TestCheckAndInfo_WithPolicyAndARequest(t *testing.T) {
	srv := redistest.StartRedis(t)
	env := map[string]string{"REDIS_URL": srv.URL()}
	pol := filepath.Join("..", "..", "..", "..", "..", "examples", "policies", "saas.yaml")
	login := []string{"--policy", pol, "--method", "POST", "--ip", "203.0.113.9"}
	for i, path := range []string{"/auth/login", "/AUTH/Login", "/auth//login/", "/auth/./login", "/Auth/login;x=1"} {
		out, stderr, code := run(t, env, append([]string{"check", "--path", path}, login...)...)
		if code != 0 || !strings.Contains(out, "rule login") || !strings.Contains(out, "key login|ip=203.0.113.9") {
			t.Fatalf("check %d (%s): exit %d\n%s%s", i, path, code, out, stderr)
		}
	}
	out, _, code := run(t, env, append([]string{"check", "--path", "/auth/LOGIN", "--json"}, login...)...)
	var res struct {
		Allowed bool   `json:"allowed"`
		Rule    string `json:"rule"`
		Key     string `json:"key"`
		Limits  []struct {
			Name    string `json:"name"`
			Blocked bool   `json:"blocked"`
		} `json:"limits"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != cmdutil.ExitNegative || res.Allowed || res.Rule != "login" ||
		len(res.Limits) != 1 || !res.Limits[0].Blocked {
		t.Fatalf("6th login: exit %d %+v (%v)\n%s", code, res, err, out)
	}
	out, _, code = run(t, env, append([]string{"info", "--path", "/auth/login", "--json"}, login...)...)
	if code != 0 || !strings.Contains(out, `"key": "login|ip=203.0.113.9"`) || !strings.Contains(out, `"blocked_for_seconds": 3`) {
		t.Fatalf("info --policy: exit %d\n%s", code, out)
	}
	if out, _, code := run(t, env, "check", "--policy", pol, "--path", "/health"); code != 0 || !strings.Contains(out, "not limited") {
		t.Fatalf("check /health: exit %d %s", code, out)
	}
	if _, stderr, code := run(t, env, "check", "--policy", pol, "--path", "/x", "--header", "no-colon"); code != cmdutil.ExitUsage {
		t.Fatalf("bad --header: exit %d %s", code, stderr)
	}
}

// A request the flags cannot describe is a usage error naming the flag, not
// a panic: a path with a space or control byte, a method that is not a token.
func TestCheck_ARequestThatCannotBeSentIsAUsageError(t *testing.T) {
	env := map[string]string{"REDIS_URL": "redis://127.0.0.1:1"}
	pol := filepath.Join("..", "..", "..", "..", "..", "examples", "policies", "saas.yaml")
	for _, c := range []struct{ flag, value string }{
		{"--path", "/a b"},
		{"--path", "/a\x00b"},
		{"--path", "/%zz"},
		{"--method", "GE T"},
		{"--method", "G(ET"},
	} {
		args := []string{"check", "--policy", pol, c.flag, c.value}
		_, stderr, code := run(t, env, args...)
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, c.flag) {
			t.Errorf("%s %q: exit %d, want 2 naming the flag\n%s", c.flag, c.value, code, stderr)
		}
	}
}

// The admin API binds loopback for a port alone and, with a token from
// $DEVKIT_RATELIMIT_ADMIN_TOKEN, answers nothing without it.
func TestProxy_AdminLoopbackAndTokenFromEnv(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer upstream.Close()
	policyPath := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicy(t, policyPath, "2")
	env := map[string]string{AdminTokenEnv: "s3cret"}
	_, admin := startProxy(t, &ProxyOptions{Store: &StoreOptions{Getenv: func(k string) string { return env[k] }},
		Listen: "127.0.0.1:0", Upstream: upstream.URL, Policy: policyPath, Admin: ":0",
		WatchInterval: time.Hour, Reload: make(chan struct{})})
	if !strings.HasPrefix(admin, "127.0.0.1:") {
		t.Fatalf("--admin :0 bound %s, want 127.0.0.1", admin)
	}
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer s3cret", 200}} {
		req, _ := http.NewRequest("GET", "http://"+admin+"/metrics", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("admin with Authorization %q: %d, want %d", c.auth, resp.StatusCode, c.want)
		}
	}
}

// Exact at the defaults, and bounded when not: three `devkit ratelimit
// proxy` instances at their defaults share one real Redis, and 100 clients on
// each send POST /auth/login (one identity) for 1.5 s. The store admits at
// most the limit; every admission beyond it is a failure-policy decision that
// the proxies counted and expose (GET /stats, ratelimit_fail_open_total); and
// when the failure policy decided nothing, exactly the limit is admitted. With
// the former 50 ms default budget, checks slower than it under the burst were
// admitted by fail-open (501–526 of 500 on an idle machine); the default
// budget is now chosen above the burst's measured latency
// (redisstore's TestBurst_CheckLatencyOfThreeGatewaysOnOneIdentity).
func TestProxy_ThreeProxiesHundredClientsOneIdentityAdmitExactlyTheLimit(t *testing.T) {
	srv := redistest.StartRedis(t)
	proxies, admins := threeProxies(t, srv.URL())
	const limit = 500
	c := burst(t, proxies, 1500*time.Millisecond)
	assertFailureBound(t, c, limit, admins)
}

// threeProxies starts three proxies at their defaults on one Redis, with
// the login rule's limit of 500, and returns their client and admin addresses.
func threeProxies(t *testing.T, redisURL string) (proxies, admins []string) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(upstream.Close)
	policyPath := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicyTB(t, policyPath, "500")
	for i := 0; i < 3; i++ {
		l, a := startProxy(t, &ProxyOptions{Store: &StoreOptions{RedisURL: redisURL}, Listen: "127.0.0.1:0", Admin: "127.0.0.1:0",
			Upstream: upstream.URL, Policy: policyPath, WatchInterval: time.Hour, Reload: make(chan struct{})})
		proxies, admins = append(proxies, l), append(admins, a)
	}
	return proxies, admins
}

// assertFailureBound holds a burst to the documented bound: the store admits
// at most the limit, admissions beyond it are exactly the failure policy's
// as the proxies count them, and with none of those exactly the limit.
func assertFailureBound(t *testing.T, c burstCounts, limit int64, admins []string) {
	t.Helper()
	var counted int64
	for _, a := range admins {
		resp, err := http.Get("http://" + a + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		var stats []struct {
			Rule     string `json:"rule"`
			FailOpen int64  `json:"fail_open"`
		}
		err = json.NewDecoder(resp.Body).Decode(&stats)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /stats: %d %v", resp.StatusCode, err)
		}
		for _, s := range stats {
			counted += s.FailOpen
		}
	}
	t.Logf("%d requests: %d admitted by the store, %d by the failure policy (%d counted by the proxies), %d denied",
		c.total, c.fromStore, c.failOpen, counted, c.denied)
	switch {
	case c.fromStore > limit:
		t.Fatalf("the store admitted %d, over the limit of %d", c.fromStore, limit)
	case c.failOpen != counted:
		t.Fatalf("%d admitted by the failure policy, but the proxies counted %d", c.failOpen, counted)
	case c.failOpen == 0 && c.total >= limit && c.fromStore != limit:
		t.Fatalf("no failure-policy decision, yet %d admitted of a limit of %d", c.fromStore, limit)
	}
}

// burstCounts are the answers of a burst: admitted by the store (they carry
// X-RateLimit-Limit), admitted by the failure policy (they carry none), and
// denied.
type burstCounts struct{ total, fromStore, failOpen, denied int64 }

// burst sends POST /auth/login from 100 clients per proxy for d; during, if
// set, runs once 300 ms in.
func burst(t *testing.T, proxies []string, d time.Duration, during ...func()) burstCounts {
	t.Helper()
	var fromStore, failOpen, denied, total atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for _, p := range proxies {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
		defer client.CloseIdleConnections()
		for c := 0; c < 100; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					resp, err := client.Post("http://"+p+"/auth/login", "", nil)
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					total.Add(1)
					switch {
					case resp.StatusCode == 200 && resp.Header.Get("X-RateLimit-Limit") != "":
						fromStore.Add(1)
					case resp.StatusCode == 200:
						failOpen.Add(1)
					default:
						denied.Add(1)
					}
				}
			}()
		}
	}
	for _, f := range during {
		time.Sleep(300 * time.Millisecond)
		f()
	}
	wg.Wait()
	return burstCounts{total.Load(), fromStore.Load(), failOpen.Load(), denied.Load()}
}

// Three `devkit ratelimit proxy` instances at their defaults share one real
// Redis; 100 clients each send POST /auth/login (one identity: every client
// is 127.0.0.1) for 1.5 s; Redis stalls once for 300 ms, longer than the
// budget. A store-decided answer carries X-RateLimit-Limit; a fail-open one
// carries none. The burst holds the documented bound (assertFailureBound):
// the store admits at most the limit and every other admission is a counted
// failure-policy decision. Before the per-node breaker, the stall opened a
// 500 ms gate for every client of every proxy (813 777 admitted of 1000 in
// the library version of this test); this test used to bound the fail-open
// admissions by a guess at a loaded machine's timeouts, and flaked under load.
func TestProxy_ThreeProxiesHundredClientsOneIdentityStalledRedis(t *testing.T) {
	srv := redistest.StartRedis(t)
	proxies, admins := threeProxies(t, srv.URL())
	c := burst(t, proxies, 1500*time.Millisecond, func() {
		if err := srv.Client(t).Do(context.Background(), "DEBUG", "SLEEP", "0.3").Err(); err != nil {
			t.Errorf("DEBUG SLEEP: %v", err)
		}
	})
	assertFailureBound(t, c, 500, admins)
}
