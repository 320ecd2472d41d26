package sup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// LogsOptions are the inputs of `devkit sup logs`.
type LogsOptions struct {
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup    SupervisorFunc
	Names  []string
	Lines  int
	Follow bool
	Since  string // a duration back from now, or an RFC 3339 time
	Grep   string // a regular expression (RE2) lines must match
	// now is the clock --since counts back from (time.Now when nil).
	now func() time.Time
}

// NewCmdLogs builds `devkit sup logs`; runF, when not nil, receives the options instead of logsRun.
func NewCmdLogs(f *cmdutil.Factory, runF func(context.Context, *LogsOptions) error) *cobra.Command {
	opts := &LogsOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use: "logs [NAME...] [-n N] [-f] [--since DURATION|TIME] [--grep REGEX]",
		Example: `  devkit sup logs api
  devkit sup logs api -n 100
  devkit sup logs -f              # the whole stack, each line prefixed with its name (Ctrl-C to stop)
  devkit sup logs api worker -f
  devkit sup logs api --since 10m --grep 'error|panic'`,
		Short: "Print the end of processes' logs; -f keeps following them",
		Long: `Print the last N lines of a process's log, reading from the end of the
file. With no name, or several, the logs of the project's processes are
merged: the last N lines of each (one after the other), every line
prefixed with "name | ". With --follow, keep printing what is appended
(merged logs interleave as lines arrive), across truncation and rotation
(rename-and-create, the monitor's own and logrotate's default, where the
renamed file is still read while it is written to) — until interrupted
(SIGINT or SIGTERM end it cleanly, exit 0). When the live log holds
fewer than N lines, the rotated files (NAME.log.1, ...) are read too.

--grep keeps the lines a regular expression (RE2 syntax) matches; -n then
counts matching lines. --since keeps the lines written in the last
DURATION (10m, 1h30m) or since an RFC 3339 TIME; it reads the lines' time
stamps, so it needs log_timestamps: true, and prints every such line unless
-n is given. Both apply to -f as well.`,
		ValidArgsFunction: completeNames(f),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if opts.ProjectOptions, opts.Sup, opts.Names, err = bindNames(f, cmd, args); err != nil {
				return err
			}
			if opts.Lines < 0 {
				return cmdutil.UsageErrorf("--lines must not be negative")
			}
			if opts.Since != "" && !cmd.Flags().Changed("lines") {
				opts.Lines = math.MaxInt
			}
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return runVerb(ctx, runF, logsRun, opts)
		},
	}
	cmd.Flags().IntVarP(&opts.Lines, "lines", "n", 20, "number of lines to print")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing what is appended")
	cmd.Flags().StringVar(&opts.Since, "since", "", "only lines written in the last `DURATION`, or since an RFC 3339 TIME (needs log_timestamps)")
	cmd.Flags().StringVar(&opts.Grep, "grep", "", "only lines that match the regular expression `REGEX` (RE2)")
	return cmd
}

// logFilter turns --since and --grep into a filter; a bad value is a
// usage error.
func (opts *LogsOptions) logFilter() (supervisor.LogFilter, error) {
	var filt supervisor.LogFilter
	if opts.Grep != "" {
		re, err := regexp.Compile(opts.Grep)
		if err != nil {
			return filt, cmdutil.UsageErrorf("--grep: %v", err)
		}
		filt.Grep = re
	}
	if opts.Since != "" {
		now := time.Now
		if opts.now != nil {
			now = opts.now
		}
		if d, err := time.ParseDuration(opts.Since); err == nil && d >= 0 {
			filt.Since = now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, opts.Since); err == nil {
			filt.Since = t
		} else {
			return filt, cmdutil.UsageErrorf("--since %q is neither a duration (10m) nor an RFC 3339 time (2006-01-02T15:04:05Z)", opts.Since)
		}
	}
	return filt, nil
}

func logsRun(ctx context.Context, opts *LogsOptions) error {
	filt, err := opts.logFilter()
	if err != nil {
		return err
	}
	sup, err := opts.Sup(false)
	if err != nil {
		return err
	}
	if len(opts.Names) != 1 {
		return exitFor(sup.MergedLogs(ctx, opts.Names, opts.Lines, opts.Follow, filt, opts.IO.Out))
	}
	name := opts.Names[0]
	if opts.Follow {
		err = sup.FollowLog(ctx, name, opts.Lines, filt, opts.IO.Out)
	} else {
		err = sup.TailLog(name, opts.Lines, filt, opts.IO.Out)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return cmdutil.Negative(fmt.Errorf("%s has no log yet: %w", name, err))
	}
	return exitFor(err)
}
