package sup

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// ReloadOptions are the inputs of `devkit sup reload`.
type ReloadOptions struct {
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup    SupervisorFunc
	DryRun bool
	JSON   bool
}

// reloadReport is the JSON document of `sup reload --json`.
type reloadReport struct {
	Schema string                  `json:"schema"`
	DryRun bool                    `json:"dry_run"`
	Steps  []supervisor.ReloadStep `json:"steps"`
	Error  string                  `json:"error,omitempty"`
}

// NewCmdReload builds `devkit sup reload`; runF, when not nil, receives the options instead of reloadRun.
func NewCmdReload(f *cmdutil.Factory, runF func(context.Context, *ReloadOptions) error) *cobra.Command {
	opts := &ReloadOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use: "reload [--dry-run] [--json]",
		Example: `  devkit sup reload --dry-run
  devkit sup reload
  devkit sup reload --json | jq '.steps[] | select(.action != "none")'`,
		Short: "Apply YAML changes: restart what changed, stop what was removed",
		Long: `Compare each process's spec digest with the one applied, over the YAML's
processes and every recorded one:

  removed from the YAML and running  -> stop
  unchanged                          -> none
  changed and running                -> restart
  changed and stopped                -> record (the new digest; nothing starts)
  added (never applied)              -> start   (printed "start  added")

A running dependent that declares restart_with_dependencies: true restarts
when one of its dependencies restarts. Reload acts on the current project only.

--dry-run prints exactly the steps a real run would take, and changes nothing.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ProjectOptions, opts.Sup = bindProject(f, cmd)
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return runVerb(ctx, runF, reloadRun, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the steps without taking them")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func reloadRun(ctx context.Context, opts *ReloadOptions) error {
	sup, err := opts.Sup(true)
	if err != nil {
		return err
	}
	var steps []supervisor.ReloadStep
	if opts.DryRun {
		steps, err = sup.ReloadPlan(ctx)
	} else {
		steps, err = sup.Reload(ctx)
	}
	if opts.JSON {
		rep := reloadReport{Schema: "devkit.sup.reload/v1", DryRun: opts.DryRun, Steps: steps}
		if rep.Steps == nil {
			rep.Steps = []supervisor.ReloadStep{}
		}
		if err != nil {
			rep.Error = err.Error()
		}
		if werr := cmdutil.WriteJSON(opts.IO.Out, rep); werr != nil {
			return werr
		}
	} else {
		tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
		for _, s := range steps {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Action, s.Reason)
		}
		if werr := tw.Flush(); werr != nil { // stdout failed, as the JSON branch reports it
			return werr
		}
	}
	var se *supervisor.StartError
	if errors.As(err, &se) {
		fmt.Fprintf(opts.IO.ErrOut, "devkit: %v\n", err)
		printLogTail(opts.IO, se)
		return cmdutil.SilentExit(cmdutil.ExitFailure)
	}
	return exitFor(err)
}
