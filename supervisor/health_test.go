package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const healthYAML = `
processes:
  web:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=up,sleep"}
    ready: {exec: "test -f healthy", timeout: 5s, interval: 50ms}
    health: {every: 100ms, failures: 2}
    restart: {policy: %s, backoff: 50ms}
`

func TestHealth_FailingProcessIsRestartedUnderItsPolicy(t *testing.T) {
	h := newHarness(t, fmt.Sprintf(healthYAML, "on-failure"))
	flag := filepath.Join(h.dir, "healthy")
	os.WriteFile(flag, nil, 0o600)
	pid := h.start("web")[0].PID
	time.Sleep(300 * time.Millisecond)
	if st := h.status("web"); st.State != StateRunning || st.PID != pid {
		t.Fatalf("healthy process: %+v", st)
	}
	os.Remove(flag)
	eventually(t, 10*time.Second, "the unhealthy process is restarted", func() bool {
		st := h.status("web")
		return st.PID != pid && st.Restarts >= 1 && (st.State == StateRunning || st.State == StateUnhealthy)
	})
	os.WriteFile(flag, nil, 0o600)
	eventually(t, 10*time.Second, "the restarted process is healthy", func() bool {
		return h.status("web").State == StateRunning
	})
}

func TestHealth_UnhealthyIsShownWhenThePolicyDoesNotRestart(t *testing.T) {
	h := newHarness(t, fmt.Sprintf(healthYAML, "never"))
	flag := filepath.Join(h.dir, "healthy")
	os.WriteFile(flag, nil, 0o600)
	pid := h.start("web")[0].PID
	time.Sleep(300 * time.Millisecond)
	os.Remove(flag)
	eventually(t, 10*time.Second, "status says unhealthy", func() bool {
		st := h.status("web")
		return st.State == StateUnhealthy && st.PID == pid && st.Reason != ""
	})
	if sts, _ := h.sup.Status(t.Context(), nil); AllRunning(sts) {
		t.Fatal("an unhealthy process counts as running")
	}
}

func TestConfig_HealthNeedsARerunnableReadyProbe(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"processes:\n  a:\n    command: x\n    health: {every: 1s}\n", "ops.yaml:4: processes.a.health: needs a ready probe"},
		{"processes:\n  a:\n    command: x\n    ready: {log: up}\n    health: {every: 1s}\n", "ops.yaml:5: processes.a.health: a log ready probe cannot be re-run"},
		{"processes:\n  a:\n    command: x\n    ready: {tcp: \"127.0.0.1:1\"}\n    health: {every: 0s}\n", "ops.yaml:5: processes.a.health.every: must be positive"},
		{"processes:\n  a:\n    command: x\n    ready: {tcp: \"127.0.0.1:1\"}\n    health: {failures: 0}\n", "ops.yaml:5: processes.a.health.failures: must be at least 1"},
	} {
		_, err := ParseConfig("ops.yaml", []byte(tc.yaml), os.LookupEnv)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %s", tc.yaml, err, tc.want)
		}
	}
}
