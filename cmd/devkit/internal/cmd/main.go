package cmd

import (
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// Main runs devkit with args and returns the process exit code. Errors are
// printed once, to stderr, prefixed with "devkit: ".
func Main(ios *cmdutil.IOStreams, args []string) int {
	f := cmdutil.NewFactory(ios)
	return cmdutil.Execute(ios, NewCmdRoot(f), args)
}
