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
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup    SupervisorFunc
	Names  []string
	Lines  int
	Follow bool
}

// NewCmdLogs builds `devkit sup logs`; runF, when not nil, receives the options instead of logsRun.
func NewCmdLogs(f *cmdutil.Factory, runF func(context.Context, *LogsOptions) error) *cobra.Command {
	opts := &LogsOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use: "logs [NAME...] [-n N] [-f]",
		Example: `  devkit sup logs api
  devkit sup logs api -n 100
  devkit sup logs -f              # the whole stack, each line prefixed with its name (Ctrl-C to stop)
  devkit sup logs api worker -f`,
		Short: "Print the end of processes' logs; -f keeps following them",
		Long: `Print the last N lines of a process's log, reading from the end of the
file. With no name, or several, the logs of the project's processes are
merged: the last N lines of each (one after the other), every line
prefixed with "name | ". With --follow, keep printing what is appended
(merged logs interleave as lines arrive), across truncation and rotation —
copy-truncate, and rename-and-create (logrotate's default), where the
renamed file is still read while it is written to — until interrupted
(SIGINT or SIGTERM end it cleanly, exit 0).`,
		ValidArgsFunction: completeNames(f),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if opts.ProjectOptions, opts.Sup, opts.Names, err = bindNames(f, cmd, args); err != nil {
				return err
			}
			if opts.Lines < 0 {
				return cmdutil.UsageErrorf("--lines must not be negative")
			}
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return runVerb(ctx, runF, logsRun, opts)
		},
	}
	cmd.Flags().IntVarP(&opts.Lines, "lines", "n", 20, "number of lines to print")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing what is appended")
	return cmd
}

func logsRun(ctx context.Context, opts *LogsOptions) error {
	sup, err := opts.Sup(false)
	if err != nil {
		return err
	}
	if len(opts.Names) != 1 {
		return exitFor(sup.MergedLogs(ctx, opts.Names, opts.Lines, opts.Follow, opts.IO.Out))
	}
	name := opts.Names[0]
	if opts.Follow {
		err = sup.FollowLog(ctx, name, opts.Lines, opts.IO.Out)
	} else {
		err = sup.TailLog(name, opts.Lines, opts.IO.Out)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return cmdutil.Negative(fmt.Errorf("%s has no log yet: %w", name, err))
	}
	return exitFor(err)
}
