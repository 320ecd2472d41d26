package kv

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// DelOptions are the inputs of `devkit kv del`.
type DelOptions struct {
	ClientOptions
	Keys []string
}

// NewCmdDel builds `devkit kv del`; runF, when not nil, receives the options instead of delRun.
func NewCmdDel(f *cmdutil.Factory, runF func(context.Context, *DelOptions) error) *cobra.Command {
	opts := &DelOptions{}
	cmd := &cobra.Command{
		Use:   "del KEY...",
		Short: "Delete keys; print how many existed (exit 3 when one did not)",
		Long: `Delete every KEY and print the number of keys that existed.
When a key did not exist the others are still deleted, its name goes to stderr,
and the command exits with code 3.`,
		Example: `  devkit kv del user:1 user:2`,
		Args:    cmdutil.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.bindClient(f, cmd)
			opts.Keys = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return delRun(cmd.Context(), opts)
		},
	}
	addClientFlags(cmd, &opts.ClientOptions)
	return cmd
}

func delRun(ctx context.Context, opts *DelOptions) error {
	c, ctx, cancel, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	var missing []string
	deleted := 0
	for _, key := range opts.Keys {
		existed, err := c.Delete(ctx, []byte(key))
		if err != nil {
			return fmt.Errorf("delete %q: %w", key, err)
		}
		if existed {
			deleted++
		} else {
			missing = append(missing, fmt.Sprintf("%q", key))
		}
	}
	fmt.Fprintln(opts.IO.Out, deleted)
	if len(missing) > 0 {
		return cmdutil.Negative(fmt.Errorf("not found: %s", strings.Join(missing, ", ")))
	}
	return nil
}
