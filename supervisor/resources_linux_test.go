package supervisor

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/state"
)

const hogYAML = `
processes:
  hog:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=started,alloc=256,sleep"}
    resources: {memory_max: 64MiB, cpu_max: 0.5}
    restart: never
`

func TestResources_AStartWhereLimitsCannotBeEnforcedIsRefusedNamingTheField(t *testing.T) {
	h := newHarness(t, hogYAML)
	withMonitorEnv(t, h, []string{state.CgroupEnv + "=off"})
	_, err := h.sup.Start(context.Background(), []string{"hog"})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Line != 6 || ce.Field != "processes.hog.resources" {
		t.Fatalf("start: %v, want a ConfigError at line 6, processes.hog.resources", err)
	}
	for _, want := range []string{"cannot be enforced here", state.CgroupEnv + "=off", "remove resources"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// Nothing ran: no record, nothing in the log.
	if rec, _ := h.sup.home.ReadRecord("hog"); rec != nil {
		t.Fatalf("a record was written: %+v", rec)
	}
	if data, _ := os.ReadFile(h.sup.logPathOf("hog")); strings.Contains(string(data), "started") {
		t.Fatalf("the process ran:\n%s", data)
	}
	st := h.status("hog")
	if st.MemoryMax != 64<<20 || st.CPUMax != 0.5 {
		t.Errorf("status shows memory_max %d cpu_max %v, want %d and 0.5", st.MemoryMax, st.CPUMax, 64<<20)
	}
}

func TestResources_MemoryMaxOOMKillsAProcessThatAllocatesBeyondIt(t *testing.T) {
	own, err := ownCgroupForTest()
	if err == nil {
		_, err = limitsParent(&Resources{MemoryMax: 1 << 30}, false)
	}
	if err != nil {
		// Not a missing package: the kernel's cgroup layout (controllers
		// bound to cgroup v1, or no delegation), which no install changes.
		t.Skipf("cgroup v2 cannot enforce limits here (cgroup %s): %v", own, err)
	}
	h := newHarness(t, hogYAML)
	h.start("hog")
	var st ProcessStatus
	eventually(t, 30*time.Second, "the hog is OOM-killed", func() bool {
		st = h.status("hog")
		return st.State == StateExited
	})
	if st.ExitSignal != "SIGKILL" {
		t.Errorf("exit signal %q, want SIGKILL (the OOM killer)", st.ExitSignal)
	}
	log, _ := os.ReadFile(h.sup.logPathOf("hog"))
	if strings.Contains(string(log), "holding") || strings.Contains(string(log), "allocated 72 MiB") {
		t.Errorf("the hog got past memory_max:\n%s", log)
	}
	if !strings.Contains(string(log), "allocated 8 MiB") {
		t.Errorf("the hog did not run:\n%s", log)
	}
}

// ownCgroupForTest names the test's cgroup v2, for the skip message.
func ownCgroupForTest() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(data), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			return rel, err
		}
	}
	return "none", err
}
