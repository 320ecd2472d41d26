package kv

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// SetOptions are the inputs of `devkit kv set`.
type SetOptions struct {
	ClientOptions
	Key   string
	Value string // "-" reads the value from IO.In
}

// NewCmdSet builds `devkit kv set`; runF, when not nil, receives the options instead of setRun.
func NewCmdSet(f *cmdutil.Factory, runF func(context.Context, *SetOptions) error) *cobra.Command {
	opts := &SetOptions{}
	cmd := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Store a value (VALUE - reads it from stdin)",
		Long: `Store VALUE under KEY. With VALUE "-" the value is read from stdin, byte for byte.
The command returns once the server acknowledged the write under its sync policy.`,
		Example: `  devkit kv set user:1 alice
  devkit kv set config.json - < config.json`,
		Args: cmdutil.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.bindClient(f, cmd)
			opts.Key, opts.Value = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return setRun(cmd.Context(), opts)
		},
	}
	addClientFlags(cmd, &opts.ClientOptions)
	return cmd
}

func setRun(ctx context.Context, opts *SetOptions) error {
	value := []byte(opts.Value)
	if opts.Value == "-" {
		var err error
		if value, err = io.ReadAll(opts.IO.In); err != nil {
			return fmt.Errorf("read the value from stdin: %w", err)
		}
	}
	c, ctx, cancel, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	return c.Set(ctx, []byte(opts.Key), value)
}
