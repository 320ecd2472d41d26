package sup

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/units"
	"github.com/devkit-go/devkit/supervisor"
)

// StatusOptions are the inputs of `devkit sup status`.
type StatusOptions struct {
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup   SupervisorFunc
	Names []string
	JSON  bool
}

// NewCmdStatus builds `devkit sup status`; runF, when not nil, receives the options instead of statusRun.
func NewCmdStatus(f *cmdutil.Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use: "status [NAME...] [--json]",
		Example: `  devkit sup status
  devkit sup status api db && echo both running
  devkit sup status --json | jq '.processes[] | {name, state}'`,
		Short: "Show processes: state, PID, uptime, drift from the YAML, log file",
		Long: `Show the project and each process (or the named ones): its state, PID,
uptime, restart count, live descendants, whether the running spec differs
from the YAML (drift) and its log. States: running; stopped; exited (with
code and time); restarting (in its backoff); completed (a oneshot, or a
restart: never process, that exited 0); unhealthy (it runs but failed its
health check); unsupervised (it runs but its monitor is gone — run
'devkit sup restart NAME'); orphaned (the leader is gone, descendants live
on); stale (the record names no process of ours; cleaned); corrupt (the
record cannot be read).
Exit 0 when every process asked about is running or completed, 3 otherwise.
--json prints the versioned document described in docs/supervisor.md
(schema "` + supervisor.StatusSchema + `").`,
		ValidArgsFunction: completeNames(f),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if opts.ProjectOptions, opts.Sup, opts.Names, err = bindNames(f, cmd, args); err != nil {
				return err
			}
			return runVerb(cmd.Context(), runF, statusRun, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func statusRun(ctx context.Context, opts *StatusOptions) error {
	sup, err := opts.Sup(false)
	if err != nil {
		return err
	}
	sts, err := sup.Status(ctx, opts.Names)
	if err != nil {
		return exitFor(err)
	}
	if opts.JSON {
		if err := cmdutil.WriteJSON(opts.IO.Out, supervisor.StatusReport{Schema: supervisor.StatusSchema, Project: sup.Project(), Processes: sts}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(opts.IO.Out, "project %s\n", sup.Project())
		if err := writeStatusTable(opts, sts); err != nil {
			return err // stdout failed
		}
	}
	if !supervisor.AllRunning(sts) {
		return cmdutil.SilentExit(cmdutil.ExitNegative)
	}
	return nil
}

// writeStatusTable prints sts as a table; the error is stdout's.
func writeStatusTable(opts *StatusOptions, sts []supervisor.ProcessStatus) error {
	if len(sts) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "no processes configured or recorded")
		return nil
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tPID\tUPTIME\tCPU\tRSS\tRESTARTS\tDESCENDANTS\tDRIFT\tLOG")
	for _, st := range sts {
		pid, uptime, drift := "-", "-", "-"
		if st.PID != 0 {
			pid = fmt.Sprint(st.PID)
		}
		if st.State == supervisor.StateRunning || st.State == supervisor.StateUnsupervised {
			uptime = (time.Duration(st.UptimeSeconds * float64(time.Second))).Round(time.Second).String()
		}
		if st.Drift {
			drift = "yes"
			if !st.Configured {
				drift = "removed"
			}
		}
		logFile := st.LogFile
		if st.LogWarning != "" {
			logFile += " (!)" // the reason is printed below the table
		}
		cpu, rss := units.CPUTime(st.CPUSeconds), units.Bytes(st.RSSBytes)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", st.Name, describeState(st), pid, uptime, cpu, rss, st.Restarts, st.Descendants, drift, logFile)
	}
	err := tw.Flush()
	for _, st := range sts {
		if st.Reason != "" {
			fmt.Fprintf(opts.IO.ErrOut, "%s: %s\n", st.Name, st.Reason)
		}
		if st.LogWarning != "" {
			fmt.Fprintf(opts.IO.ErrOut, "%s: log not rotated: %s\n", st.Name, st.LogWarning)
		}
	}
	return err
}

// describeState renders the state with the exit details it implies.
func describeState(st supervisor.ProcessStatus) string {
	s := string(st.State)
	if st.State != supervisor.StateExited && st.State != supervisor.StateRestarting {
		return s
	}
	switch {
	case st.ExitCode != nil:
		s += fmt.Sprintf(" (code %d", *st.ExitCode)
	case st.ExitSignal != "":
		s += fmt.Sprintf(" (%s", st.ExitSignal)
	default:
		return s
	}
	if st.ExitedAt != nil {
		s += ", " + st.ExitedAt.Local().Format(time.DateTime)
	}
	return s + ")"
}
