package ratelimit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	rl "github.com/devkit-go/devkit/ratelimit"
)

// CheckOptions are the inputs of `devkit ratelimit check`.
type CheckOptions struct {
	IO    *cmdutil.IOStreams
	Store *StoreOptions

	Key       string
	Limit     int64
	Window    time.Duration
	Algorithm string
	Burst     int64
	Block     time.Duration
	Cost      int64
	JSON      bool
	Request   RequestOptions
}

// NewCmdCheck builds `devkit ratelimit check`; runF, when not nil, receives the options instead of checkRun.
func NewCmdCheck(f *cmdutil.Factory, runF func(context.Context, *CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{IO: f.IOStreams}
	if runF == nil {
		runF = checkRun
	}
	cmd := &cobra.Command{
		Use:   "check (KEY --limit N --window D | --policy FILE --method M --path P [--header H]...)",
		Short: "Spend from KEY's limit, or a described request's; exit 0 when allowed, 3 when denied",
		Long: `check spends --cost from KEY's limit in the shared store and reports the result.

With --policy, it answers for the request described by --method, --path,
--header and --ip instead: the rule, key and limits that request would get
from the policy (as the proxy would), spent from the shared store.

Exit status: 0 allowed (or not limited), 3 denied, 2 usage error (including
no store and a missing flag), 1 store error.`,
		Example: `  devkit ratelimit check login:203.0.113.9 --limit 5 --window 15m --block 1h
  devkit ratelimit check api:acme --limit 2 --window 1s --algorithm token-bucket --burst 120 --json
  devkit ratelimit check --policy examples/policies/saas.yaml --method POST --path /auth/login --ip 203.0.113.9
  devkit ratelimit check --policy examples/policies/saas.yaml --method GET --path /api/items/7 \
      --header 'X-Workspace-ID: acme' --header 'X-Workspace-Plan: pro' --ip 127.0.0.1 --json`,
		Args: cmdutil.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Store = storeFrom(f, cmd)
			if opts.Request.Policy != "" {
				if len(args) > 0 {
					return cmdutil.UsageErrorf("give KEY or --policy with a request, not both")
				}
				return runF(cmd.Context(), opts)
			}
			if len(args) != 1 {
				return cmdutil.UsageErrorf("give KEY (with --limit and --window), or --policy with a request\nRun '%s --help' for usage.", cmd.CommandPath())
			}
			if err := requireFlags(cmd, "limit", "window"); err != nil {
				return err
			}
			opts.Key = args[0]
			return runF(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.Int64Var(&opts.Limit, "limit", 0, "requests allowed per window (token bucket: refill per window)")
	cmdutil.DurationVar(fs, &opts.Window, "window", 0, "window length: 90s, 15m, 1h or seconds")
	fs.StringVar(&opts.Algorithm, "algorithm", "fixed-window", "fixed-window, sliding-window, sliding-log, token-bucket or gcra")
	fs.Int64Var(&opts.Burst, "burst", 0, "bucket capacity for token-bucket and gcra (default: --limit)")
	cmdutil.DurationVar(fs, &opts.Block, "block", 0, "penalty block once denied (default: none)")
	fs.Int64Var(&opts.Cost, "cost", 1, "what this request spends")
	fs.BoolVar(&opts.JSON, "json", false, "print machine-readable JSON")
	opts.Request.addFlags(cmd)
	return cmd
}

// checkJSON is what check --json adds to the library's LimitResult of the
// binding limit (the first that denied, else the first): one flat object,
// whose limit fields (name, limit, allowed, remaining, reset_after_seconds,
// retry_after_seconds, blocked) are the library's schema, not a copy.
type checkJSON struct {
	Key          string  `json:"key,omitempty"`
	Algorithm    string  `json:"algorithm,omitempty"`
	Cost         int64   `json:"cost"`
	StoreSeconds float64 `json:"store_seconds"`
	// Rule, Plan and Limits are set for a request checked against a policy.
	Rule   string           `json:"rule,omitempty"`
	Plan   string           `json:"plan,omitempty"`
	Limits []rl.LimitResult `json:"limits,omitempty"`
}

// writeCheckJSON writes the binding result and what check adds to it.
func writeCheckJSON(w io.Writer, binding rl.LimitResult, extra checkJSON) error {
	b, err := cmdutil.JSONObject(binding, extra)
	if err != nil {
		return err
	}
	return cmdutil.WriteJSON(w, json.RawMessage(b)) // indented, as every --json
}

// checkRun answers for the described request with --policy, else for KEY.
func checkRun(ctx context.Context, opts *CheckOptions) error {
	if opts.Request.Policy != "" {
		return checkRequestRun(ctx, opts)
	}
	return checkKeyRun(ctx, opts)
}

func checkRequestRun(ctx context.Context, opts *CheckOptions) error {
	d, limited, err := opts.Request.decide()
	if err != nil {
		return err
	}
	method := strings.ToUpper(opts.Request.Method)
	if !limited {
		if opts.JSON {
			// No limit applies: there is no library result to print.
			res := struct {
				Allowed bool   `json:"allowed"`
				Cost    int64  `json:"cost"`
				Rule    string `json:"rule,omitempty"`
			}{Allowed: true}
			if d.Rule != nil {
				res.Rule = d.Rule.Name
			}
			return cmdutil.WriteJSON(opts.IO.Out, res)
		}
		_, err := fmt.Fprintln(opts.IO.Out, describe(d, method, opts.Request.Path))
		return err
	}
	store, ctx, done, err := opts.Store.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	out := make([]rl.LimitResult, len(d.Request.Limits))
	cost := d.Request.Cost
	if cost == 0 {
		cost = 1
	}
	start := time.Now()
	if err := store.Check(ctx, rl.CheckRequest{Key: d.Request.Key, Limits: d.Request.Limits, Cost: cost}, out); err != nil {
		return err
	}
	took := time.Since(start)
	for i := range out {
		out[i].Limit = d.Request.Limits[i] // the store leaves it to the caller
	}
	// The binding limit is the first that denied, else the first.
	denied := slices.IndexFunc(out, func(r rl.LimitResult) bool { return !r.Allowed })
	allowed, binding := denied < 0, max(denied, 0)
	if opts.JSON {
		err = writeCheckJSON(opts.IO.Out, out[binding], checkJSON{Key: d.Request.Key, Algorithm: d.Request.Limits[binding].Algorithm.String(),
			Cost: cost, StoreSeconds: took.Seconds(), Rule: d.Rule.Name, Plan: d.Plan, Limits: out})
	} else {
		verdict := "allowed"
		if !allowed {
			verdict = "denied"
		}
		_, err = fmt.Fprintf(opts.IO.Out, "%s: %s\n", verdict, describe(d, method, opts.Request.Path))
		for i, r := range out {
			lim := d.Request.Limits[i]
			state := fmt.Sprintf("%d of %d left, full again in %s", r.Remaining, lim.Capacity(), human(r.ResetAfter))
			if !r.Allowed {
				state = fmt.Sprintf("denied, retry in %s", human(r.RetryAfter))
				if r.Blocked {
					state = fmt.Sprintf("blocked, retry in %s", human(r.RetryAfter))
				}
			}
			fmt.Fprintf(opts.IO.Out, "  %s: %s\n", lim, state)
		}
	}
	if err != nil {
		return err
	}
	if !allowed {
		return cmdutil.SilentExit(cmdutil.ExitNegative)
	}
	return nil
}

func (o *CheckOptions) limit() (rl.Limit, error) {
	alg, err := rl.ParseAlgorithm(o.Algorithm)
	if err != nil {
		return rl.Limit{}, err
	}
	if o.Burst != 0 && alg != rl.TokenBucket && alg != rl.GCRA {
		return rl.Limit{}, fmt.Errorf("--burst applies to token-bucket and gcra, not %s", alg)
	}
	if o.Cost < 1 {
		return rl.Limit{}, fmt.Errorf("--cost must be at least 1, got %d", o.Cost)
	}
	lim := rl.Limit{Algorithm: alg, Rate: o.Limit, Period: o.Window, Burst: o.Burst, Block: o.Block}
	return lim, lim.Validate()
}

func checkKeyRun(ctx context.Context, opts *CheckOptions) error {
	lim, err := opts.limit()
	if err != nil {
		return cmdutil.UsageError(err)
	}
	store, ctx, done, err := opts.Store.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	out := make([]rl.LimitResult, 1)
	start := time.Now()
	if err := store.Check(ctx, rl.CheckRequest{Key: opts.Key, Limits: []rl.Limit{lim}, Cost: opts.Cost}, out); err != nil {
		return err
	}
	took := time.Since(start)
	out[0].Limit = lim // the store leaves it to the caller
	r := out[0]
	if opts.JSON {
		err = writeCheckJSON(opts.IO.Out, r, checkJSON{Key: opts.Key, Algorithm: lim.Algorithm.String(), Cost: opts.Cost, StoreSeconds: took.Seconds()})
	} else if r.Allowed {
		_, err = fmt.Fprintf(opts.IO.Out, "allowed: %s has %d of %d left; full again in %s\n",
			opts.Key, r.Remaining, lim.Capacity(), human(r.ResetAfter))
	} else {
		why := "limit reached"
		if r.Blocked {
			why = "blocked"
		}
		_, err = fmt.Fprintf(opts.IO.Out, "denied: %s %s (%d of %d left); retry in %s\n",
			opts.Key, why, r.Remaining, lim.Capacity(), human(r.RetryAfter))
	}
	if err != nil {
		return err
	}
	if !r.Allowed {
		return cmdutil.SilentExit(cmdutil.ExitNegative)
	}
	return nil
}
