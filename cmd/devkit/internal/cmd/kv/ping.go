package kv

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// PingOptions are the inputs of `devkit kv ping`.
type PingOptions struct {
	ClientOptions
}

// NewCmdPing builds `devkit kv ping`; runF, when not nil, receives the options instead of pingRun.
func NewCmdPing(f *cmdutil.Factory, runF func(context.Context, *PingOptions) error) *cobra.Command {
	opts := &PingOptions{}
	cmd := &cobra.Command{
		Use:     "ping",
		Short:   "Check that the server answers (prints PONG)",
		Example: `  devkit kv ping && echo up`,
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.bindClient(f, cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return pingRun(cmd.Context(), opts)
		},
	}
	addClientFlags(cmd, &opts.ClientOptions)
	return cmd
}

func pingRun(ctx context.Context, opts *PingOptions) error {
	c, ctx, cancel, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintln(opts.IO.Out, "PONG")
	return err
}
