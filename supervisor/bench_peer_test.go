//go:build linux

package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// peerSupervisord is a private supervisord (the peer) with n programs, each
// the test binary as a child that runs until stopped; startsecs makes
// "started" mean what a 1 s readiness means here: alive for readyAfter.
type peerSupervisord struct {
	dir  string
	conf string
	cmd  *exec.Cmd
}

func startPeerSupervisord(b *testing.B, n int, readyAfter time.Duration) *peerSupervisord {
	b.Helper()
	if _, err := exec.LookPath("supervisord"); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal("supervisord not installed (apt-get install supervisor); CI=true: the peer benchmark must run")
		}
		b.Skip("supervisord not installed (apt-get install supervisor): the peer comparison is skipped")
	}
	p := &peerSupervisord{dir: b.TempDir()}
	var conf strings.Builder
	fmt.Fprintf(&conf, "[unix_http_server]\nfile=%[1]s/s.sock\n[supervisord]\nlogfile=%[1]s/d.log\npidfile=%[1]s/d.pid\nchildlogdir=%[1]s\nnodaemon=true\n[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n[supervisorctl]\nserverurl=unix://%[1]s/s.sock\n", p.dir)
	for i := range n {
		fmt.Fprintf(&conf, "[program:p%02d]\ncommand=%s\nenvironment=SUP_TEST_ROLE=\"child\",SUP_TEST_CHILD=\"sleep\"\nautostart=false\nstartsecs=%d\nstopwaitsecs=5\nstdout_logfile=%s/p%02d.log\n", i, testExe(b), int(readyAfter.Seconds()), p.dir, i)
	}
	p.conf = filepath.Join(p.dir, "supervisord.conf")
	if err := os.WriteFile(p.conf, []byte(conf.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	p.cmd = exec.Command("supervisord", "-c", p.conf)
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.cmd.Process.Signal(os.Interrupt); p.cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for p.ctl() != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	return p
}

func (p *peerSupervisord) ctl(args ...string) error {
	if len(args) == 0 {
		args = []string{"pid"}
	}
	out, err := exec.Command("supervisorctl", append([]string{"-c", p.conf}, args...)...).CombinedOutput()
	if err != nil && args[0] != "status" { // status exits 3 when something is not running
		return fmt.Errorf("supervisorctl %v: %w: %s", args, err, out)
	}
	return nil
}

// BenchmarkPeerStartAll20 starts 20 independent processes that take 1 s to
// become ready: devkit sup (library Start) and supervisord
// (`supervisorctl start all` with startsecs=1, which includes a Python
// client's start-up), alternated within each iteration.
func BenchmarkPeerStartAll20(b *testing.B) {
	yaml := "processes:\n"
	for i := range 20 {
		yaml += fmt.Sprintf("  p%02d:\n    command: {{exe}}\n    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: \"sleepfor=1s,print=ready,sleep\"}\n    ready: {log: ready, timeout: 30s, interval: 10ms}\n", i)
	}
	h := newHarness(b, yaml)
	peer := startPeerSupervisord(b, 20, time.Second)
	var sup, sd time.Duration
	for b.Loop() {
		began := time.Now()
		if _, err := h.sup.Start(b.Context(), h.sup.cfg.Order); err != nil {
			b.Fatal(err)
		}
		sup += time.Since(began)
		began = time.Now()
		if err := peer.ctl("start", "all"); err != nil {
			b.Fatal(err)
		}
		sd += time.Since(began)
		b.StopTimer()
		if _, err := h.sup.Stop(b.Context(), h.sup.cfg.Order, StopOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := peer.ctl("stop", "all"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((sup / n).Milliseconds()), "sup-ms/op")
	b.ReportMetric(float64((sd / n).Milliseconds()), "supervisord-ms/op")
}
