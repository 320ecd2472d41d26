package cmdutil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// FlagErrorFunc turns a flag mistake into a usage error (exit 2) that says
// where the help is.
func FlagErrorFunc(c *cobra.Command, err error) error {
	return UsageErrorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
}

// Execute runs root with args and returns the process exit code. Errors are
// printed once, to ios.ErrOut, prefixed with "devkit: ".
func Execute(ios *IOStreams, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	if isCobraUsageMistake(err) {
		err = UsageError(err)
	}
	var ee *ExitError
	if !(errors.As(err, &ee) && ee.Silent) {
		fmt.Fprintf(ios.ErrOut, "devkit: %v\n", err)
	}
	return ExitCode(err)
}

// isCobraUsageMistake reports the mistakes cobra returns as plain errors (an
// unknown subcommand, an unknown shorthand, a missing required flag): they
// are usage errors, exit 2, like every other flag mistake.
func isCobraUsageMistake(err error) bool {
	for _, prefix := range []string{"unknown command", "unknown shorthand flag", "required flag(s)"} {
		if strings.HasPrefix(err.Error(), prefix) {
			return true
		}
	}
	return false
}
