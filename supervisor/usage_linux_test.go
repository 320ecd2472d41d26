package supervisor

import (
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

// The CPU time a process's descendants burn is its own: a leader that only
// sleeps while a child of it spins reports the child's CPU.
func TestStatus_UsageCountsTheWholeTree(t *testing.T) {
	h := newHarness(t, `
processes:
  app:
    command: sh
    args: ["-c", "(while :; do :; done) & echo ready; exec sleep 300"]
    ready: {log: "ready", timeout: 10s}
    stop_timeout: 500ms
`)
	h.start("app")
	var st ProcessStatus
	eventually(t, 30*time.Second, "the spinning child's CPU time shows", func() bool {
		st = h.status("app")
		return st.CPUSeconds >= 0.2
	})
	if st.RSSBytes <= 0 || st.UsageSource == "" {
		t.Fatalf("usage %+v: want a resident size and a source", st)
	}
	info, err := proc.Lookup(st.PID)
	if err != nil {
		t.Fatal(err)
	}
	leader, _, ok := processUsage(info.Identity)
	if !ok || leader >= st.CPUSeconds/2 {
		t.Fatalf("leader alone used %.2fs of the tree's %.2fs: the child's time is not counted", leader, st.CPUSeconds)
	}
}

func TestStatTimes_CommWithParenthesesAndSpaces(t *testing.T) {
	line := []byte("42 (a) (b c) S 1 42 42 0 -1 4194560 100 0 0 0 150 30 7 3 20 0 1 0 98765 1000 200 18446744073709551615")
	ticks, start, ok := statTimes(line)
	if !ok || ticks != 150+30+7+3 || start != "98765" {
		t.Fatalf("statTimes = %d, %q, %v; want 190, 98765, true", ticks, start, ok)
	}
	if _, _, ok := statTimes([]byte("42 (short) S 1")); ok {
		t.Fatal("a short stat parsed")
	}
}

func TestCPUStatUsage(t *testing.T) {
	n, ok := cpuStatUsage([]byte("usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n"))
	if !ok || n != 1234567 {
		t.Fatalf("cpuStatUsage = %d, %v", n, ok)
	}
	if _, ok := cpuStatUsage([]byte("user_usec 5\n")); ok {
		t.Fatal("found usage_usec where there is none")
	}
}
