package kv

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore"
)

// GetOptions are the inputs of `devkit kv get`.
type GetOptions struct {
	ClientOptions
	Key string
}

// NewCmdGet builds `devkit kv get`; runF, when not nil, receives the options instead of getRun.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{}
	cmd := &cobra.Command{
		Use:   "get KEY",
		Short: "Print the value of a key (exit 3 when it does not exist)",
		Long: `Print the value of KEY to stdout, byte for byte (a newline is added only on a terminal).
A key that does not exist exits with code 3.`,
		Example: `  devkit kv get user:1
  devkit kv get --addr 10.0.0.5:5000 config.json > config.json`,
		Args: cmdutil.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.bindClient(f, cmd)
			opts.Key = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return getRun(cmd.Context(), opts)
		},
	}
	addClientFlags(cmd, &opts.ClientOptions)
	return cmd
}

func getRun(ctx context.Context, opts *GetOptions) error {
	c, ctx, cancel, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	v, err := c.Get(ctx, []byte(opts.Key))
	if errors.Is(err, kvstore.ErrNotFound) {
		return cmdutil.Negative(fmt.Errorf("key %q not found", opts.Key))
	}
	if err != nil {
		return err
	}
	if _, err := opts.IO.Out.Write(v); err != nil {
		return err
	}
	if isTerminal(opts.IO.Out) {
		fmt.Fprintln(opts.IO.Out)
	}
	return nil
}
