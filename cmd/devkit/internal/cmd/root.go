// Package cmd assembles the devkit command tree. Each noun lives in its own
// package under internal/cmd/<noun>; this file only wires them together.
package cmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd/dash"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd/kv"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd/ratelimit"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd/sup"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd/top"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd/version"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

const exitCodesHelp = `devkit exits with a code that scripts can rely on:

  0  success
  1  the command failed (an I/O error, a server that could not start, ...)
  2  usage error: an unknown command or flag, a missing or extra argument
  3  a negative answer: the key was not found, the process is not running,
     the request was denied

Diagnostics go to stderr; data goes to stdout.`

// NewRootCmd builds the whole devkit command tree writing to ios, with the
// binary's factory.
func NewRootCmd(ios *cmdutil.IOStreams) *cobra.Command {
	return NewCmdRoot(cmdutil.NewFactory(ios))
}

// NewCmdRoot builds the whole devkit command tree; every verb gets f.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	ios := f.IOStreams
	root := &cobra.Command{
		Use:   "devkit",
		Short: "Developer infrastructure in one binary: rate limiter, durable KV store, process supervisor",
		Long: `devkit is one binary with three pieces of developer infrastructure:

  devkit ratelimit   a multi-tenant HTTP rate limiter (memory, Redis, Redis Cluster)
  devkit kv          a durable key-value store with a write-ahead log
  devkit sup         a daemonless process supervisor driven by YAML

Run 'devkit help exit-codes' for the exit codes scripts can rely on.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	root.SetFlagErrorFunc(cmdutil.FlagErrorFunc)
	root.AddCommand(
		version.NewCmdVersion(f, nil),
		kv.NewCmd(f),
		&cobra.Command{Use: "exit-codes", Short: "The exit codes devkit commands use", Long: exitCodesHelp},
		sup.NewCmd(f),
		ratelimit.NewCmd(f),
		top.NewCmd(f, nil),
		dash.NewCmd(f, nil),
	)
	// Nouns (kv, ratelimit, sup) are added here, one package each.
	root.InitDefaultCompletionCmd()
	rejectUnknownSubcommands(root)
	return root
}

// rejectUnknownSubcommands makes a group command (kv, sup, completion...)
// given an unknown subcommand fail with a usage error (exit 2) instead of
// cobra's default of printing its help and exiting 0, and suggest the verbs
// within cobra's SuggestionsMinimumDistance of the mistyped one, as cobra
// does for the root's nouns.
func rejectUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
	if c == c.Root() || c.Runnable() || !c.HasSubCommands() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only on the root's own lookup
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		var hint string
		if suggestions := cmd.SuggestionsFor(args[0]); len(suggestions) > 0 {
			hint = "\n\nDid you mean this?\n\t" + strings.Join(suggestions, "\n\t") + "\n"
		}
		return cmdutil.UsageErrorf("unknown command %q for %q%s\nRun '%s --help' for usage.", args[0], cmd.CommandPath(), hint, cmd.CommandPath())
	}
}
