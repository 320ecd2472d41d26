package sup

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// RestartOptions are the inputs of `devkit sup restart`.
type RestartOptions struct {
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup     SupervisorFunc
	Names   []string
	Force   bool
	Timeout time.Duration
	JSON    bool
}

// NewCmdRestart builds `devkit sup restart`; runF, when not nil, receives the options instead of restartRun.
func NewCmdRestart(f *cmdutil.Factory, runF func(context.Context, *RestartOptions) error) *cobra.Command {
	opts := &RestartOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use: "restart NAME...",
		Example: `  devkit sup restart api
  devkit sup restart api worker --timeout 5s --force`,
		Short:             "Stop processes (dependents first) and start them again",
		Args:              cmdutil.MinimumNArgs(1),
		ValidArgsFunction: completeNames(f),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if opts.ProjectOptions, opts.Sup, opts.Names, err = bindNames(f, cmd, args); err != nil {
				return err
			}
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return runVerb(ctx, runF, restartRun, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "kill what outlives the stop timeout")
	addTimeoutFlag(cmd, &opts.Timeout)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the start results as JSON")
	return cmd
}

func restartRun(ctx context.Context, opts *RestartOptions) error {
	// Without a usable YAML (a variable this shell lacks) a process is
	// restarted from the spec its record keeps.
	sup, err := opts.Sup(false)
	if err != nil {
		return err
	}
	results, err := sup.Restart(ctx, opts.Names, supervisor.StopOptions{Force: opts.Force, Timeout: opts.Timeout})
	if opts.JSON {
		if werr := writeStartJSON(opts.IO, results, err); werr != nil {
			return werr
		}
		results = nil
	}
	for _, r := range results {
		printStarted(opts.IO, r)
	}
	if failed, ok := reportStartFailure(opts.IO, err, opts.JSON); ok {
		return failed
	}
	return exitFor(err)
}
