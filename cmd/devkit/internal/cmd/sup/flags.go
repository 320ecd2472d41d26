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
