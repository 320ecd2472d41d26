package sup

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// StartOptions are the inputs of `devkit sup start`.
type StartOptions struct {
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup   SupervisorFunc
	Names []string
	All   bool
	JSON  bool
}

// startReport is the JSON document of `sup start --json` (and restart).
type startReport struct {
	Schema  string                   `json:"schema"`
	Results []supervisor.StartResult `json:"results"`
	Error   string                   `json:"error,omitempty"`
	LogFile string                   `json:"log_file,omitempty"` // of the process that failed to start
	LogTail string                   `json:"log_tail,omitempty"`
}

// writeStartJSON prints the results of a start (or restart) and its error.
func writeStartJSON(ios *cmdutil.IOStreams, results []supervisor.StartResult, err error) error {
	rep := startReport{Schema: "devkit.sup.start/v1", Results: results}
	if rep.Results == nil {
		rep.Results = []supervisor.StartResult{}
	}
	if err != nil {
		rep.Error = err.Error()
	}
	var se *supervisor.StartError
	if errors.As(err, &se) {
		rep.LogFile, rep.LogTail = se.LogFile, string(se.LogTail)
	}
	return cmdutil.WriteJSON(ios.Out, rep)
}

// NewCmdStart builds `devkit sup start`; runF, when not nil, receives the options instead of startRun.
func NewCmdStart(f *cmdutil.Factory, runF func(context.Context, *StartOptions) error) *cobra.Command {
	opts := &StartOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use: "start [NAME...|--all]",
		Example: `  devkit sup start --all
  devkit sup start api            # starts db first if api depends on it
  devkit sup -c stack/ops.yaml start worker --json`,
		Short: "Start processes (and what they depend on), waiting until they are ready",
		Long: `Start the named processes, or all of them, in depends_on order: independent
processes start and wait for readiness concurrently, each waits only for what
it depends on. Each runs in its own session with its output appended to its
log file. A start waits for the process's ready probe (or, without one,
checks it is still alive after a short grace); a oneshot (oneshot: true) is
waited for until it exits, and counts only with exit 0 ("completed"). A
failed start exits 1 and prints the end of the process's log (only this
run's lines); its dependents are not started, independent processes are.
Starting a named process that already runs is refused (exit 1); with --all,
running processes are left alone.`,
		ValidArgsFunction: completeNames(f),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if opts.ProjectOptions, opts.Sup, opts.Names, err = bindNames(f, cmd, args); err != nil {
				return err
			}
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return runVerb(ctx, runF, startRun, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "start every process in the config that is not disabled: true")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the results as JSON")
	return cmd
}

func startRun(ctx context.Context, opts *StartOptions) error {
	sup, err := opts.Sup(true)
	if err != nil {
		return err
	}
	names, err := namesOrAll(opts.Names, opts.All, func() ([]string, error) { return sup.Config().Enabled(), nil })
	if err != nil {
		return err
	}
	results, err := sup.Start(ctx, names)
	refused := false
	if opts.JSON {
		if werr := writeStartJSON(opts.IO, results, err); werr != nil {
			return werr
		}
	}
	for _, r := range results {
		switch {
		case r.AlreadyRunning && !opts.All && slices.Contains(names, r.Name):
			refused = true
			fmt.Fprintf(opts.IO.ErrOut, "%s: already running (pid %d); not started again\n", r.Name, r.PID)
		case opts.JSON:
		default:
			printStarted(opts.IO, r)
		}
	}
	if failed, ok := reportStartFailure(opts.IO, err, opts.JSON); ok {
		return failed
	}
	if err != nil {
		return exitFor(err)
	}
	if refused {
		return cmdutil.SilentExit(cmdutil.ExitFailure)
	}
	return nil
}

// printStarted says what start did for one process.
func printStarted(io *cmdutil.IOStreams, r supervisor.StartResult) {
	if r.AlreadyRunning {
		fmt.Fprintf(io.Out, "%s: already running (pid %d)\n", r.Name, r.PID)
		return
	}
	if r.Completed {
		fmt.Fprintf(io.Out, "%s: completed (pid %d, after %.1fs)\n", r.Name, r.PID, r.ReadySeconds)
		return
	}
	fmt.Fprintf(io.Out, "%s: started (pid %d, ready after %.1fs)\n", r.Name, r.PID, r.ReadySeconds)
}

// reportStartFailure reports a process that failed to start — the error,
// and the end of its log unless the output is JSON — and returns the exit
// for it; ok is false when err is no start failure.
func reportStartFailure(io *cmdutil.IOStreams, err error, jsonOut bool) (exit error, ok bool) {
	var se *supervisor.StartError
	if !errors.As(err, &se) {
		return nil, false
	}
	failures := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		failures = joined.Unwrap()
	}
	for _, f := range failures {
		fmt.Fprintf(io.ErrOut, "devkit: %v\n", f)
		if errors.As(f, &se) && !jsonOut && !errors.Is(f, supervisor.ErrDependency) {
			printLogTail(io, se)
		}
	}
	return cmdutil.SilentExit(cmdutil.ExitFailure), true
}

// printLogTail shows the end of a failed process's log on stderr.
func printLogTail(io *cmdutil.IOStreams, se *supervisor.StartError) {
	if se.LogFile == "" {
		return
	}
	if len(se.LogTail) == 0 {
		fmt.Fprintf(io.ErrOut, "(%s is empty)\n", se.LogFile)
		return
	}
	fmt.Fprintf(io.ErrOut, "--- last lines of %s ---\n", se.LogFile)
	_, _ = io.ErrOut.Write(se.LogTail) // diagnostics on stderr: nothing to do if it fails
	if se.LogTail[len(se.LogTail)-1] != '\n' {
		fmt.Fprintln(io.ErrOut)
	}
	fmt.Fprintln(io.ErrOut, "---")
}
