package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// HealthOptions are the inputs of `devkit ratelimit health`.
type HealthOptions struct {
	IO    *cmdutil.IOStreams
	Store *StoreOptions
	Ctx   context.Context
	JSON  bool
}

func newHealthCmd(ios *cmdutil.IOStreams, so *StoreOptions) *cobra.Command {
	opts := &HealthOptions{IO: ios, Store: so}
	cmd := &cobra.Command{
		Use:     "health",
		Short:   "Ping the store (every master in a cluster); exit 3 when unreachable",
		Example: "  devkit ratelimit health --redis redis://127.0.0.1:6379\n  REDIS_URL=redis://h1:7000,h2:7001,h3:7002 devkit ratelimit health --json",
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx = cmd.Context()
			return runHealth(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print machine-readable JSON")
	return cmd
}

// HealthResult is the JSON output of health.
type HealthResult struct {
	OK             bool    `json:"ok"`
	LatencySeconds float64 `json:"latency_seconds"`
	Error          string  `json:"error,omitempty"`
}

func runHealth(opts *HealthOptions) error {
	store, ctx, done, err := opts.Store.connect(opts.Ctx)
	if err != nil {
		return err
	}
	defer done()
	start := time.Now()
	pingErr := store.Ping(ctx)
	res := HealthResult{OK: pingErr == nil, LatencySeconds: time.Since(start).Seconds()}
	if pingErr != nil {
		res.Error = pingErr.Error()
	}
	switch {
	case opts.JSON:
		err = cmdutil.WriteJSON(opts.IO.Out, res)
	case res.OK:
		_, err = fmt.Fprintf(opts.IO.Out, "ok: store answered in %.3f ms\n", res.LatencySeconds*1000)
	default:
		_, err = fmt.Fprintf(opts.IO.Out, "unreachable: %s\n", res.Error)
	}
	if err != nil {
		return err
	}
	if !res.OK {
		return cmdutil.SilentExit(cmdutil.ExitNegative)
	}
	return nil
}
