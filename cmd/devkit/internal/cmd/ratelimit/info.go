package ratelimit

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// InfoOptions are the inputs of `devkit ratelimit info`.
type InfoOptions struct {
	IO    *cmdutil.IOStreams
	Store *StoreOptions
	Ctx   context.Context
	Key   string
	JSON  bool
}

func newInfoCmd(ios *cmdutil.IOStreams, so *StoreOptions) *cobra.Command {
	opts := &InfoOptions{IO: ios, Store: so}
	cmd := &cobra.Command{
		Use:     "info KEY",
		Short:   "Show what the store holds for KEY; exit 3 when nothing",
		Example: "  devkit ratelimit info 'login|ip=203.0.113.9'\n  devkit ratelimit info api:acme --json --redis redis://127.0.0.1:6379",
		Args:    cmdutil.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Key, opts.Ctx = args[0], cmd.Context()
			return runInfo(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print machine-readable JSON")
	return cmd
}

// InfoResult is the JSON output of info.
type InfoResult struct {
	Key        string  `json:"key"`
	Exists     bool    `json:"exists"`
	Hits       int64   `json:"hits"`
	TTL        float64 `json:"ttl_seconds"`
	BlockedFor float64 `json:"blocked_for_seconds"`
}

func runInfo(opts *InfoOptions) error {
	store, ctx, done, err := opts.Store.connect(opts.Ctx)
	if err != nil {
		return err
	}
	defer done()
	info, err := store.Info(ctx, opts.Key)
	if err != nil {
		return err
	}
	if opts.JSON {
		err = cmdutil.WriteJSON(opts.IO.Out, InfoResult{Key: info.Key, Exists: info.Exists, Hits: info.Hits,
			TTL: secs(info.TTL), BlockedFor: secs(info.BlockedFor)})
	} else if info.Exists {
		blocked := "no"
		if info.BlockedFor > 0 {
			blocked = "for " + human(info.BlockedFor)
		}
		_, err = fmt.Fprintf(opts.IO.Out, "key:      %s\nredis:    %s\nhits:     %d\nexpires:  in %s\nblocked:  %s\n",
			info.Key, store.Key(info.Key), info.Hits, human(info.TTL), blocked)
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
