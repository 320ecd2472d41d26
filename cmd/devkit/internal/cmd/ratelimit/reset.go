package ratelimit

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/ratelimit/middleware"
)

// ResetOptions are the inputs of `devkit ratelimit reset`.
type ResetOptions struct {
	IO    *cmdutil.IOStreams
	Store *StoreOptions
	Key   string
	JSON  bool
}

// NewCmdReset builds `devkit ratelimit reset`; runF, when not nil, receives the options instead of resetRun.
func NewCmdReset(f *cmdutil.Factory, runF func(context.Context, *ResetOptions) error) *cobra.Command {
	opts := &ResetOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:     "reset KEY",
		Short:   "Delete every limit's state for KEY; exit 3 when there was none",
		Example: "  devkit ratelimit reset 'login|ip=203.0.113.9'",
		Args:    cmdutil.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Store = storeFrom(f, cmd)
			opts.Key = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return resetRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print machine-readable JSON")
	return cmd
}

func resetRun(ctx context.Context, opts *ResetOptions) error {
	store, ctx, done, err := opts.Store.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	had, err := store.Reset(ctx, opts.Key)
	if err != nil {
		return err
	}
	switch {
	case opts.JSON:
		err = cmdutil.WriteJSON(opts.IO.Out, middleware.ResetJSON{Key: opts.Key, Existed: had}) // as the admin API's /reset
	case had:
		_, err = fmt.Fprintf(opts.IO.Out, "reset %s\n", opts.Key)
	default:
		_, err = fmt.Fprintf(opts.IO.Out, "%s: nothing to reset\n", opts.Key)
	}
	if err != nil {
		return err
	}
	if !had {
		return cmdutil.SilentExit(cmdutil.ExitNegative)
	}
	return nil
}
