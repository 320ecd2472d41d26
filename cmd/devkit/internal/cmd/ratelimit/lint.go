package ratelimit

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// LintOptions are the inputs of `devkit ratelimit lint`.
type LintOptions struct {
	IO     *cmdutil.IOStreams
	Policy string
}

// NewCmdLint builds `devkit ratelimit lint`; runF, when not nil, receives the options instead of lintRun.
func NewCmdLint(f *cmdutil.Factory, runF func(context.Context, *LintOptions) error) *cobra.Command {
	opts := &LintOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:     "lint --policy FILE",
		Short:   "Validate a policy file and print the effective rules",
		Example: "  devkit ratelimit lint --policy examples/policies/saas.yaml",
		Long: `lint validates a policy file (unknown keys, durations, algorithms, plans...) and
prints the rules as the proxy will apply them. Every mistake of the file is
reported, each naming file:line and field.
Warnings (to stderr, exit 0) name what is valid but unsafe: a key on the raw
path (use route templates), a plan without limits for a method the rule sees,
identity headers without trusted proxies (never believed) or believed from
anyone (headers_from_trusted_only: false).
Exit status: 0 valid, 1 invalid, 2 usage error.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "policy"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return lintRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Policy, "policy", "", "policy file (YAML)")
	return cmd
}

func lintRun(ctx context.Context, opts *LintOptions) error {
	p, err := policy.Load(opts.Policy)
	if err != nil {
		fmt.Fprintln(opts.IO.ErrOut, err)
		return cmdutil.SilentExit(cmdutil.ExitFailure)
	}
	for _, w := range p.Warnings {
		fmt.Fprintln(opts.IO.ErrOut, "warning: "+w)
	}
	_, err = fmt.Fprint(opts.IO.Out, p.Describe())
	return err
}
