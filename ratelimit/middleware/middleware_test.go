package middleware_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/internal/jsonschema"
	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/internal/storetest"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/middleware"
	"github.com/devkit-go/devkit/ratelimit/policy"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

const examples = "../../examples/policies/"

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

func loadPolicy(t *testing.T, name string) *policy.Policy {
	t.Helper()
	p, err := policy.Load(examples + name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func parsePolicy(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func serve(h http.Handler, method, path, peer string, headers map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = peer
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func wantHeaders(t *testing.T, label string, got http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("%s: %s = %q, want %q", label, k, got.Get(k), v)
		}
	}
}

func TestLogin_GoldenHeadersAndProblemBody(t *testing.T) {
	clock := storetest.NewClock()
	l := ratelimit.New(memory.New(memory.Options{Now: clock.Now}), ratelimit.Options{})
	h := middleware.New(l, loadPolicy(t, "saas.yaml"), middleware.Options{}).Handler(ok)
	for i := 1; i <= 5; i++ {
		w := serve(h, "POST", "/auth/login", "203.0.113.9:5000", nil)
		if w.Code != 200 {
			t.Fatalf("attempt %d: %d", i, w.Code)
		}
		if i == 1 {
			wantHeaders(t, "attempt 1", w.Header(), map[string]string{
				"X-RateLimit-Limit":     "5",
				"X-RateLimit-Remaining": "4",
				"X-RateLimit-Reset":     "900",
				"RateLimit-Policy":      `"login";q=5;w=900`,
				"RateLimit":             `"login";r=4;t=900`,
				"Retry-After":           "",
			})
		}
		clock.Advance(time.Second)
	}
	w := serve(h, "POST", "/auth/login", "203.0.113.9:5000", nil)
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("attempt 6: %d", w.Code)
	}
	wantHeaders(t, "attempt 6", w.Header(), map[string]string{
		"Content-Type":          "application/problem+json",
		"Retry-After":           "3600",
		"X-RateLimit-Limit":     "5",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "3600",
		"RateLimit":             `"login";r=0;t=3600`,
	})
	const golden = `{"type":"https://github.com/devkit-go/devkit/blob/main/docs/ratelimit.md#429-too-many-requests",` +
		`"title":"Too Many Requests","status":429,` +
		`"detail":"Limit \"login\" (5 per 15m0s) was exceeded; requests are blocked for 3600 more seconds.",` +
		`"instance":"/auth/login","rule":"login","policy":"login","limit":5,"window_seconds":900,"retry_after_seconds":3600,"blocked":true}` + "\n"
	if w.Body.String() != golden {
		t.Fatalf("body:\n%s\nwant:\n%s", w.Body.String(), golden)
	}
	// Another client is not affected; the blocked one still is, 30 minutes on.
	if w := serve(h, "POST", "/auth/login", "203.0.113.10:5000", nil); w.Code != 200 {
		t.Fatalf("other client: %d", w.Code)
	}
	clock.Advance(30 * time.Minute)
	w = serve(h, "POST", "/auth/login", "203.0.113.9:5000", nil)
	if w.Code != 429 || w.Header().Get("Retry-After") != "1800" {
		t.Fatalf("30 min later: %d Retry-After %q, want 429 and 1800 (the block began at attempt 6)", w.Code, w.Header().Get("Retry-After"))
	}
}

func TestHeaders_SeveralLimitsAndTokenBucket(t *testing.T) {
	clock := storetest.NewClock()
	l := ratelimit.New(memory.New(memory.Options{Now: clock.Now}), ratelimit.Options{})
	p := parsePolicy(t, `
rules:
  - name: search
    paths: [/search]
    limits:
      - {name: burst, algorithm: token-bucket, limit: 2, window: 1s, burst: 10}
      - {name: "daily \"q\"", limit: 1000, window: 24h}
`)
	h := middleware.New(l, p, middleware.Options{}).Handler(ok)
	w := serve(h, "GET", "/search?q=x", "198.51.100.1:1", nil)
	wantHeaders(t, "search", w.Header(), map[string]string{
		"RateLimit-Policy":      `"burst";q=10;w=5, "daily \"q\"";q=1000;w=86400`,
		"RateLimit":             `"burst";r=9;t=1, "daily \"q\"";r=999;t=86400`,
		"X-RateLimit-Limit":     "10",
		"X-RateLimit-Remaining": "9",
		"X-RateLimit-Reset":     "1",
	})
}

// TestDenials_TwoLimitsInTurnEachGetTheirOwnFields: the fields cached for
// the limit answered last never answer another: denials of two rules in
// turn each carry their own limit's policy, window and body.
func TestDenials_TwoLimitsInTurnEachGetTheirOwnFields(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	p := parsePolicy(t, `
rules:
  - {name: a, paths: [/a], limits: [{limit: 1, window: 1m}]}
  - {name: b, paths: [/b], limits: [{limit: 2, window: 1h}]}
`)
	h := middleware.New(l, p, middleware.Options{}).Handler(ok)
	want := map[string]map[string]string{
		"/a": {"RateLimit-Policy": `"a";q=1;w=60`, "X-RateLimit-Limit": "1"},
		"/b": {"RateLimit-Policy": `"b";q=2;w=3600`, "X-RateLimit-Limit": "2"},
	}
	for i := range 8 {
		path := []string{"/a", "/b"}[i%2]
		w := serve(h, "GET", path, "198.51.100.1:1", nil)
		wantHeaders(t, path, w.Header(), want[path])
		if i >= 4 {
			if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), `"rule":"`+path[1:]+`"`) {
				t.Errorf("%s, request %d: %d %s; want a 429 of rule %s", path, i/2+1, w.Code, w.Body, path[1:])
			}
		}
	}
}

func TestSkipAndUnmatched_NoHeaders(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	h := middleware.New(l, loadPolicy(t, "saas.yaml"), middleware.Options{}).Handler(ok)
	for i := 0; i < 200; i++ {
		w := serve(h, "GET", "/health", "203.0.113.9:1", nil)
		if w.Code != 200 || w.Header().Get("X-RateLimit-Limit") != "" {
			t.Fatalf("health %d: %d %v", i, w.Code, w.Header())
		}
	}
}

func TestShadowRule_LetsThroughAndCounts(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	p := parsePolicy(t, "rules:\n  - {name: trial, paths: [/], shadow: true, limits: [{limit: 2, window: 1m}]}\n")
	h := middleware.New(l, p, middleware.Options{}).Handler(ok)
	for i := 0; i < 5; i++ {
		if w := serve(h, "GET", "/x", "203.0.113.9:1", nil); w.Code != 200 || w.Header().Get("Retry-After") != "" {
			t.Fatalf("request %d: %d %v", i, w.Code, w.Header())
		}
	}
	c := l.Stats().Snapshot()[0]
	if c.Allowed != 2 || c.ShadowDenied != 3 {
		t.Fatalf("counters %+v", c)
	}
}

func TestFailClosed_503WithRetryAfter_FailOpenPasses(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer client.Close()
	l := ratelimit.New(redisstore.New(client, redisstore.Options{}), ratelimit.Options{Fail: ratelimit.FailOpen, Backoff: -1})
	h := middleware.New(l, loadPolicy(t, "saas.yaml"), middleware.Options{}).Handler(ok)
	w := serve(h, "POST", "/auth/register", "203.0.113.9:1", nil)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || w.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("register with redis down: %d %v %s", w.Code, w.Header(), w.Body)
	}
	var prob middleware.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &prob); err != nil || prob.Status != 503 || prob.Rule != "register" {
		t.Fatalf("problem %+v, %v", prob, err)
	}
	if w := serve(h, "POST", "/auth/login", "203.0.113.9:1", nil); w.Code != 200 {
		t.Fatalf("login (fail open) with redis down: %d", w.Code)
	}
}

func TestIdentifyCallback_ForLibraryUsers(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	p := loadPolicy(t, "saas.yaml")
	type sessionKey struct{}
	mw := middleware.New(l, p, middleware.Options{Identify: func(r *http.Request, p *policy.Policy) policy.Identity {
		id := p.Identity.Identify(r)
		id.Tenant, id.Plan = "ws_session", r.Context().Value(sessionKey{}).(string)
		return id
	}})
	h := mw.Handler(ok)
	r := httptest.NewRequest("DELETE", "/api/projects/1", nil)
	r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, "pro"))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Header().Get("X-RateLimit-Limit") != "50" {
		t.Fatalf("pro DELETE limit from the callback's plan: %q", w.Header().Get("X-RateLimit-Limit"))
	}
}

func TestReload_SetPolicyAndWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	write := func(limit string) {
		if err := os.WriteFile(path, []byte("rules:\n  - {name: r, paths: [/], limits: [{limit: "+limit+", window: 1m}]}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1")
	p, err := policy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	mw := middleware.New(l, p, middleware.Options{})
	srv := httptest.NewServer(mw.Handler(ok))
	defer srv.Close()
	get := func() *http.Response {
		resp, err := http.Get(srv.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if get().Header.Get("X-RateLimit-Limit") != "1" {
		t.Fatal("initial policy not in force")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reloaded := make(chan *policy.Policy, 1)
	errs := make(chan error, 1)
	go policy.Watch(ctx, path, p, policy.WatchOptions{Interval: 10 * time.Millisecond, Settle: 10 * time.Millisecond,
		OnChange: func(_, p *policy.Policy) { mw.SetPolicy(p); reloaded <- p }, OnError: func(err error) { errs <- err }})
	os.WriteFile(path, []byte("rules: [broken\n"), 0o644)
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "p.yaml:") {
			t.Fatalf("reload error lacks file:line: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("broken file not reported")
	}
	if get().Header.Get("X-RateLimit-Limit") != "1" {
		t.Fatal("a broken file replaced the policy")
	}
	write("7")
	select {
	case <-reloaded:
	case <-time.After(5 * time.Second):
		t.Fatal("changed file not reloaded")
	}
	if got := get().Header.Get("X-RateLimit-Limit"); got != "7" {
		t.Fatalf("after reload: limit %q, want 7", got)
	}
}

func TestRealSockets_SpoofedForwardedForIgnored(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	// No trusted proxies: the socket peer (127.0.0.1) is the client, whatever it claims.
	p := parsePolicy(t, "rules:\n  - {name: r, paths: [/], key: [ip], limits: [{limit: 3, window: 1h}]}\n")
	srv := httptest.NewServer(middleware.New(l, p, middleware.Options{}).Handler(ok))
	defer srv.Close()
	codes := []int{}
	for i := 0; i < 5; i++ {
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		req.Header.Set("X-Forwarded-For", "10.0.0."+string(rune('1'+i)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if codes[2] != 200 || codes[3] != 429 || codes[4] != 429 {
		t.Fatalf("codes %v: rotating X-Forwarded-For must not reset the budget", codes)
	}
}

func TestAdmin_MetricsHealthTopInfoReset(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	h := middleware.New(l, loadPolicy(t, "saas.yaml"), middleware.Options{}).Handler(ok)
	for i := 0; i < 7; i++ {
		serve(h, "POST", "/auth/login", "203.0.113.9:1", nil)
	}
	admin := httptest.NewServer(middleware.NewAdmin(l, middleware.AdminOptions{}))
	defer admin.Close()
	get := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, admin.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("GET", "/metrics")
	if code != 200 {
		t.Fatalf("metrics %d:\n%s", code, body)
	}
	metrics := parseMetrics(t, body)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"ratelimit_denied_total", []string{"rule", "login"}, 2},
		{"ratelimit_allowed_total", []string{"rule", "login"}, 5},
		{"ratelimit_limit_decisions_total", []string{"rule", "login", "limit", "login", "decision", "denied"}, 2},
		{"ratelimit_limit_decisions_total", []string{"rule", "login", "limit", "login", "decision", "allowed"}, 5},
	} {
		if got := metrics.value(t, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The latency histogram is the snapshot's, bucket by bucket.
	snap := l.Stats().Snapshot()[0]
	hist := metrics.histogram(t, "ratelimit_decision_seconds", "rule", "login")
	if hist.GetSampleCount() != uint64(snap.Decisions()) || len(hist.GetBucket()) < len(snap.LatencyBounds) || hist.GetSampleSum() != snap.LatencySum.Seconds() {
		t.Fatalf("ratelimit_decision_seconds %v, want the snapshot's %+v", hist, snap)
	}
	var below uint64
	for i, b := range hist.GetBucket()[:len(snap.LatencyBounds)] { // the parser adds +Inf
		below += uint64(snap.LatencyBuckets[i])
		if b.GetUpperBound() != snap.LatencyBounds[i].Seconds() || b.GetCumulativeCount() != below {
			t.Fatalf("bucket %d = %v, want le %v count %d", i, b, snap.LatencyBounds[i].Seconds(), below)
		}
	}
	for _, path := range []string{"/info?key=login|ip=203.0.113.9", "/health", "/top?n=5", "/top?by=denied", "/info?key=nobody", "/stats"} {
		_, body := get("GET", path)
		if problems, err := jsonschema.Check([]byte(body)); err != nil || len(problems) > 0 {
			t.Errorf("GET %s: %s breaks the JSON schema rule: %q %v", path, body, problems, err)
		}
	}
	if code, body := get("GET", "/info?key=login|ip=203.0.113.9"); code != 200 || !strings.Contains(body, `"ttl_seconds": `) || !strings.Contains(body, `"blocked_for_seconds": 3599.9`) {
		t.Fatalf("info durations in seconds %d %s", code, body)
	}
	if code, body := get("GET", "/health"); code != 200 || !strings.Contains(body, `"ok": true`) || !strings.Contains(body, `"latency_seconds"`) {
		t.Fatalf("health %d %s", code, body)
	}
	if code, body := get("GET", "/top?n=1"); code != 200 || !strings.Contains(body, `"key": "login|ip=203.0.113.9"`) || !strings.Contains(body, `"hits": 7`) {
		t.Fatalf("top %d %s", code, body)
	}
	if code, body := get("GET", "/top?by=denied&n=1"); code != 200 || !strings.Contains(body, `"key": "login|ip=203.0.113.9"`) ||
		!strings.Contains(body, `"denied": 2`) || !strings.Contains(body, `"overcount": 0`) {
		t.Fatalf("top by denied %d %s", code, body)
	}
	if code, body := get("GET", "/top?by=cost"); code != 400 || !strings.Contains(body, "by must be hits or denied") {
		t.Fatalf("top by cost %d %s", code, body)
	}
	if code, _ := get("GET", "/info?key=login|ip=203.0.113.9"); code != 200 {
		t.Fatalf("info %d", code)
	}
	if code, _ := get("GET", "/reset?key=login|ip=203.0.113.9"); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /reset: %d, want 405", code)
	}
	if code, body := get("POST", "/reset?key=login|ip=203.0.113.9"); code != 200 || !strings.Contains(body, `"existed": true`) {
		t.Fatalf("reset %d %s", code, body)
	}
	if w := serve(h, "POST", "/auth/login", "203.0.113.9:1", nil); w.Code != 200 {
		t.Fatalf("after reset: %d", w.Code)
	}
}

func TestCostAboveCapacity_429WithoutRetryAfter(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	p := parsePolicy(t, `
defaults: {cost_header: X-Cost}
rules:
  - {name: upload, paths: [/upload], limits: [{algorithm: token-bucket, limit: 1, window: 1s, burst: 5}]}
`)
	h := middleware.New(l, p, middleware.Options{})
	w := serve(h.Handler(ok), "POST", "/upload", "203.0.113.9:1", map[string]string{"X-Cost": "6"})
	if w.Code != 429 || w.Header().Get("Retry-After") != "" || !strings.Contains(w.Body.String(), "can ever allow") {
		t.Fatalf("cost 6 of 5: %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := serve(h.Handler(ok), "POST", "/upload", "203.0.113.9:1", map[string]string{"X-Cost": "5"}); w.Code != 200 {
		t.Fatalf("cost 5 of 5 after a refused 6: %d (the refusal must consume nothing)", w.Code)
	}
}

// defaults.budget of a reloaded policy applies to the next request: the
// limiter was built with 3s, the reloaded policy says 50ms.
func TestReload_BudgetApplies(t *testing.T) {
	addr := redistest.HangingServer(t)
	client, err := redisstore.NewClient("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	l := ratelimit.New(redisstore.New(client, redisstore.Options{}), ratelimit.Options{Budget: 3 * time.Second})
	mw := middleware.New(l, parsePolicy(t, "defaults: {budget: 3s}\nrules:\n  - {name: r, paths: [/], limits: [{limit: 5, window: 1m}]}\n"), middleware.Options{})
	mw.SetPolicy(parsePolicy(t, "defaults: {budget: 50ms}\nrules:\n  - {name: r, paths: [/], limits: [{limit: 5, window: 1m}]}\n"))
	start := time.Now()
	w := serve(mw.Handler(ok), "GET", "/x", "203.0.113.9:1", nil)
	if took := time.Since(start); w.Code != 200 || took > time.Second {
		t.Fatalf("after reloading budget 50ms: %d in %v (the old 3s budget still applies?)", w.Code, took)
	}
}

// With a token, the admin API answers nothing without it (no reset of one's
// own limits from a reachable admin port).
func TestAdmin_BearerToken(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	admin := httptest.NewServer(middleware.NewAdmin(l, middleware.AdminOptions{Token: "s3cret"}))
	defer admin.Close()
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer wrong", 401}, {"s3cret", 401}, {"Bearer s3cret", 200}} {
		req, _ := http.NewRequest("POST", admin.URL+"/reset?key=k", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Authorization %q: %d, want %d", c.auth, resp.StatusCode, c.want)
		}
	}
}

// metricFamilies are the families of a Prometheus text exposition.
type metricFamilies map[string]*dto.MetricFamily

func parseMetrics(t *testing.T, body string) metricFamilies {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	return mf
}

// metric is the sample of family name with exactly the label pairs given.
func (mf metricFamilies) metric(t *testing.T, name string, labels ...string) *dto.Metric {
	t.Helper()
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	f, ok := mf[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if maps.Equal(got, want) {
			return m
		}
	}
	t.Fatalf("no %s with labels %v in %v", name, want, f)
	return nil
}

func (mf metricFamilies) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	m := mf.metric(t, name, labels...)
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func (mf metricFamilies) histogram(t *testing.T, name string, labels ...string) *dto.Histogram {
	t.Helper()
	return mf.metric(t, name, labels...).GetHistogram()
}
