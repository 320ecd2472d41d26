package sup

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// secondsOrDuration is a duration flag that also takes a plain number of
// seconds, as stop_timeout does in the YAML: --timeout 5 and --timeout 5s agree.
type secondsOrDuration struct{ d *time.Duration }

func (f secondsOrDuration) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f secondsOrDuration) Set(s string) error {
	if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 0 {
		*f.d = time.Duration(n * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("%q is not a duration (e.g. 5s, 500ms, or 5 for seconds)", s)
	}
	*f.d = d
	return nil
}

func (f secondsOrDuration) Type() string { return "duration" }

// addTimeoutFlag registers --timeout on cmd.
func addTimeoutFlag(cmd *cobra.Command, d *time.Duration) {
	cmd.Flags().Var(secondsOrDuration{d}, "timeout", "override stop_timeout (e.g. 5s; a plain number means seconds)")
}

// interruptible returns a context that ends on SIGINT or SIGTERM, so that
// an interrupted start cleans up what it half-started and logs -f ends
// cleanly.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// completeNames completes process names from the config and the records.
func completeNames(sup Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		s, err := sup(false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, _ := s.Names()
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
