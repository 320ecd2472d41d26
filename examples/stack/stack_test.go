// Package stack_test runs the example stack (ops.yaml: the KV server behind two
// rate-limiting gateways that keep their limits in it, under devkit sup) for real: a devkit binary built from
// this checkout, real processes, real sockets on free 127.0.0.1 ports, a home and
// a data directory of its own. Every process it starts is gone when it ends.
package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tenants as the saas.yaml policy names them (trusted from 127.0.0.1).
var (
	freeTenant       = http.Header{"X-Workspace-Id": {"acme"}, "X-Workspace-Plan": {"free"}, "X-User-Id": {"ada"}}
	proTenant        = http.Header{"X-Workspace-Id": {"globex"}, "X-Workspace-Plan": {"pro"}, "X-User-Id": {"grace"}}
	enterpriseTenant = http.Header{"X-Workspace-Id": {"initech"}, "X-Workspace-Plan": {"enterprise"}, "X-User-Id": {"peter"}}
)

// as is tenant's headers for another user of the workspace. The policy keys
// on the route template (/keys/{key}), so a user's PUT budget covers every
// key: a step that needs a fresh budget uses a user of its own.
func as(tenant http.Header, user string) http.Header {
	h := tenant.Clone()
	h.Set("X-User-Id", user)
	return h
}

// TestStack builds devkit once and runs the stack with it: with the gateways'
// limits in the supervised devkit kv (ops.yaml), with Redis (ops-redis.yaml),
// and through examples/demo.sh (what `make demo` and `make demo-redis` run).
func TestStack(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the e2e test uses kill -9, bash and /proc; the stack itself runs on Windows")
	}
	bin := buildDevkit(t)
	t.Run("kv", func(t *testing.T) { testKV(t, bin) })
	t.Run("redis", func(t *testing.T) { testRedis(t, bin) })
	t.Run("demo.sh", func(t *testing.T) { testDemoScript(t, bin, false) })
	t.Run("demo.sh --redis", func(t *testing.T) { testDemoScript(t, bin, true) })
}

// testKV is the e2e test of the default stack: the gateways keep their
// limits in the supervised devkit kv, over its RESP listener.
func testKV(t *testing.T, bin string) {
	s := newStack(t, bin, "ops.yaml", nil, "KV_RESP_PORT", "GATEWAY2_PORT", "GATEWAY2_ADMIN_PORT")
	s.sup(0, "start", "--all")
	st := s.status(0)
	for _, name := range []string{"kv", "gateway", "gateway2"} {
		if p := st[name]; p.State != "running" || p.PID == 0 {
			t.Fatalf("after start --all, %s is %+v, want running with a PID", name, p)
		}
	}
	gw, gw2 := s.url("GATEWAY_PORT"), s.url("GATEWAY2_PORT")

	t.Run("keys through the gateway", func(t *testing.T) {
		resp := s.do(t, "PUT", gw+"/keys/acme-greeting", freeTenant, "hello")
		wantStatus(t, resp, 204)
		wantHeader(t, resp, "X-RateLimit-Limit", "20")
		wantHeader(t, resp, "X-RateLimit-Remaining", "19")
		wantHeader(t, resp, "RateLimit-Policy", `"api-free-put";q=20;w=60`)
		resp = s.do(t, "GET", gw+"/keys/acme-greeting", freeTenant, "")
		wantStatus(t, resp, 200)
		if resp.body != "hello" {
			t.Fatalf("GET acme-greeting = %q, want hello", resp.body)
		}
		resp = s.do(t, "PUT", gw+"/keys/globex-greeting", proTenant, "hi")
		wantStatus(t, resp, 204)
		wantHeader(t, resp, "X-RateLimit-Limit", "100")
	})

	t.Run("free tenant past its limit", func(t *testing.T) {
		bob := as(freeTenant, "bob")
		got := s.count(t, 25, "PUT", gw+"/keys/acme-counter", bob)
		if got[204] != 20 || got[429] != 5 || len(got) != 2 {
			t.Fatalf("25 PUTs of one key as a free tenant: %v, want 20×204 and 5×429", got)
		}
		resp := s.do(t, "PUT", gw+"/keys/acme-other-key", bob, "x") // the budget is the route's, not the key's
		wantStatus(t, resp, 429)
		wantHeader(t, resp, "Retry-After", "300")
		wantHeader(t, resp, "Content-Type", "application/problem+json")
		wantHeader(t, resp, "X-RateLimit-Remaining", "0")
		var problem struct {
			Status  int    `json:"status"`
			Policy  string `json:"policy"`
			Blocked bool   `json:"blocked"`
		}
		if err := json.Unmarshal([]byte(resp.body), &problem); err != nil {
			t.Fatalf("429 body %q: %v", resp.body, err)
		}
		if problem.Status != 429 || problem.Policy != "api-free-put" || !problem.Blocked {
			t.Fatalf("429 body = %+v, want status 429, policy api-free-put, blocked", problem)
		}
		// Another tenant's budget is its own.
		if got := s.count(t, 25, "PUT", gw+"/keys/acme-counter", proTenant); got[204] != 25 {
			t.Fatalf("25 PUTs as a pro tenant after the free one was blocked: %v, want 25×204", got)
		}
	})

	t.Run("login brute force", func(t *testing.T) {
		if got := s.count(t, 5, "POST", gw+"/auth/login", nil); got[404] != 5 {
			t.Fatalf("5 logins: %v, want 5×404 (allowed through to the KV server, which has no such route)", got)
		}
		resp := s.do(t, "POST", gw+"/auth/login", nil, "")
		wantStatus(t, resp, 429)
		wantHeader(t, resp, "Retry-After", "3600")
	})

	t.Run("a limit spent across both gateways admits exactly the limit in total", func(t *testing.T) {
		eve := as(freeTenant, "eve")
		counts := map[int]int{}
		for _, g := range []string{gw, gw2, gw} {
			for code, n := range s.count(t, 12, "PUT", g+"/keys/shared", eve) {
				counts[code] += n
			}
		}
		if counts[204] != 20 || counts[429] != 16 || len(counts) != 2 {
			t.Fatalf("36 PUTs by one user, 12 at a time through gateway, gateway2, gateway: %v, want 20×204 and 16×429", counts)
		}
		resp := s.do(t, "PUT", gw2+"/keys/shared", eve, "x")
		wantStatus(t, resp, 429)
		wantHeader(t, resp, "Retry-After", "300")
	})

	t.Run("kill -9 of the KV server loses no acknowledged write", func(t *testing.T) {
		s.killAndRecover(t, gw)
	})

	// The login block set above lives in devkit kv (--sync always): it holds
	// through every restart below, on either gateway.
	t.Run("a login block holds after kill -9 of the KV server", func(t *testing.T) {
		s.wantLoginBlocked(t, gw2)
	})

	t.Run("a login block holds after its gateway is restarted", func(t *testing.T) {
		before := s.status(0)["gateway"].PID
		s.sup(0, "restart", "gateway")
		if after := s.status(0)["gateway"].PID; after == before {
			t.Fatalf("restart gateway kept pid %d", after)
		}
		s.wantLoginBlocked(t, gw)
	})

	t.Run("a login block holds after the whole stack is stopped and started", func(t *testing.T) {
		s.stopAll(t)
		s.sup(0, "start", "--all")
		s.wantLoginBlocked(t, gw)
		s.wantLoginBlocked(t, gw2)
		if a := s.do(t, "GET", gw+"/keys/acme-greeting", freeTenant, ""); a.status != 200 || a.body != "hello" {
			t.Fatalf("GET acme-greeting after stop and start = %d %q, want 200 hello", a.status, a.body)
		}
	})

	t.Run("reload with a changed limit", func(t *testing.T) {
		policy := filepath.Join(t.TempDir(), "policy-v2.yaml")
		writeChangedPolicy(t, policy, 30)
		s.setEnv("GATEWAY_POLICY", policy)
		out := s.sup(0, "reload", "--dry-run", "--json")
		plan := map[string]string{}
		var dry struct {
			DryRun bool `json:"dry_run"`
			Steps  []struct{ Name, Action string }
		}
		if err := json.Unmarshal([]byte(out), &dry); err != nil {
			t.Fatalf("reload --dry-run --json: %v\n%s", err, out)
		}
		for _, st := range dry.Steps {
			plan[st.Name] = st.Action
		}
		if !dry.DryRun || plan["gateway"] != "restart" || plan["kv"] != "none" {
			t.Fatalf("reload --dry-run plan = %v (dry_run %v), want gateway restart, kv none", plan, dry.DryRun)
		}
		before := s.status(0)
		s.sup(0, "reload")
		after := s.status(0)
		if after["kv"].PID != before["kv"].PID {
			t.Errorf("reload restarted kv (pid %d -> %d); only the gateway changed", before["kv"].PID, after["kv"].PID)
		}
		if after["gateway"].PID == before["gateway"].PID {
			t.Errorf("reload kept the gateway's pid %d; its policy changed", after["gateway"].PID)
		}
		if got := s.count(t, 35, "PUT", gw+"/keys/acme-counter-v2", as(freeTenant, "carol")); got[204] != 30 || got[429] != 5 {
			t.Fatalf("35 PUTs under the new policy: %v, want 30×204 and 5×429", got)
		}

		// An edit in place is the gateway's own business: it re-reads the file, no restart.
		writeChangedPolicy(t, policy, 40)
		deadline := time.Now().Add(15 * time.Second)
		for i := 0; ; i++ {
			resp := s.do(t, "PUT", fmt.Sprintf("%s/keys/acme-hot-%d", gw, i), as(freeTenant, "dave"), "x")
			if resp.header.Get("X-RateLimit-Limit") == "40" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the gateway did not re-read the edited policy: X-RateLimit-Limit %q", resp.header.Get("X-RateLimit-Limit"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		if pid := s.status(0)["gateway"].PID; pid != after["gateway"].PID {
			t.Errorf("the gateway restarted (pid %d -> %d) for an edit of its policy file", after["gateway"].PID, pid)
		}
	})

	s.stopAll(t)
}

// wantLoginBlocked checks that a login through gw is refused by the block the
// brute force of testKV set: 429, with a Retry-After of the hour's remainder.
func (s *stack) wantLoginBlocked(t *testing.T, gw string) {
	t.Helper()
	resp := s.do(t, "POST", gw+"/auth/login", nil, "")
	wantStatus(t, resp, 429)
	if ra, err := strconv.Atoi(resp.header.Get("Retry-After")); err != nil || ra < 3000 || ra > 3600 {
		t.Fatalf("Retry-After %q, want the rest of the hour's block (3000..3600 s)", resp.header.Get("Retry-After"))
	}
}

// testRedis runs the Redis variant (ops-redis.yaml): a supervised
// redis-server and two gateways sharing it, so one limit holds across both.
func testRedis(t *testing.T, bin string) {
	needRedis(t)
	redisDir := t.TempDir()
	s := newStack(t, bin, "ops-redis.yaml", map[string]string{"REDIS_DIR": redisDir},
		"REDIS_PORT", "GATEWAY2_PORT", "GATEWAY2_ADMIN_PORT")
	s.sup(0, "start", "--all")
	st := s.status(0)
	for _, name := range []string{"redis", "kv", "gateway", "gateway2"} {
		if st[name].State != "running" {
			t.Fatalf("after start --all, %s is %+v, want running", name, st[name])
		}
	}
	gw1, gw2 := s.url("GATEWAY_PORT"), s.url("GATEWAY2_PORT")
	counts := map[int]int{}
	for _, gw := range []string{gw1, gw2, gw1} {
		for code, n := range s.count(t, 12, "PUT", gw+"/keys/shared", freeTenant) {
			counts[code] += n
		}
	}
	if counts[204] != 20 || counts[429] != 16 {
		t.Fatalf("36 PUTs of one key across two gateways sharing Redis: %v, want 20×204 and 16×429", counts)
	}
	resp := s.do(t, "PUT", gw2+"/keys/shared", freeTenant, "x")
	wantStatus(t, resp, 429)
	wantHeader(t, resp, "Retry-After", "300")

	t.Run("kill -9 of the KV server loses no acknowledged write", func(t *testing.T) {
		s.killAndRecover(t, gw2)
	})
	s.stopAll(t)
}

// stack is one running example stack.
type stack struct {
	t      *testing.T
	bin    string
	home   string
	config string
	env    map[string]string
	mu     sync.Mutex
}

// newStack builds devkit, picks free ports and a home under t.TempDir(), and
// registers a cleanup that stops whatever is left. extraPorts name more port
// variables the config uses.
func newStack(t *testing.T, bin, config string, extraEnv map[string]string, extraPorts ...string) *stack {
	t.Helper()
	home := t.TempDir()
	cfg, err := filepath.Abs(config)
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, bin: bin, home: home, config: cfg, env: map[string]string{}}
	s.env["DEVKIT"] = s.bin
	s.env["DEVKIT_HOME"] = home
	s.env["DEVKIT_SUP_CONFIG"] = cfg
	s.env["KV_DATA"] = filepath.Join(home, "data")
	s.env["GATEWAY_POLICY"] = filepath.Join(filepath.Dir(cfg), "..", "policies", "saas.yaml")
	s.env["RATELIMIT_PREFIX"] = "e2e:"
	for _, p := range append([]string{"KV_PORT", "GATEWAY_PORT", "GATEWAY_ADMIN_PORT"}, extraPorts...) {
		s.env[p] = strconv.Itoa(freePort(t))
	}
	for k, v := range extraEnv {
		s.env[k] = v
	}
	t.Cleanup(func() {
		// Whatever the test did, nothing of the stack outlives it.
		out, err := s.run("sup", "stop", "--all", "--force")
		if err != nil {
			t.Logf("cleanup: sup stop --all --force: %v\n%s", err, out)
		}
		if left := processesOf(home); len(left) > 0 {
			t.Errorf("processes left behind after cleanup: %v", left)
		}
		if t.Failed() {
			s.dumpLogs()
		}
	})
	return s
}

// buildDevkit installs the devkit binary of this checkout into a temporary
// directory, the way the README's `go install ./cmd/devkit` does from a
// checkout (here from the sibling folder, through its go.mod).
func buildDevkit(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("DEVKIT_E2E_BIN"); b != "" {
		return b
	}
	gobin := t.TempDir()
	bin := filepath.Join(gobin, "devkit")
	cmd := exec.Command("go", "install", "github.com/devkit-go/devkit/cmd/devkit")
	cmd.Dir = filepath.Join("..", "..", "cmd", "devkit")
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install github.com/devkit-go/devkit/cmd/devkit: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago. It is
// taken below the ephemeral range: a port the kernel hands out for ":0" may be
// given to an outgoing connection (of this test or another) before the server
// binds it.
func freePort(t *testing.T) int {
	t.Helper()
	low, high := 20000, 32000
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if eph, err := strconv.Atoi(f[0]); err == nil && eph > 11000 {
				low, high = eph-10000, eph
			}
		}
	}
	for range 200 {
		p := low + rand.IntN(high-low)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}

func (s *stack) setEnv(k, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.env[k] = v
}

func (s *stack) url(portVar string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://127.0.0.1:" + s.env[portVar]
}

// environ is the environment of every devkit run: the test's own, without
// anything that would point the stack elsewhere, plus the stack's variables.
func (s *stack) environ() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := s.env[k]; ours || k == "REDIS_URL" || k == "OPS_HOME" || k == "NO_COLOR" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range s.env {
		env = append(env, k+"="+v)
	}
	return append(env, "NO_COLOR=1")
}

// run runs devkit with args and returns its combined output.
func (s *stack) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = s.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String() + stderr.String(), err
}

// sup runs `devkit sup args...`, fails the test unless it exits wantCode, and
// returns its stdout.
func (s *stack) sup(wantCode int, args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"sup"}, args...)...)
	cmd.Env = s.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		s.t.Fatalf("devkit sup %s: %v", strings.Join(args, " "), err)
	}
	if code != wantCode {
		s.t.Fatalf("devkit sup %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, &stdout, &stderr)
	}
	return stdout.String()
}

// procStatus is one process of `devkit sup status --json`.
type procStatus struct {
	Name       string `json:"name"`
	State      string `json:"state"`
	PID        int    `json:"pid"`
	ExitSignal string `json:"exit_signal"`
}

// status runs `sup status --json`, expecting exit wantCode, and returns the processes by name.
func (s *stack) status(wantCode int) map[string]procStatus {
	s.t.Helper()
	out := s.sup(wantCode, "status", "--json")
	var doc struct {
		Schema    string       `json:"schema"`
		Processes []procStatus `json:"processes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != "devkit.sup.status/v1" {
		s.t.Fatalf("sup status --json: %v (schema %q)\n%s", err, doc.Schema, out)
	}
	m := map[string]procStatus{}
	for _, p := range doc.Processes {
		m[p.Name] = p
	}
	return m
}

// answer is one HTTP response, read whole.
type answer struct {
	status int
	header http.Header
	body   string
}

func (s *stack) do(t *testing.T, method, url string, h http.Header, body string) answer {
	t.Helper()
	a, err := request(context.Background(), method, url, h, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return a
}

func request(ctx context.Context, method, url string, h http.Header, body string) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}, err
}

// count sends n identical requests one after the other and counts the statuses.
func (s *stack) count(t *testing.T, n int, method, url string, h http.Header) map[int]int {
	t.Helper()
	got := map[int]int{}
	for i := 0; i < n; i++ {
		got[s.do(t, method, url, h, "v").status]++
	}
	return got
}

func wantStatus(t *testing.T, a answer, want int) {
	t.Helper()
	if a.status != want {
		t.Fatalf("status %d, want %d; body %q", a.status, want, a.body)
	}
}

func wantHeader(t *testing.T, a answer, name, want string) {
	t.Helper()
	if got := a.header.Get(name); got != want {
		t.Fatalf("header %s = %q, want %q (all: %v)", name, got, want, a.header)
	}
}

// killAndRecover writes through gw from several clients, kills the KV server
// with SIGKILL while writes are in flight, checks that status reports it,
// starts it again and reads every acknowledged write back.
func (s *stack) killAndRecover(t *testing.T, gw string) {
	t.Helper()
	kv := s.status(0)["kv"]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu    sync.Mutex
		acked = map[string]string{}
		wg    sync.WaitGroup
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer is a user of an enterprise workspace (1000 PUTs a
			// minute each): the limiter must not stop the writes before the kill.
			writer := as(enterpriseTenant, fmt.Sprintf("writer-%d", w))
			for i := 0; ctx.Err() == nil; i++ {
				key, val := fmt.Sprintf("e2e-w%d-%d", w, i), fmt.Sprintf("value %d of writer %d", i, w)
				a, err := request(ctx, "PUT", gw+"/keys/"+key, writer, val)
				if err != nil || a.status != 204 {
					return // the server is gone: what was not acknowledged may or may not be there
				}
				mu.Lock()
				acked[key] = val
				mu.Unlock()
			}
		}()
	}
	// Let some writes be acknowledged, then kill mid-stream.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := killPID(kv.PID); err != nil {
		t.Fatalf("kill -9 %d: %v", kv.PID, err)
	}
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged before the kill")
	}

	// The monitor records the exit; status reports it and exits 3.
	var st map[string]procStatus
	for i := 0; ; i++ {
		st = s.status(3)
		if st["kv"].State == "exited" || i == 100 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st["kv"].State != "exited" || st["kv"].ExitSignal != "SIGKILL" {
		t.Fatalf("after kill -9, status of kv = %+v, want exited by SIGKILL", st["kv"])
	}
	if a := s.do(t, "GET", gw+"/keys/acme-greeting", proTenant, ""); a.status != 502 {
		t.Fatalf("gateway with the KV server down answered %d, want 502", a.status)
	}

	s.sup(0, "start", "kv")
	lost := 0
	for key, val := range acked {
		a := s.do(t, "GET", gw+"/keys/"+key, enterpriseTenant, "")
		if a.status != 200 || a.body != val {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged write %s: got %d %q, want 200 %q", key, a.status, a.body, val)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost after kill -9", lost, len(acked))
	}
	t.Logf("%d acknowledged writes, all read back after kill -9 and restart", len(acked))
}

// stopAll stops the stack and checks that nothing of it is left: status says
// every process stopped, no recorded PID is alive, no process carries the
// stack's home, and no port answers.
func (s *stack) stopAll(t *testing.T) {
	t.Helper()
	before := s.status(0)
	s.sup(0, "stop", "--all")
	after := s.status(3)
	for name, p := range after {
		if p.State != "stopped" {
			t.Errorf("after stop --all, %s is %s", name, p.State)
		}
	}
	for name, p := range before {
		if alive(p.PID) {
			t.Errorf("%s (pid %d) still alive after stop --all", name, p.PID)
		}
	}
	if left := processesOf(s.home); len(left) > 0 {
		t.Errorf("processes of the stack left after stop --all: %v", left)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.env {
		if !strings.HasSuffix(k, "_PORT") {
			continue
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+v, time.Second); err == nil {
			c.Close()
			t.Errorf("%s %s still accepts connections after stop --all", k, v)
		}
	}
}

// dumpLogs prints the end of every log of the stack, for a failed test.
func (s *stack) dumpLogs() {
	logs, _ := filepath.Glob(filepath.Join(s.home, "sup", "logs", "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		s.t.Logf("--- %s\n%s", l, b)
	}
}

// writeChangedPolicy writes saas.yaml with the free plan's PUT limit set to limit,
// through a temporary file and a rename, as an editor would.
func writeChangedPolicy(t *testing.T, path string, limit int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "policies", "saas.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const old = "PUT:    [{limit: 20, window: 1m"
	if strings.Count(string(b), old) != 1 {
		t.Fatalf("saas.yaml no longer has exactly one %q; update the test", old)
	}
	changed := strings.Replace(string(b), old, fmt.Sprintf("PUT:    [{limit: %d, window: 1m", limit), 1)
	if err := os.WriteFile(path+".new", []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// needRedis skips without redis-server, with the install hint, except under
// CI=true where the Redis variants must run: there it fails.
func needRedis(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		const hint = "redis-server not found; install it (apt-get install redis-server, brew install redis)"
		if os.Getenv("CI") == "true" {
			t.Fatal(hint + " — CI=true requires the Redis variant of the e2e test")
		}
		t.Skip(hint)
	}
}

// buildHit builds the demo's HTTP client, which make demo builds beside
// bin/devkit: demo.sh itself builds nothing.
func buildHit(t *testing.T) string {
	t.Helper()
	hit := filepath.Join(t.TempDir(), "hit")
	cmd := exec.Command("go", "build", "-o", hit, ".")
	cmd.Dir = "hit"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./stack/hit: %v\n%s", err, out)
	}
	return hit
}

// testDemoScript runs examples/demo.sh (what `make demo` runs, `make
// demo-redis` with redis) against bin and checks that it passes every step
// and leaves nothing behind: no process, no demo home.
func testDemoScript(t *testing.T, bin string, redis bool) {
	if redis {
		needRedis(t)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	tmp := t.TempDir()
	args := []string{filepath.Join("..", "demo.sh")}
	if redis {
		args = append(args, "--redis")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append(args, bin)...)
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "REDIS_URL" && k != "KEEP" && k != "TMPDIR" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "TMPDIR="+tmp, "HIT="+buildHit(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	text := string(out)
	sections := []string{"== 1. Start the stack", "== 2. Write and read keys", "== 3. Drive the free tenant past its limit",
		"== 4. A login brute force", "== 5. kill -9 the KV server", "== 6. Change a limit", "== 7. One limit across two gateways",
		"/metrics", "== 8. A login block outlives a gateway restart", "== Stop everything", "== Done in"}
	if !redis {
		// The limits are in the supervised devkit kv: they outlive the whole stack.
		sections = append(sections, "Stop and start everything, kv included", "the login block of step 4 still holds")
	}
	for _, s := range sections {
		if !strings.Contains(text, s) {
			t.Errorf("demo output lacks section %q", s)
		}
	}
	if strings.Contains(text, "FAILED") {
		t.Errorf("demo printed a failure yet exited 0:\n%s", text)
	}
	if pids := processesOf(filepath.Join(tmp, "devkit-demo.")); len(pids) > 0 {
		t.Errorf("processes of the demo left behind: %v", pids)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "devkit-demo.*"))
	if len(left) > 0 {
		t.Errorf("demo left its home behind: %v", left)
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", text)
	}
}
