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
	// cobra reports an unknown subcommand as a plain error; it is a usage error.
	if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown shorthand flag") {
		err = cmdutil.UsageError(err)
	}
	var ee *cmdutil.ExitError
	if !(errors.As(err, &ee) && ee.Silent) {
		fmt.Fprintf(ios.ErrOut, "devkit: %v\n", err)
	}
	return cmdutil.ExitCode(err)
}
