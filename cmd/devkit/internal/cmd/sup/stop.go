package sup

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// StopOptions are the inputs of `devkit sup stop`.
type StopOptions struct {
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup     SupervisorFunc
	Names   []string
	All     bool
	Force   bool
	Timeout time.Duration
	JSON    bool
}

// stopReport is the JSON document of `sup stop --json`.
type stopReport struct {
	Schema  string                  `json:"schema"`
	Results []supervisor.StopResult `json:"results"`
	Error   string                  `json:"error,omitempty"`
}

// NewCmdStop builds `devkit sup stop`; runF, when not nil, receives the options instead of stopRun.
func NewCmdStop(f *cmdutil.Factory, runF func(context.Context, *StopOptions) error) *cobra.Command {
	opts := &StopOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use: "stop [NAME...|--all] [--force] [--timeout D]",
		Example: `  devkit sup stop --all
  devkit sup stop api --timeout 3s
  devkit sup stop api --force     # kill what ignores the stop signal, and session survivors`,
		Short: "Stop processes, dependents first",
		Long: `Stop the named processes, or all of them, in reverse depends_on order. A
process with a shutdown: command first gets that command (DEVKIT_SUP_PID is
its PID) and shutdown.timeout to end; then the stop signal (shutdown.signal,
else stop_signal) goes to the whole process group and to every descendant that
left it (daemons that double-forked or called setsid are tracked). After the
timeout (stop_timeout, or --timeout) anything still running makes stop fail
with outcome "timeout" and exit 1 — the process stays supervised, a later
crash is still restarted — unless --force kills it; whatever survives even
that is named with its PID and command (exit 1). A record whose PID now
names another process is removed without signalling anything. With --all,
stop goes on past failures (a corrupt record is reported by name) and exits
1 if any. A stop that has to wait for a start of the same name says so, with
the PID holding the lock.`,
		ValidArgsFunction: completeNames(f),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if opts.ProjectOptions, opts.Sup, opts.Names, err = bindNames(f, cmd, args); err != nil {
				return err
			}
			return runVerb(cmd.Context(), runF, stopRun, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "stop every known process")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "kill what outlives the timeout, and session survivors")
	addTimeoutFlag(cmd, &opts.Timeout)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the results as JSON")
	return cmd
}

func stopRun(ctx context.Context, opts *StopOptions) error {
	sup, err := opts.Sup(false)
	if err != nil {
		return err
	}
	names, err := namesOrAll(opts.Names, opts.All, sup.Names)
	if err != nil {
		return err
	}
	results, err := sup.Stop(ctx, names, supervisor.StopOptions{Force: opts.Force, Timeout: opts.Timeout})
	if opts.JSON {
		rep := stopReport{Schema: "devkit.sup.stop/v1", Results: results}
		if rep.Results == nil {
			rep.Results = []supervisor.StopResult{}
		}
		if err != nil {
			rep.Error = err.Error()
		}
		if werr := cmdutil.WriteJSON(opts.IO.Out, rep); werr != nil {
			return werr
		}
		results = nil
	}
	for _, r := range results {
		switch r.Outcome {
		case supervisor.StopStopped:
			fmt.Fprintf(opts.IO.Out, "%s: stopped (pid %d)\n", r.Name, r.PID)
		case supervisor.StopKilled:
			fmt.Fprintf(opts.IO.Out, "%s: killed (pid %d)\n", r.Name, r.PID)
		case supervisor.StopStale:
			fmt.Fprintf(opts.IO.Out, "%s: stale record (pid %d is another process now); removed, nothing signalled\n", r.Name, r.PID)
		case supervisor.StopNotRunning:
			fmt.Fprintf(opts.IO.Out, "%s: not running\n", r.Name)
		case supervisor.StopTimeout:
			fmt.Fprintf(opts.IO.Out, "%s: timeout (pid %d still running, still supervised)\n", r.Name, r.PID)
		case supervisor.StopFailed:
			fmt.Fprintf(opts.IO.Out, "%s: failed\n", r.Name)
		}
		for _, s := range r.Survivors {
			fmt.Fprintf(opts.IO.ErrOut, "%s: pid %d (%s) survived\n", r.Name, s.PID, s.Comm)
		}
		for _, u := range r.Unrecorded {
			fmt.Fprintf(opts.IO.ErrOut, "%s: not recorded: %s\n", r.Name, u)
		}
	}
	return exitFor(err) // every failure is in the results; exit 1
}
