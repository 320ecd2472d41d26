package sup

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/buildinfo"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// monitorVerb is the hidden verb `devkit sup __monitor`: the devkit binary
// re-executed as one process's monitor (see supervisor.RunMonitor).
const monitorVerb = "__monitor"

// MonitorOptions are the inputs of `devkit sup __monitor`: its request
// arrives on IO.In, its answer leaves on IO.Out.
type MonitorOptions struct {
	IO *cmdutil.IOStreams
}

// NewCmdMonitor builds the hidden `devkit sup __monitor`.
func NewCmdMonitor(f *cmdutil.Factory, runF func(context.Context, *MonitorOptions) error) *cobra.Command {
	opts := &MonitorOptions{IO: f.IOStreams}
	return &cobra.Command{
		Use:    monitorVerb,
		Short:  "Internal: supervise one process (started by sup start)",
		Hidden: true,
		Args:   cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return monitorRun(cmd.Context(), opts)
		},
	}
}

func monitorRun(_ context.Context, opts *MonitorOptions) error {
	// The monitor closes its stdout to tell the starting run it is up, so
	// the stream must be closable (the process's own stdout is).
	out, ok := opts.IO.Out.(io.WriteCloser)
	if !ok {
		return errors.New("the monitor needs a closable stdout")
	}
	code := supervisor.RunMonitor(opts.IO.In, out)
	if code != 0 {
		return cmdutil.SilentExit(code)
	}
	return nil
}

// smallMonitorName is the monitor-only program devkit ships beside itself
// (cmd/devkit/devkit-sup-monitor).
const smallMonitorName = "devkit-sup-monitor"

// smallMonitorCheck bounds how long devkit waits for the small monitor to
// report its build.
const smallMonitorCheck = 5 * time.Second

// monitorFor returns the supervisor's choice of monitor for each process:
// devkit-sup-monitor (see smallMonitor, asked once) unless the process has
// an HTTP health probe, which the small monitor is built without; nil
// leaves it to the devkit binary (`devkit sup __monitor`).
func monitorFor(exe string) func(*supervisor.Process) []string {
	small := sync.OnceValue(func() []string { return smallMonitor(exe) })
	return func(spec *supervisor.Process) []string {
		if spec.MonitorProbesHTTP() {
			return nil
		}
		return small()
	}
}

// smallMonitor returns devkit-sup-monitor from the directory of exe (the
// devkit binary) when it is there and reports this devkit's build, else
// nil: the devkit binary is then its own monitor (`devkit sup __monitor`).
// An idle small monitor costs about 1 MiB of PSS against 2.9 for the
// devkit binary (BenchmarkIdleMonitorPSS); a build that differs could
// read or write records this devkit does not, so it is never used.
func smallMonitor(exe string) []string {
	path := filepath.Join(filepath.Dir(exe), smallMonitorName)
	if runtime.GOOS == "windows" {
		path += ".exe"
	}
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), smallMonitorCheck)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != buildinfo.Current().Build() {
		return nil
	}
	return []string{path}
}
