package ratelimit

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// InfoOptions are the inputs of `devkit ratelimit info`.
type InfoOptions struct {
	IO      *cmdutil.IOStreams
	Store   *StoreOptions
	Key     string
	JSON    bool
	Request RequestOptions
}

// NewCmdInfo builds `devkit ratelimit info`; runF, when not nil, receives the options instead of infoRun.
func NewCmdInfo(f *cmdutil.Factory, runF func(context.Context, *InfoOptions) error) *cobra.Command {
	opts := &InfoOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "info (KEY | --policy FILE --method M --path P [--header H]...)",
		Short: "Show what the store holds for KEY or a described request; exit 3 when nothing",
		Long: `info shows the stored state of KEY without changing it. With --policy, the key
is the one the request described by --method, --path, --header and --ip would
get from the policy (as the proxy would compute it).
Exit status: 0 state found, 3 none (or the request is not limited), 2 usage, 1 store error.`,
		Example: "  devkit ratelimit info 'login|ip=203.0.113.9'\n  devkit ratelimit info api:acme --json --redis redis://127.0.0.1:6379\n" +
			"  devkit ratelimit info --policy examples/policies/saas.yaml --method POST --path /AUTH/Login --ip 203.0.113.9",
		Args: cmdutil.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Store = storeFrom(f, cmd)
			switch {
			case opts.Request.Policy != "" && len(args) > 0:
				return cmdutil.UsageErrorf("give KEY or --policy with a request, not both")
			case opts.Request.Policy != "":
			case len(args) == 1:
				opts.Key = args[0]
			default:
				return cmdutil.UsageErrorf("give KEY, or --policy with a request\nRun '%s --help' for usage.", cmd.CommandPath())
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return infoRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print machine-readable JSON")
	opts.Request.addFlags(cmd)
	return cmd
}

func infoRun(ctx context.Context, opts *InfoOptions) error {
	if opts.Request.Policy != "" {
		d, limited, err := opts.Request.decide()
		if err != nil {
			return err
		}
		if !limited {
			fmt.Fprintln(opts.IO.ErrOut, describe(d, opts.Request.Method, opts.Request.Path))
			return cmdutil.SilentExit(cmdutil.ExitNegative)
		}
		opts.Key = d.Request.Key
	}
	store, ctx, done, err := opts.Store.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	info, err := store.Info(ctx, opts.Key)
	if err != nil {
		return err
	}
	if opts.JSON {
		err = cmdutil.WriteJSON(opts.IO.Out, info) // the library's schema: ratelimit.KeyInfo
	} else if info.Exists {
		blocked := "no"
		if info.BlockedFor > 0 {
			blocked = "for " + human(info.BlockedFor)
		}
		_, err = fmt.Fprintf(opts.IO.Out, "key:      %s\nredis:    %s\nhits:     %d\nexpires:  in %s\nblocked:  %s\n",
			info.Key, info.StorageKey, info.Hits, human(info.TTL), blocked)
	} else {
		_, err = fmt.Fprintf(opts.IO.Out, "%s: no state (never limited, or expired)\n", opts.Key)
	}
	if err != nil {
		return err
	}
	if !info.Exists {
		return cmdutil.SilentExit(cmdutil.ExitNegative)
	}
	return nil
}
