package gateway_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit/gateway"
)

// syncBuffer is a log sink safe for the gateway's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func ruleNames(srv *gateway.Server) []string {
	var names []string
	for _, r := range srv.Policy().Rules {
		names = append(names, r.Name)
	}
	return names
}

// waitFor polls cond every 20 ms for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A policy file is applied when its writer is done: a writer that keeps
// the file open and pauses 2 s between two writes never has its first
// half (a valid policy without the rule "limited") applied, and the whole
// is applied once it closes the file; a file renamed into place is
// applied at once. A reload that removes a rule or a limit says so in the
// log and on the admin API's /policy. The file was polled and any content
// that parsed was applied: during such a pause a rule vanished.
func TestGateway_PolicyFileAppliedOnlyWhenItsWriterIsDone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a writer closing the file is reported on Linux; elsewhere a change waits for the settle interval only")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	const api = "rules:\n  - {name: api, paths: [/], key: [ip], limits: [{limit: 1000000, window: 1h}]}\n"
	const limited = "  - {name: limited, paths: [/limited], key: [ip], limits: [{limit: 1, window: 1h}]}\n"
	if err := os.WriteFile(path, []byte(api+limited), 0o644); err != nil {
		t.Fatal(err)
	}
	p := mustPolicy(t, api+limited)
	upstream := httptest.NewServer(&recorder{})
	t.Cleanup(upstream.Close)
	var logs syncBuffer
	srv, cancel, done := launchGateway(t, gateway.Config{Listen: "127.0.0.1:0", Admin: ":0", Upstream: upstream.URL, Policy: p,
		Limiter: newMemoryLimiter(), PolicyFile: path, WatchInterval: 50 * time.Millisecond, WatchSettle: 300 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(stopper(t, cancel, done))
	time.Sleep(100 * time.Millisecond) // the watch is set up

	// A writer that pauses with the file open.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(api)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
		if names := ruleNames(srv); !slices.Contains(names, "limited") {
			f.Close()
			t.Fatalf("while the writer paused, the policy in force had rules %v: its first half was applied", names)
		}
	}
	f.WriteString(strings.Replace(limited, "limit: 1,", "limit: 2,", 1) + "  - {name: extra, paths: [/extra], skip: true}\n")
	f.Close()
	if !waitFor(2*time.Second, func() bool { return slices.Contains(ruleNames(srv), "extra") }) {
		t.Fatalf("the whole file was not applied after its writer closed it: rules %v", ruleNames(srv))
	}

	// Renamed into place: applied at once, and what it removes is told.
	tmp := filepath.Join(dir, ".policy.yaml.tmp")
	os.WriteFile(tmp, []byte("rules:\n  - {name: limited, paths: [/limited], key: [ip], limits: [{limit: 3, window: 1h}]}\n"), 0o644)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if !waitFor(2*time.Second, func() bool { return len(ruleNames(srv)) == 1 }) {
		t.Fatalf("a file renamed into place was not applied: rules %v", ruleNames(srv))
	}
	resp, err := http.Get("http://" + srv.AdminAddr() + "/policy")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st gateway.PolicyStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if want := []string{"rule api", "rule extra"}; !slices.Equal(st.Removed, want) || st.ReloadedAt == nil {
		t.Errorf("/policy: removed %q, reloaded at %v: want %q", st.Removed, st.ReloadedAt, want)
	}
	if !strings.Contains(logs.String(), "removes rules or limits") || !strings.Contains(logs.String(), "rule api") {
		t.Errorf("the log does not say what the reload removed:\n%s", logs.String())
	}
}
