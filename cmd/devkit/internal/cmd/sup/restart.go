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
	IO      *cmdutil.IOStreams
	Sup     Factory
	Names   []string
	Force   bool
	Timeout time.Duration
	JSON    bool
}

func newRestartCmd(ios *cmdutil.IOStreams, sup Factory) *cobra.Command {
	opts := &RestartOptions{IO: ios, Sup: sup}
	cmd := &cobra.Command{
		Use: "restart NAME...",
		Example: `  devkit sup restart api
  devkit sup restart api worker --timeout 5s --force`,
		Short:             "Stop processes (dependents first) and start them again",
		Args:              cmdutil.MinimumNArgs(1),
		ValidArgsFunction: completeNames(sup),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Names = args
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return runRestart(ctx, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "kill what outlives the stop timeout")
	addTimeoutFlag(cmd, &opts.Timeout)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the start results as JSON")
	return cmd
}

func runRestart(ctx context.Context, opts *RestartOptions) error {
	if err := checkNames(opts.Names); err != nil {
		return err
	}
	sup, err := opts.Sup(true)
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
