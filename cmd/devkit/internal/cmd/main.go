package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// Main runs devkit with args and returns the process exit code. Errors are
// printed once, to stderr, prefixed with "devkit: ".
func Main(ios *cmdutil.IOStreams, args []string) int {
	root := NewRootCmd(ios)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return cmdutil.ExitOK
	}
	if isCobraUsageMistake(err) {
		err = cmdutil.UsageError(err)
	}
	var ee *cmdutil.ExitError
	if !(errors.As(err, &ee) && ee.Silent) {
		fmt.Fprintf(ios.ErrOut, "devkit: %v\n", err)
	}
	return cmdutil.ExitCode(err)
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
