package sup

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil/cmdtest"
	"github.com/devkit-go/devkit/supervisor"
)

func TestLogs_FollowAcrossTruncationStopsOnCancel(t *testing.T) {
	e := newEnv(t, `
processes:
  ticker:
    command: sh
    args: ["-c", "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.05; done"]
    ready: {log: "tick 1", timeout: 5s}
`)
	e.must(0, "start", "ticker")
	var out cmdtest.LockedBuffer
	opts := &LogsOptions{
		IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out},
		Sup: func(need bool) (*supervisor.Supervisor, error) {
			return newSupervisor(cmdutil.NewFactory(cmdutil.System()), ProjectOptions{ConfigPath: e.config(), ConfigExplicit: true}, need)
		},
		Names:  []string{"ticker"},
		Lines:  1,
		Follow: true,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- logsRun(ctx, opts) }()
	waitUntil(t, "follow prints new ticks", func() bool { return strings.Count(out.String(), "tick") >= 3 })
	logPath := e.statusLine("ticker")
	if err := os.Truncate(logPath, 0); err != nil {
		t.Fatal(err)
	}
	// After truncation the ticker's numbers keep growing in a file that
	// restarts at offset 0; the follower must pick them up again.
	mark := len(out.String())
	waitUntil(t, "follow continues after truncation", func() bool { return strings.Count(out.String()[mark:], "tick") >= 3 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("logs -f ended with %v, want nil on cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("logs -f did not stop on cancel")
	}
}

// statusLine returns the log path of name from status --json.
func (e *env) statusLine(name string) string {
	return e.statusJSON(name).Processes[0].LogFile
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	e := newEnv(t, twoProcs)
	t.Setenv(configEnv, e.config())
	var out bytes.Buffer
	cmd := NewCmd(cmdutil.NewFactory(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}))
	cmd.SetArgs([]string{"status", "--json"})
	err := cmd.Execute()
	if cmdutil.ExitCode(err) != cmdutil.ExitNegative || !strings.Contains(out.String(), `"name": "api"`) {
		t.Fatalf("status with %s set: %v\n%s", configEnv, err, out.String())
	}
}

func TestSupLogs_MergesTheStackWithNamePrefixesAndFollowsIt(t *testing.T) {
	e := newEnv(t, `
processes:
  web:
    command: sh
    args: ["-c", "echo web up; exec sleep 300"]
    ready: {log: "web up", timeout: 5s}
  worker:
    command: sh
    args: ["-c", "echo worker up; while :; do sleep 0.1; echo worker tick; done"]
    ready: {log: "worker up", timeout: 5s}
`)
	e.must(0, "start", "--all")
	out, _ := e.must(0, "logs", "-n", "1")
	if !strings.Contains(out, "web    | web up\n") || !strings.Contains(out, "worker | worker") {
		t.Fatalf("merged logs:\n%s", out)
	}
	var buf cmdtest.LockedBuffer
	opts := &LogsOptions{
		IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &buf, ErrOut: &buf},
		Sup: func(need bool) (*supervisor.Supervisor, error) {
			return newSupervisor(cmdutil.NewFactory(cmdutil.System()), ProjectOptions{ConfigPath: e.config(), ConfigExplicit: true}, need)
		},
		Names:  []string{"worker", "web"},
		Lines:  0,
		Follow: true,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- logsRun(ctx, opts) }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(buf.String(), "worker | worker tick\n") {
		if time.Now().After(deadline) {
			t.Fatalf("logs -f of two processes printed %q", buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if !strings.HasPrefix(line, "worker | ") && !strings.HasPrefix(line, "web    | ") {
			t.Fatalf("line without a name prefix: %q", line)
		}
	}
}

func TestLogs_SinceAndGrepFlags(t *testing.T) {
	e := newEnv(t, `
processes:
  api:
    command: sh
    args: ["-c", "echo hello; echo error one; echo ready; exec sleep 300"]
    ready: {log: ready, timeout: 10s}
    log_timestamps: true
  plain:
    command: sh
    args: ["-c", "echo ready; exec sleep 300"]
    ready: {log: ready, timeout: 10s}
`)
	e.must(0, "start", "api", "plain")
	out, _ := e.must(0, "logs", "api", "--grep", "err(or)?", "--since", "1h")
	if !strings.HasSuffix(out, " error one\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("logs --grep --since: %q", out)
	}
	if out, _ := e.must(0, "logs", "api", "--since", "2000-01-01T00:00:00Z"); strings.Count(out, "\n") != 3 {
		t.Fatalf("logs --since TIME prints every line since: %q", out)
	}
	e.must(2, "logs", "api", "--since", "yesterday")
	e.must(2, "logs", "api", "--grep", "(")
	if _, errOut := e.must(1, "logs", "plain", "--since", "10m"); !strings.Contains(errOut, "log_timestamps: true") {
		t.Fatalf("--since on a log without stamps: %s", errOut)
	}
}
