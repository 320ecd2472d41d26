//go:build unix

// The harness of the process-running tests, which are Unix only (see
// lifecycle_test.go).

package supervisor

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

// testExe is the test binary, used as monitor and helper child.
func testExe(t testing.TB) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// harness is one supervisor home plus its YAML, cleaned up at test end.
type harness struct {
	t    testing.TB
	dir  string
	home string
	sup  *Supervisor
	// started is every process h.start started, so cleanup can end one a
	// test left untracked (it overwrote the record, say).
	started []proc.Identity
}

// newHarness writes yaml (with {{exe}} replaced by the test binary) and
// returns a Supervisor over it; every process it started is gone when the
// test ends.
func newHarness(t testing.TB, yaml string) *harness {
	t.Helper()
	return newHarnessAt(t, filepath.Join(t.TempDir(), "sup"), yaml)
}

// newHarnessAt is newHarness with the supervisor's home at home.
func newHarnessAt(t testing.TB, home, yaml string) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), home: home}
	h.load(yaml)
	t.Cleanup(h.cleanup)
	return h
}

func (h *harness) load(yaml string) {
	h.t.Helper()
	path := filepath.Join(h.dir, "ops.yaml")
	yaml = strings.ReplaceAll(yaml, "{{exe}}", strconv.Quote(testExe(h.t)))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		h.t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		h.t.Fatal(err)
	}
	sup, err := New(h.home, cfg, Options{
		MonitorCommand: []string{testExe(h.t)},
		MonitorEnv:     []string{roleEnv + "=monitor"},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.sup = sup
}

// cleanup force-stops everything recorded, then kills whatever is left of
// every session the home knows of (records and exit records), so no test
// leaks a process, even one that failed half-way.
func (h *harness) cleanup() {
	names, _, _ := h.sup.home.RecordNames()
	var sessions []int
	for _, n := range names {
		if r, _ := h.sup.home.ReadRecord(n); r != nil {
			sessions = append(sessions, r.Process.PID)
		}
	}
	for _, n := range h.sup.cfg.Order {
		if e, _ := h.sup.home.ReadExit(n); e != nil {
			sessions = append(sessions, e.PID)
		}
	}
	var monitors []proc.Identity
	for _, n := range names {
		if r, _ := h.sup.home.ReadRecord(n); r != nil && r.Monitor != nil {
			monitors = append(monitors, *r.Monitor)
		}
	}
	ctx := context.Background()
	for _, n := range names {
		h.sup.stopOne(ctx, n, StopOptions{Force: true, Timeout: 200 * time.Millisecond})
	}
	// A monitor may still be copying the last output to the log: the
	// temporary directories go only once it is gone.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !slices.ContainsFunc(monitors, func(m proc.Identity) bool { _, err := proc.Verify(m); return err == nil }) {
			break
		}
	}
	for _, id := range h.started {
		if p, err := proc.Open(id); err == nil { // still that very process
			h.t.Logf("cleanup: pid %d was left running untracked; killing it", id.PID)
			p.Signal(proc.Kill)
			p.Close()
		}
	}
	for _, sid := range sessions {
		members, _ := proc.SessionMembers(sid)
		if slices.ContainsFunc(members, func(m proc.Info) bool { return m.PID == sid }) {
			continue // a live leader now: the PID was reused by an unrelated session
		}
		for _, m := range members {
			if h, err := proc.Open(m.Identity); err == nil {
				h.Signal(proc.Kill)
				h.Close()
			}
		}
	}
}

func (h *harness) start(names ...string) []StartResult {
	h.t.Helper()
	res, err := h.sup.Start(context.Background(), names)
	for _, r := range res {
		if info, lerr := proc.Lookup(r.PID); lerr == nil {
			h.started = append(h.started, info.Identity)
		}
	}
	if err != nil {
		h.t.Fatalf("start %v: %v", names, err)
	}
	return res
}

func (h *harness) status(name string) ProcessStatus {
	h.t.Helper()
	sts, err := h.sup.Status(context.Background(), []string{name})
	if err != nil {
		h.t.Fatalf("status %s: %v", name, err)
	}
	return sts[0]
}

// alive reports whether pid names a live (non-zombie) process.
func alive(pid int) bool {
	_, err := proc.Lookup(pid)
	return err == nil
}

// freeAddr returns a 127.0.0.1 address with a port nobody listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scaled is d, a deadline of a test's setup, stretched under -race where
// every helper process (the race-built test binary) starts several times
// slower; never use it for the bound a test proves.
func scaled(d time.Duration) time.Duration { return d * raceSlowdown }

// eventually polls cond until it holds or the timeout passes. The timeout
// only bounds a wait for a condition — the condition is what a test proves —
// so it is scaled under -race.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	timeout = scaled(timeout)
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
