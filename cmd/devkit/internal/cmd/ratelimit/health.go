package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/ratelimit/middleware"
)

// HealthOptions are the inputs of `devkit ratelimit health`.
type HealthOptions struct {
	IO    *cmdutil.IOStreams
	Store *StoreOptions
	JSON  bool
}

// NewCmdHealth builds `devkit ratelimit health`; runF, when not nil, receives the options instead of healthRun.
func NewCmdHealth(f *cmdutil.Factory, runF func(context.Context, *HealthOptions) error) *cobra.Command {
	opts := &HealthOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:     "health",
		Short:   "Ping the store (every master in a cluster); exit 3 when unreachable",
		Example: "  devkit ratelimit health --redis redis://127.0.0.1:6379\n  REDIS_URL=redis://h1:7000,h2:7001,h3:7002 devkit ratelimit health --json",
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Store = storeFrom(f, cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return healthRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print machine-readable JSON")
	return cmd
}

func healthRun(ctx context.Context, opts *HealthOptions) error {
	store, ctx, done, err := opts.Store.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	start := time.Now()
	pingErr := store.Ping(ctx)
	res := middleware.Health{OK: pingErr == nil, LatencySeconds: time.Since(start).Seconds()} // as the admin API's /health
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
