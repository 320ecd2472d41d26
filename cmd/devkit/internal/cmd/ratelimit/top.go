package ratelimit

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	rl "github.com/devkit-go/devkit/ratelimit"
)

// TopOptions are the inputs of `devkit ratelimit top`.
type TopOptions struct {
	IO    *cmdutil.IOStreams
	Store *StoreOptions
	N     int
	JSON  bool
}

// NewCmdTop builds `devkit ratelimit top`; runF, when not nil, receives the options instead of topRun.
func NewCmdTop(f *cmdutil.Factory, runF func(context.Context, *TopOptions) error) *cobra.Command {
	opts := &TopOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:     "top",
		Short:   "List the identities with the most hits (every master in a cluster)",
		Example: "  devkit ratelimit top -n 20\n  devkit ratelimit top --json --redis redis://h1:7000,h2:7001,h3:7002",
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Store = storeFrom(f, cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return topRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVarP(&opts.N, "n", "n", 10, "how many to list")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print machine-readable JSON")
	return cmd
}

func topRun(ctx context.Context, opts *TopOptions) error {
	if opts.N < 1 {
		return cmdutil.UsageErrorf("-n must be at least 1, got %d", opts.N)
	}
	store, ctx, done, err := opts.Store.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	top, err := store.Top(ctx, opts.N)
	if err != nil {
		return err
	}
	if opts.JSON {
		if top == nil {
			top = []rl.Consumer{} // [], not null
		}
		return cmdutil.WriteJSON(opts.IO.Out, top) // the library's schema: ratelimit.Consumer
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HITS\tEXPIRES IN\tKEY")
	for _, c := range top {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", c.Hits, human(c.TTL), c.Key)
	}
	return tw.Flush()
}
