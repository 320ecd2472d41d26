//go:build unix

package supervisor

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

const replicasYAML = `
processes:
  web:
    command: sh
    args: ["-c", "echo \"replica $DEVKIT_SUP_REPLICA port $PORT\"; exec sleep 300"]
    env: {PORT: "8000"}
    replicas: 2
  client:
    command: sh
    args: ["-c", "exec sleep 300"]
    depends_on: [{name: web, condition: started}]
`

func (h *harness) waitLog(name, want string) {
	h.t.Helper()
	path, err := h.sup.LogPath(name)
	if err != nil {
		h.t.Fatal(err)
	}
	var got []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = os.ReadFile(path); strings.Contains(string(got), want) {
			return
		}
	}
	h.t.Fatalf("log of %s = %q, want %q", name, got, want)
}

// Each replica is a process of its own — record, log, PORT offset — and
// scale starts and stops replicas while the others run on.
func TestReplicas_EachItsOwnProcessAndScale(t *testing.T) {
	h := newHarness(t, replicasYAML)
	if got := strings.Join(h.sup.cfg.Order, ","); got != "web.1,web.2,client" {
		t.Fatalf("order = %s", got)
	}
	if c := h.sup.cfg.Processes["client"]; !slices.Equal(c.DependsOn, []string{"web.1", "web.2"}) || c.Condition("web.2") != DependsStarted {
		t.Fatalf("client depends on %v (%v)", c.DependsOn, c.Conditions)
	}
	res := h.start("client") // and, first, every replica it depends on
	if len(res) != 3 {
		t.Fatalf("start client = %+v", res)
	}
	h.waitLog("web.1", "replica 1 port 8000")
	h.waitLog("web.2", "replica 2 port 8001")
	st, err := h.sup.Status(context.Background(), []string{"web"})
	if err != nil || len(st) != 2 || st[0].Name != "web.1" || st[1].Name != "web.2" || st[0].PID == st[1].PID {
		t.Fatalf("status web = %+v, %v", st, err)
	}
	pid1 := st[0].PID

	sc, err := h.sup.Scale(context.Background(), "web", 3, StopOptions{})
	if err != nil || len(sc.Started) != 1 || sc.Started[0].Name != "web.3" || len(sc.Stopped) != 0 {
		t.Fatalf("scale to 3 = %+v, %v", sc, err)
	}
	h.waitLog("web.3", "replica 3 port 8002")
	st, _ = h.sup.Status(context.Background(), []string{"web"})
	if len(st) != 3 || st[2].State != StateRunning || st[0].PID != pid1 {
		t.Fatalf("status web after scale 3 = %+v", st)
	}

	sc, err = h.sup.Scale(context.Background(), "web", 1, StopOptions{})
	if err != nil || len(sc.Started) != 0 || len(sc.Stopped) != 2 || sc.Stopped[0].Name != "web.3" || sc.Stopped[1].Name != "web.2" { // reverse order
		t.Fatalf("scale to 1 = %+v, %v", sc, err)
	}
	if st := h.status("web.1"); st.State != StateRunning || st.PID != pid1 {
		t.Fatalf("web.1 after scale 1 = %+v", st)
	}
	if st := h.status("web.2"); st.State != StateStopped {
		t.Fatalf("web.2 after scale 1 = %+v", st)
	}
	if _, err := h.sup.Scale(context.Background(), "client", 2, StopOptions{}); err == nil {
		t.Fatal("scale of a process without replicas: no error")
	}
	if _, err := h.sup.Stop(context.Background(), []string{"web", "client"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestReplicas_ConfigErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"processes:\n  web:\n    command: x\n    replicas: 0\n", "ops.yaml:4: processes.web.replicas: must be at least 1"},
		{"processes:\n  web:\n    command: x\n    replicas: two\n", "ops.yaml:4: processes.web.replicas:"},
		{"processes:\n  web:\n    command: x\n    replicas: 2\n  web.2:\n    command: x\n", "web.2 is both a process and replica 2 of web"},
	} {
		_, err := ParseConfig("ops.yaml", []byte(tc.yaml), func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
