// Package top implements `devkit top`, the terminal view of a stack:
// processes, the selected process's log, the rate limiter and the KV
// store, refreshed every tick from the live snapshot layer.
package top

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd/sup"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
	"github.com/devkit-go/devkit/supervisor"
)

// Options are the inputs of `devkit top`.
type Options struct {
	IO *cmdutil.IOStreams
	// Open opens the project's supervisor.
	Open func() (*supervisor.Supervisor, error)
	// Sources overrides: flags win over what the YAML says.
	KVURL, KVToken, GatewayURL, GatewayToken string
	Interval                                 time.Duration
	Once, JSON, ReadOnly                     bool
	// NoColor is true when NO_COLOR is set and not empty (no-color.org).
	NoColor bool
}

// NewCmd builds `devkit top`; runF, when not nil, receives the options instead of run.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "top [-c ops.yaml] [--once --json]",
		Short: "Watch the stack live in the terminal: processes, logs, rate limits, the KV store",
		Long: `devkit top shows the stack of a sup project (found as 'devkit sup' finds it:
-c, --project, $DEVKIT_SUP_CONFIG, the same home) live, every --interval:

  processes   state, PID, CPU %, resident memory, restarts, health, uptime
  log         the selected process's log, following rotation
  ratelimit   decisions and denials per second per rule, top identities,
              the store's latency and circuit breakers (the gateway's admin API)
  kv          operations per second, p99 latency, keys, memory, WAL, fsyncs/s
              (the KV server's /metrics)

The KV server and the gateway are found in the YAML (a process running
'kv serve' gives its --http address, one running 'ratelimit proxy' its
--admin address); --kv and --gateway name them instead. top only reads:
opening and quitting it changes nothing. Actions (restart, stop, start,
reload) ask for confirmation first; --read-only turns them off.

Press ? in the view for its keys. --once --json prints one snapshot (two
readings --interval apart, so that rates are filled in) and exits.`,
		Example: `  devkit top -c examples/stack/ops.yaml
  devkit top --read-only
  devkit top --once --json | jq '.processes[] | {name, state, cpu_percent, rss_bytes}'`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Interval <= 0 {
				return cmdutil.UsageErrorf("--interval must be positive")
			}
			opts.Open = func() (*supervisor.Supervisor, error) { return sup.OpenProject(f, cmd, false) }
			opts.NoColor = f.Getenv("NO_COLOR") != ""
			TokensFromEnv(f, &opts.KVToken, &opts.GatewayToken)
			if runF == nil {
				runF = run
			}
			return runF(cmd.Context(), opts)
		},
	}
	AddSourceFlags(cmd, &opts.KVURL, &opts.GatewayURL, &opts.KVToken, &opts.GatewayToken, &opts.Interval)
	cmd.Flags().BoolVar(&opts.Once, "once", false, "print one snapshot and exit (with --json: the JSON document)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "with --once: print the snapshot as JSON (schema "+live.Schema+")")
	cmd.Flags().BoolVar(&opts.ReadOnly, "read-only", false, "turn the actions (restart, stop, start, reload) off")
	return cmd
}

// TokensFromEnv fills the KV and gateway tokens that no flag gave from
// $DEVKIT_KV_TOKEN and $DEVKIT_ADMIN_TOKEN, for top and dash alike.
func TokensFromEnv(f *cmdutil.Factory, kvToken, gatewayToken *string) {
	if *kvToken == "" {
		*kvToken = f.Getenv("DEVKIT_KV_TOKEN")
	}
	if *gatewayToken == "" {
		*gatewayToken = f.Getenv("DEVKIT_ADMIN_TOKEN")
	}
}

// AddSourceFlags registers the flags top and dash share: the project's
// -c/--project, the KV and gateway addresses and tokens, the interval.
func AddSourceFlags(cmd *cobra.Command, kv, gateway, kvToken, gatewayToken *string, interval *time.Duration) {
	sup.AddProjectFlags(cmd)
	cmd.Flags().StringVar(kv, "kv", "", "KV server HTTP base URL (default: from the YAML's 'kv serve --http')")
	cmd.Flags().StringVar(gateway, "gateway", "", "gateway admin base URL (default: from the YAML's 'ratelimit proxy --admin')")
	cmd.Flags().StringVar(kvToken, "kv-token", "", "bearer token of the KV server (default $DEVKIT_KV_TOKEN)")
	cmd.Flags().StringVar(gatewayToken, "gateway-token", "", "bearer token of the gateway's admin API (default $DEVKIT_ADMIN_TOKEN)")
	cmdutil.DurationVar(cmd.Flags(), interval, "interval", time.Second, "time between readings")
}

// Sources opens the project and resolves where to read from: flags
// first, then the YAML.
func Sources(open func() (*supervisor.Supervisor, error), kv, gateway, kvToken, gatewayToken string) (live.Sources, error) {
	s, err := open()
	if err != nil {
		return live.Sources{}, err
	}
	e := live.EndpointsOf(s.Config())
	if kv != "" {
		e.KVURL = kv
	}
	if gateway != "" {
		e.GatewayURL = gateway
	}
	return live.Sources{Sup: s, KVURL: e.KVURL, KVToken: kvToken, GatewayURL: e.GatewayURL, GatewayToken: gatewayToken}, nil
}

func run(ctx context.Context, opts *Options) error {
	src, err := Sources(opts.Open, opts.KVURL, opts.GatewayURL, opts.KVToken, opts.GatewayToken)
	if err != nil {
		return err
	}
	sampler := live.NewSampler(src)
	if opts.Once {
		return printOnce(ctx, opts, sampler)
	}
	if opts.JSON {
		return cmdutil.UsageErrorf("--json needs --once")
	}
	return runTUI(ctx, opts, src, sampler)
}

// printOnce takes two readings an interval apart and prints the second.
func printOnce(ctx context.Context, opts *Options, sampler *live.Sampler) error {
	sampler.Sample(ctx)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(opts.Interval):
	}
	snap := sampler.Sample(ctx)
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, snap)
	}
	_, err := fmt.Fprint(opts.IO.Out, renderPlain(snap))
	return err
}
