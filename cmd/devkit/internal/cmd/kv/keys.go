package kv

import (
	"context"
	"encoding/base64"
	"fmt"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore"
)

// KeysOptions are the inputs of `devkit kv keys`.
type KeysOptions struct {
	ClientOptions
	Prefix string
	Limit  int // 0: every key
	JSON   bool
	// Base64 prints every key base64-encoded (standard, padded): the way to
	// list binary keys one a line or in JSON.
	Base64 bool
}

// NewCmdKeys builds `devkit kv keys`; runF, when not nil, receives the options instead of keysRun.
func NewCmdKeys(f *cmdutil.Factory, runF func(context.Context, *KeysOptions) error) *cobra.Command {
	opts := &KeysOptions{}
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "List keys in byte order, one a line",
		Long: `List keys in byte order, one a line, byte for byte.

--json prints a JSON array of strings; a key that is not valid UTF-8 cannot be
one without being changed, so it makes the command fail and name --base64.
--base64 prints every key base64-encoded (standard, padded), one a line or as
the JSON array: binary-safe, and safe for keys holding newlines.`,
		Example: `  devkit kv keys --prefix user: --limit 10
  devkit kv keys --json | jq length
  devkit kv keys --base64 --json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.bindClient(f, cmd)
			if opts.Limit < 0 {
				return cmdutil.UsageErrorf("--limit %d: want 0 (no limit) or more", opts.Limit)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return keysRun(cmd.Context(), opts)
		},
	}
	addClientFlags(cmd, &opts.ClientOptions)
	cmd.Flags().StringVar(&opts.Prefix, "prefix", "", "only keys that start with `P`")
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "at most `N` keys (0: all)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array of keys")
	cmd.Flags().BoolVar(&opts.Base64, "base64", false, "print keys base64-encoded (binary-safe)")
	return cmd
}

func keysRun(ctx context.Context, opts *KeysOptions) error {
	c, ctx, cancel, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	keys := []string{}
	var after []byte
	for opts.Limit == 0 || len(keys) < opts.Limit {
		want := 0 // the server's page size
		if opts.Limit > 0 {
			want = opts.Limit - len(keys)
		}
		page, err := c.Keys(ctx, kvstore.ScanOptions{Prefix: []byte(opts.Prefix), After: after, Limit: want})
		if err != nil {
			return err
		}
		for _, k := range page.Keys {
			text := string(k)
			switch {
			case opts.Base64:
				text = base64.StdEncoding.EncodeToString(k)
			case opts.JSON && !utf8.Valid(k):
				return fmt.Errorf("key %q is not valid UTF-8 and cannot be a JSON string unchanged: list keys with --base64 --json", k)
			}
			if !opts.JSON {
				if _, err := fmt.Fprintf(opts.IO.Out, "%s\n", text); err != nil {
					return err
				}
			}
			keys = append(keys, text)
		}
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, keys)
	}
	return nil
}
