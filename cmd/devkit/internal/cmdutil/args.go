package cmdutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// wrapArgs turns a cobra argument validator's error into a usage error (exit
// 2) that names the command and shows its usage line: "accepts 1 arg(s),
// received 0" alone does not say which command or which argument.
func wrapArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return ArgsError(cmd, err)
		}
		return nil
	}
}

// ArgsError is a usage error (exit 2) about cmd's positional arguments: the
// command, what is wrong, its usage line and where its help is.
func ArgsError(cmd *cobra.Command, err error) error {
	path := cmd.CommandPath()
	return UsageErrorf("%s: %w\nUsage: %s\nRun '%s --help' for details.", strings.TrimPrefix(path, cmd.Root().Name()+" "), err, cmd.UseLine(), path)
}

// NoArgs rejects any positional argument with a usage error (cobra's own
// NoArgs calls the argument an unknown command, which misleads on a verb).
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return ArgsError(cmd, fmt.Errorf("takes no arguments, got %q", args[0]))
	}
	return nil
}

// ExactArgs requires exactly n positional arguments.
func ExactArgs(n int) cobra.PositionalArgs { return wrapArgs(cobra.ExactArgs(n)) }

// MinimumNArgs requires at least n positional arguments.
func MinimumNArgs(n int) cobra.PositionalArgs { return wrapArgs(cobra.MinimumNArgs(n)) }

// MaximumNArgs accepts at most n positional arguments.
func MaximumNArgs(n int) cobra.PositionalArgs { return wrapArgs(cobra.MaximumNArgs(n)) }

// RangeArgs accepts between min and max positional arguments.
func RangeArgs(min, max int) cobra.PositionalArgs { return wrapArgs(cobra.RangeArgs(min, max)) }
