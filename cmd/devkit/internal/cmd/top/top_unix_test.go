//go:build unix

package top

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
	"github.com/devkit-go/devkit/cmd/devkit/internal/stacktest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stacktest.RemoveBuilt()
	os.Exit(code)
}

// TestTopOnceJSON_ReadsTheWholeStack: one snapshot of the example stack
// names both processes with their usage, finds the KV server and the
// gateway from ops.yaml alone, and turns traffic into rates.
func TestTopOnceJSON_ReadsTheWholeStack(t *testing.T) {
	s := stacktest.Start(t, stacktest.Devkit(t), stacktest.Options{})
	gw := s.URL("GATEWAY_PORT")
	// Traffic during the two readings: a free tenant past its limit (20
	// PUTs a minute), so that both allowed and denied decisions count.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			req, _ := http.NewRequest("PUT", gw+"/keys/k", strings.NewReader("v"))
			req.Header = http.Header{"X-Workspace-Id": {"acme"}, "X-Workspace-Plan": {"free"}, "X-User-Id": {"ada"}}
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	out, err := s.Run("top", "-c", s.Config, "--once", "--json", "--interval", "1500ms")
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("top --once --json: %v\n%s", err, out)
	}
	var snap live.Snapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatalf("top --once --json: %v\n%s", err, out)
	}
	if snap.Schema != live.Schema || snap.IntervalSeconds <= 0 {
		t.Fatalf("schema %q interval %v", snap.Schema, snap.IntervalSeconds)
	}
	states := map[string]live.Process{}
	for _, p := range snap.Processes {
		states[p.Name] = p
	}
	for _, name := range []string{"kv", "gateway"} {
		p := states[name]
		if p.State != "running" || p.PID == 0 || p.RSSBytes <= 0 || p.CPUPercent == nil {
			t.Fatalf("%s: %+v, want running with a PID, RSS and CPU %%", name, p)
		}
	}
	if snap.KV == nil || !snap.KV.Up || snap.KV.URL != s.URL("KV_PORT") {
		t.Fatalf("kv: %+v, want up at %s", snap.KV, s.URL("KV_PORT"))
	}
	if snap.KV.OpsPerSecond["set"] <= 0 || snap.KV.Keys < 1 || snap.KV.WALBytes <= 0 {
		t.Fatalf("kv under PUTs: %+v, want sets per second, a key and a WAL", snap.KV)
	}
	g := snap.Gateway
	if g == nil || !g.Up || g.URL != s.URL("GATEWAY_ADMIN_PORT") || !g.StoreOK {
		t.Fatalf("gateway: %+v, want up at %s with its store ok", g, s.URL("GATEWAY_ADMIN_PORT"))
	}
	if g.DeniedPerSecond <= 0 || g.DecisionsPerSecond < g.DeniedPerSecond || len(g.Top) == 0 {
		t.Fatalf("gateway under a flood past the limit: %+v, want denials per second and a top identity", g)
	}
}
