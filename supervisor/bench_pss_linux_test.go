package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkIdleMonitorPSS starts N idle processes (sleep; N from
// SUP_BENCH_MONITORS, default 20) and reports what their monitors cost:
// the proportional set size (PSS, from /proc/PID/smaps_rollup: shared
// pages divided among the processes sharing them) per monitor and in all.
// The monitor is this test binary, or SUP_BENCH_DEVKIT (a devkit binary,
// run as "devkit sup __monitor", as the CLI runs it when no
// devkit-sup-monitor of its build lies beside it), or SUP_BENCH_MONITOR
// (any program whose main is supervisor.RunMonitor on stdin and stdout,
// such as bin/devkit-sup-monitor: what the CLI runs when it is there).
func BenchmarkIdleMonitorPSS(b *testing.B) {
	n := 20
	if v, err := strconv.Atoi(os.Getenv("SUP_BENCH_MONITORS")); err == nil && v > 0 {
		n = v
	}
	yaml := "processes:\n"
	for i := range n {
		yaml += fmt.Sprintf("  idle%03d:\n    command: sleep\n    args: [\"3600\"]\n", i)
	}
	h := newHarness(b, yaml)
	var monitor []string
	if devkit := os.Getenv("SUP_BENCH_DEVKIT"); devkit != "" {
		monitor = []string{devkit, "sup", "__monitor"}
	}
	if m := os.Getenv("SUP_BENCH_MONITOR"); m != "" {
		monitor = []string{m}
	}
	// SUP_BENCH_MONITOR_ENV adds space-separated NAME=value pairs to the
	// monitors' environment, to measure runtime settings (GOGC=50, ...).
	if env := strings.Fields(os.Getenv("SUP_BENCH_MONITOR_ENV")); monitor != nil || len(env) > 0 {
		if monitor == nil {
			monitor = h.sup.opts.MonitorCommand
			env = append(env, h.sup.opts.MonitorEnv...)
		}
		sup, err := New(h.home, h.sup.cfg, Options{MonitorCommand: monitor, MonitorEnv: env})
		if err != nil {
			b.Fatal(err)
		}
		h.sup = sup
	}
	ctx := context.Background()
	if res, err := h.sup.Start(ctx, h.sup.cfg.Order); err != nil || len(res) != n {
		b.Fatalf("start: %d started, %v", len(res), err)
	}
	for b.Loop() {
		time.Sleep(2 * time.Second) // idle: past start-up and the first health and marker ticks
		var total, dirty int64
		for _, name := range h.sup.cfg.Order {
			rec, err := h.sup.home.ReadRecord(name)
			if err != nil || rec == nil || rec.Monitor == nil {
				b.Fatalf("%s: record %+v, %v", name, rec, err)
			}
			m, err := smapsRollup(rec.Monitor.PID)
			if err != nil {
				b.Fatal(err)
			}
			total += m["Pss"]
			dirty += m["Private_Dirty"]
		}
		b.ReportMetric(float64(total)/float64(n), "pss-KiB/monitor")
		b.ReportMetric(float64(dirty)/float64(n), "private-dirty-KiB/monitor")
		b.ReportMetric(float64(total)/1024, "pss-MiB-total")
	}
}

// smapsRollup reads the kB fields of /proc/PID/smaps_rollup.
func smapsRollup(pid int) (map[string]int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, sc.Err()
}
