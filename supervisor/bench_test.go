//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"context"
	"fmt"
	"testing"
	"time"
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

// BenchmarkStatus50 measures status over 50 supervised, live processes
// (each with its monitor): identity verified for each, descendants counted
// from one pass over the process table.
func BenchmarkStatus50(b *testing.B) {
	yaml := "processes:\n"
	for i := range 50 {
		yaml += fmt.Sprintf("  p%02d:\n    command: {{exe}}\n    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: \"print=ready,sleep\"}\n    ready: {log: ready, timeout: 30s, interval: 5ms}\n", i)
	}
	h := newHarness(b, yaml)
	ctx := context.Background()
	if res, err := h.sup.Start(ctx, h.sup.cfg.Order); err != nil || len(res) != 50 {
		b.Fatalf("start: %d, %v", len(res), err)
	}
	for b.Loop() {
		sts, err := h.sup.Status(ctx, nil)
		if err != nil || len(sts) != 50 || !AllRunning(sts) {
			b.Fatalf("status: %d entries, %v", len(sts), err)
		}
	}
}

// BenchmarkStartAll20 measures start --all of 20 independent processes
// that each need 1 s to become ready: concurrent starts make it about 1 s
// plus the per-start overhead, not 20 s. ready-overhead-ms/op is what it
// took beyond the 1 s readiness.
func BenchmarkStartAll20(b *testing.B) {
	yaml := "processes:\n"
	for i := range 20 {
		yaml += fmt.Sprintf("  p%02d:\n    command: {{exe}}\n    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: \"sleepfor=1s,print=ready,sleep\"}\n    ready: {log: ready, timeout: 30s, interval: 10ms}\n", i)
	}
	h := newHarness(b, yaml)
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		began := time.Now()
		res, err := h.sup.Start(ctx, h.sup.cfg.Order)
		if err != nil || len(res) != 20 {
			b.Fatalf("start --all: %d started, %v", len(res), err)
		}
		total += time.Since(began)
		b.StopTimer()
		if _, err := h.sup.Stop(ctx, h.sup.cfg.Order, StopOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64((total/time.Duration(b.N) - time.Second).Milliseconds()), "ready-overhead-ms/op")
}

// logPeak runs a writer at rate (flood's argument, e.g. "51200KB" for
// 50 MB/s) under log_max_size maxSize with log_backups 2 for d, and returns
// the largest size its logs reached together, sampled every 5 ms.
func logPeak(tb testing.TB, rate, maxSize string, d time.Duration) int64 {
	h := newHarness(tb, fmt.Sprintf(`
processes:
  flood:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "flood=%s"}
    log_max_size: %s
    log_backups: 2
`, rate, maxSize))
	h.start("flood")
	path, _ := h.sup.LogPath("flood")
	var peak int64
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		peak = max(peak, logFamilySize(path, 2))
	}
	return peak
}

// BenchmarkLogPeakDisk50MBps reports the peak disk held by the logs of a
// 50 MB/s writer with log_max_size: 10MB, log_backups: 2 (the bound is
// 3 × (10 MB + 64 KiB)) over 5 s.
func BenchmarkLogPeakDisk50MBps(b *testing.B) {
	for b.Loop() {
		b.ReportMetric(float64(logPeak(b, "51200KB", "10MB", 5*time.Second))/(1<<20), "peak-MiB")
	}
}
