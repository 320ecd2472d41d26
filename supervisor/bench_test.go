package supervisor

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// quickYAML declares a process that is ready as soon as it has printed.
const quickYAML = `
processes:
  quick:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=ready,sleep"}
    ready: {log: ready, timeout: 5s, interval: 1ms}
`

// BenchmarkStart measures a whole start (monitor spawn, record, process
// spawn, a log probe that succeeds at once): the overhead of start beyond
// the process's own readiness.
func BenchmarkStart(b *testing.B) {
	h := newHarness(b, quickYAML)
	ctx := context.Background()
	for b.Loop() {
		if _, err := h.sup.Start(ctx, []string{"quick"}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, err := h.sup.Stop(ctx, []string{"quick"}, StopOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkStop measures stop of a process that exits at once on SIGTERM:
// signal, exit noticed through the pidfd, group and session rescanned,
// the monitor's exit recorded, the record removed.
func BenchmarkStop(b *testing.B) {
	h := newHarness(b, quickYAML)
	ctx := context.Background()
	var afterExit time.Duration
	for b.Loop() {
		b.StopTimer()
		if _, err := h.sup.Start(ctx, []string{"quick"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := h.sup.Stop(ctx, []string{"quick"}, StopOptions{}); err != nil {
			b.Fatal(err)
		}
		returned := time.Now()
		// The monitor stamps the exit record right after reaping the
		// process: from there to stop's return is the exit-to-return time.
		if e, _ := h.sup.home.ReadExit("quick"); e != nil {
			afterExit += returned.Sub(e.At)
		}
	}
	b.ReportMetric(float64(afterExit.Microseconds())/1000/float64(b.N), "ms-exit-to-return/op")
}

// BenchmarkStatus50 measures status over 50 recorded, live processes.
func BenchmarkStatus50(b *testing.B) {
	yaml := "processes:\n"
	for i := range 50 {
		yaml += fmt.Sprintf("  p%02d:\n    command: sleep\n    args: ['300']\n", i)
	}
	h := newHarness(b, yaml)
	for i := range 50 {
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = proc.DetachedAttr()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		info, err := proc.Lookup(cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("p%02d", i)
		spec, _ := h.sup.spec(name)
		h.sup.home.WriteRecord(&state.ProcessRecord{Name: name, Process: info.Identity, StartedAt: time.Now(), Digest: spec.Digest(), StopSignal: "TERM", StopTimeout: time.Second})
	}
	ctx := context.Background()
	for b.Loop() {
		sts, err := h.sup.Status(ctx, nil)
		if err != nil || len(sts) != 50 || !AllRunning(sts) {
			b.Fatalf("status: %d entries, %v", len(sts), err)
		}
	}
}
