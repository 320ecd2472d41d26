// Package stacktest runs the example stack (examples/stack/ops.yaml: the KV
// server behind the gateway, under devkit sup) for the live views' tests:
// a devkit binary built from this checkout, real processes on free
// 127.0.0.1 ports, a home of its own, and nothing left running after the
// test.
package stacktest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Stack is one running example stack.
type Stack struct {
	t      testing.TB
	Bin    string // the devkit binary
	Config string // absolute path of ops.yaml
	Env    map[string]string
}

// Build compiles the devkit binary of this checkout into dir.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "devkit")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/devkit-go/devkit/cmd/devkit")
	cmd.Dir = moduleDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build devkit: %w\n%s", err, out)
	}
	return bin, nil
}

// moduleDir is cmd/devkit, found from this file's place in the checkout.
func moduleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Options change the example stack for a test.
type Options struct {
	// Restart runs every process under restart: on-failure (the example
	// leaves restarts to the user), from a copy of ops.yaml.
	Restart bool
	// Idle adds that many idle processes (sleep) to a copy of ops.yaml, for
	// measuring a view over a larger stack.
	Idle int
}

// Start starts the example stack with bin and stops it at the test's end.
func Start(t testing.TB, bin string, opts Options) *Stack {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join(moduleDir(), "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(repo, "examples", "stack", "ops.yaml")
	if opts.Restart {
		cfg = withRestarts(t, cfg)
	}
	if opts.Idle > 0 {
		cfg = withIdle(t, cfg, opts.Idle)
	}
	home := t.TempDir()
	s := &Stack{t: t, Bin: bin, Config: cfg, Env: map[string]string{
		"DEVKIT":           bin,
		"DEVKIT_HOME":      home,
		"KV_DATA":          filepath.Join(home, "data"),
		"GATEWAY_POLICY":   filepath.Join(repo, "examples", "policies", "saas.yaml"),
		"RATELIMIT_PREFIX": "top:",
	}}
	for _, p := range []string{"KV_PORT", "KV_RESP_PORT", "GATEWAY_PORT", "GATEWAY_ADMIN_PORT", "GATEWAY2_PORT", "GATEWAY2_ADMIN_PORT"} {
		s.Env[p] = strconv.Itoa(freePort(t))
	}
	t.Cleanup(func() {
		if out, err := s.Run("sup", "-c", s.Config, "stop", "--all", "--force"); err != nil {
			t.Logf("cleanup: sup stop --all --force: %v\n%s", err, out)
		}
	})
	if out, err := s.Run("sup", "-c", s.Config, "start", "--all"); err != nil {
		t.Fatalf("sup start --all: %v\n%s", err, out)
	}
	return s
}

// withRestarts writes a copy of the YAML at path whose processes restart
// on failure, and returns the copy's path. Every path in the example is
// given by an environment variable, so the copy's place changes nothing.
func withRestarts(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.ReplaceAll(string(data), "\n    stop_timeout:", "\n    restart: {policy: on-failure, backoff: 100ms}\n    stop_timeout:")
	if strings.Count(yaml, "restart:") < 2 {
		t.Fatalf("%s: no stop_timeout lines to add restart policies beside", path)
	}
	cfg := filepath.Join(t.TempDir(), "ops.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// withIdle writes a copy of the YAML at path with n more processes that
// only sleep, and returns the copy's path.
func withIdle(t testing.TB, path string, n int) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Write(data)
	for i := range n {
		fmt.Fprintf(&b, "\n  idle%d:\n    command: sleep\n    args: [\"3600\"]\n", i+1)
	}
	cfg := filepath.Join(t.TempDir(), "ops-idle.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// URL is http://127.0.0.1:<the port of portVar>.
func (s *Stack) URL(portVar string) string { return "http://127.0.0.1:" + s.Env[portVar] }

// Environ is the environment of every devkit run against the stack: the
// test's own without what would point elsewhere, plus the stack's.
func (s *Stack) Environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := s.Env[k]; ours || k == "REDIS_URL" || k == "OPS_HOME" || k == "DEVKIT_SUP_CONFIG" || k == "DEVKIT_SUP_PROJECT" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// Run runs the devkit binary with args in the stack's environment and
// returns its combined output.
func (s *Stack) Run(args ...string) (string, error) {
	cmd := exec.Command(s.Bin, args...)
	cmd.Env = s.Environ()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// freePort returns a 127.0.0.1 port that was free a moment ago, below the
// ephemeral range: a port the kernel hands out for ":0" may go to an
// outgoing connection before the server binds it.
func freePort(t testing.TB) int {
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
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}

// Devkit builds the devkit binary once per test binary and returns its
// path; RemoveBuilt removes it (from TestMain, after the tests).
func Devkit(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "devkit-stacktest-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		built.bin, built.err = Build(dir)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// RemoveBuilt removes what Devkit built.
func RemoveBuilt() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// built is the one binary of a test binary's run: building it per test
// would cost a minute each on a loaded machine.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}
