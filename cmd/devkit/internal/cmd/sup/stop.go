package sup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// StopOptions are the inputs of `devkit sup stop`.
type StopOptions struct {
	IO      *cmdutil.IOStreams
	Sup     Factory
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

func newStopCmd(ios *cmdutil.IOStreams, sup Factory) *cobra.Command {
	opts := &StopOptions{IO: ios, Sup: sup}
	cmd := &cobra.Command{
		Use: "stop [NAME...|--all] [--force] [--timeout D]",
		Example: `  devkit sup stop --all
  devkit sup stop api --timeout 3s
  devkit sup stop api --force     # kill what ignores the stop signal, and session survivors`,
		Short: "Stop processes, dependents first",
		Long: `Stop the named processes, or all of them, in reverse depends_on order. The
stop signal goes to the whole process group; after the timeout (stop_timeout,
or --timeout) a process still running makes stop fail (exit 1) unless --force
kills it. Processes of the same session that survive are reported and,
with --force, killed. A record whose PID now names another process is
removed without signalling anything.`,
		ValidArgsFunction: completeNames(sup),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Names = args
			return runStop(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "stop every known process")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "kill what outlives the timeout, and session survivors")
	addTimeoutFlag(cmd, &opts.Timeout)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the results as JSON")
	return cmd
}

func runStop(ctx context.Context, opts *StopOptions) error {
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
		}
		for _, s := range r.Survivors {
			verb := "survived"
			if err == nil {
				verb = "killed"
			}
			fmt.Fprintf(opts.IO.ErrOut, "%s: session member pid %d (%s) %s\n", r.Name, s.PID, s.Comm, verb)
		}
	}
	if errors.Is(err, supervisor.ErrStopTimeout) || errors.Is(err, supervisor.ErrSurvivors) {
		return err
	}
	return exitFor(err)
}
