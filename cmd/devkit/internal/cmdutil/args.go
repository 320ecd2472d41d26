package cmdutil

import (
	"github.com/spf13/cobra"
)

// wrapArgs turns a cobra argument validator's error into a usage error (exit 2).
func wrapArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return UsageError(err)
		}
		return nil
	}
}

// NoArgs rejects any positional argument with a usage error.
var NoArgs = wrapArgs(cobra.NoArgs)

// ExactArgs requires exactly n positional arguments.
func ExactArgs(n int) cobra.PositionalArgs { return wrapArgs(cobra.ExactArgs(n)) }

// MinimumNArgs requires at least n positional arguments.
func MinimumNArgs(n int) cobra.PositionalArgs { return wrapArgs(cobra.MinimumNArgs(n)) }

// MaximumNArgs accepts at most n positional arguments.
func MaximumNArgs(n int) cobra.PositionalArgs { return wrapArgs(cobra.MaximumNArgs(n)) }

// RangeArgs accepts between min and max positional arguments.
func RangeArgs(min, max int) cobra.PositionalArgs { return wrapArgs(cobra.RangeArgs(min, max)) }
