package sup

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// ScaleOptions are the inputs of `devkit sup scale`.
type ScaleOptions struct {
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup      SupervisorFunc
	Name     string
	Replicas int
	Force    bool
	Timeout  time.Duration
	JSON     bool
}

// NewCmdScale builds `devkit sup scale`; runF, when not nil, receives the options instead of scaleRun.
func NewCmdScale(f *cmdutil.Factory, runF func(context.Context, *ScaleOptions) error) *cobra.Command {
	opts := &ScaleOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use: "scale NAME N",
		Example: `  devkit sup scale web 4     # start web.3 and web.4 beside web.1 and web.2
  devkit sup scale web 1     # stop web.2 … (highest first)`,
		Short: "Run N replicas of a process declared with replicas:",
		Long: `Run N replicas of the replica set NAME (a process declared with replicas:):
start NAME.1 … NAME.N that do not run, each with its own record, log and
PORT (the YAML's PORT + i - 1), and stop the recorded replicas numbered
above N. The count holds until reload or start --all apply the YAML's
replicas: again; change replicas: to keep it.`,
		Args:              cmdutil.ExactArgs(2),
		ValidArgsFunction: completeNames(f),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 0 {
				return cmdutil.UsageErrorf("N: %q is not a number of replicas (0 or more)", args[1])
			}
			opts.Replicas = n
			var names []string
			if opts.ProjectOptions, opts.Sup, names, err = bindNames(f, cmd, args[:1]); err != nil {
				return err
			}
			opts.Name = names[0]
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			return runVerb(ctx, runF, scaleRun, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "kill replicas that outlive the stop timeout")
	addTimeoutFlag(cmd, &opts.Timeout)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print what was started and stopped as JSON")
	return cmd
}

// scaleReport is `scale --json`.
type scaleReport struct {
	Schema string `json:"schema"`
	supervisor.ScaleResult
	Error string `json:"error,omitempty"`
}

func scaleRun(ctx context.Context, opts *ScaleOptions) error {
	sup, err := opts.Sup(true)
	if err != nil {
		return err
	}
	res, err := sup.Scale(ctx, opts.Name, opts.Replicas, supervisor.StopOptions{Force: opts.Force, Timeout: opts.Timeout})
	if opts.JSON {
		rep := scaleReport{Schema: "devkit.sup.scale/v1", ScaleResult: res}
		if err != nil {
			rep.Error = err.Error()
		}
		if werr := cmdutil.WriteJSON(opts.IO.Out, rep); werr != nil {
			return werr
		}
		res = supervisor.ScaleResult{}
	}
	for _, r := range res.Stopped {
		fmt.Fprintf(opts.IO.Out, "%s: %s (pid %d)\n", r.Name, r.Outcome, r.PID)
	}
	for _, r := range res.Started {
		printStarted(opts.IO, r)
	}
	if failed, ok := reportStartFailure(opts.IO, err, opts.JSON); ok {
		return failed
	}
	return exitFor(err)
}
