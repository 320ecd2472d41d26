package sup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// LogsOptions are the inputs of `devkit sup logs`.
type LogsOptions struct {
	IO     *cmdutil.IOStreams
	Sup    Factory
	Name   string
	Lines  int
	Follow bool
}

func newLogsCmd(ios *cmdutil.IOStreams, sup Factory) *cobra.Command {
	opts := &LogsOptions{IO: ios, Sup: sup}
	cmd := &cobra.Command{
		Use: "logs NAME [-n N] [-f]",
		Example: `  devkit sup logs api
  devkit sup logs api -n 100
  devkit sup logs api -f          # Ctrl-C to stop`,
		Short: "Print the end of a process's log; -f keeps following it",
		Long: `Print the last N lines of a process's log, reading from the end of the
file. With --follow, keep printing what is appended, across truncation and
rotation, until interrupted (SIGINT or SIGTERM end it cleanly, exit 0).`,
		Args:              cmdutil.ExactArgs(1),
		ValidArgsFunction: completeNames(sup),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return runLogs(ctx, opts)
		},
	}
	cmd.Flags().IntVarP(&opts.Lines, "lines", "n", 20, "number of lines to print")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing what is appended")
	return cmd
}

func runLogs(ctx context.Context, opts *LogsOptions) error {
	if err := checkNames([]string{opts.Name}); err != nil {
		return err
	}
	if opts.Lines < 0 {
		return cmdutil.UsageErrorf("--lines must not be negative")
	}
	sup, err := opts.Sup(false)
	if err != nil {
		return err
	}
	if opts.Follow {
		err = sup.FollowLog(ctx, opts.Name, opts.Lines, opts.IO.Out)
	} else {
		err = sup.TailLog(opts.Name, opts.Lines, opts.IO.Out)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return cmdutil.Negative(fmt.Errorf("%s has no log yet: %w", opts.Name, err))
	}
	return exitFor(err)
}
