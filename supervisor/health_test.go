//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

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

func TestHealth_LivenessProbeIsCheckedInsteadOfTheReadyProbe(t *testing.T) {
	h := newHarness(t, `
processes:
  web:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=up,sleep"}
    ready: {log: up, timeout: 5s}
    liveness: {exec: "test -f alive", timeout: 5s, interval: 50ms}
    health: {every: 100ms, failures: 2}
`)
	flag := filepath.Join(h.dir, "alive")
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pid := h.start("web")[0].PID
	eventually(t, 10*time.Second, "the liveness probe passed", func() bool {
		hr, _ := h.sup.home.ReadHealth("web")
		return hr != nil && hr.PID == pid && hr.Healthy
	})
	os.Remove(flag)
	eventually(t, 10*time.Second, "status says unhealthy", func() bool {
		st := h.status("web")
		return st.State == StateUnhealthy && st.PID == pid && strings.Contains(st.Reason, "health check failed")
	})
}
