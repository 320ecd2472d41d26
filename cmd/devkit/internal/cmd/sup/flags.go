package sup

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// addTimeoutFlag registers --timeout on cmd.
func addTimeoutFlag(cmd *cobra.Command, d *time.Duration) {
	cmdutil.DurationVar(cmd.Flags(), d, "timeout", 0, "override stop_timeout (e.g. 5s; a plain number means seconds)")
}

// interruptible returns a context that ends on SIGINT or SIGTERM, so that
// an interrupted start cleans up what it half-started and logs -f ends
// cleanly.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// completeNames completes process names from the config and the records.
func completeNames(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		s, err := newSupervisor(f, projectFrom(f, cmd), false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, _ := s.Names()
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// bindProject is what every verb reads from sup's persistent flags and the
// environment: the project, and the supervisor it opens lazily.
func bindProject(f *cmdutil.Factory, cmd *cobra.Command) (ProjectOptions, SupervisorFunc) {
	p := projectFrom(f, cmd)
	return p, p.opener(f)
}

// bindNames is bindProject for a verb over process names, which are
// checked first: a hostile name is a usage error before anything is opened
// (and before runF, so the argv tests see it).
func bindNames(f *cmdutil.Factory, cmd *cobra.Command, args []string) (ProjectOptions, SupervisorFunc, []string, error) {
	if err := checkNames(args); err != nil {
		return ProjectOptions{}, nil, nil, err
	}
	p, sup := bindProject(f, cmd)
	return p, sup, args, nil
}

// runVerb hands opts to runF — the seam through which the argv tests see
// what a command line gives — or, without one, to the verb's run.
func runVerb[O any](ctx context.Context, runF, run func(context.Context, *O) error, opts *O) error {
	if runF == nil {
		runF = run
	}
	return runF(ctx, opts)
}
