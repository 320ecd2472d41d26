// Package version implements `devkit version`.
package version

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/buildinfo"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// Info describes the running binary.
type Info = buildinfo.Info

// Current reports the version baked in at link time (see buildinfo).
func Current() Info { return buildinfo.Current() }

// Options are the inputs of `devkit version`.
type Options struct {
	IO   *cmdutil.IOStreams
	JSON bool
}

// NewCmdVersion builds `devkit version`; runF, when not nil, receives the
// options instead of versionRun.
func NewCmdVersion(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the devkit version",
		Example: `  devkit version
  devkit version --json | jq -r .version`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return versionRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print machine-readable JSON")
	return cmd
}

// versionRun prints the version.
func versionRun(_ context.Context, opts *Options) error {
	info := Current()
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, info)
	}
	commit := info.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit != "" {
		if info.Modified {
			commit += "-dirty"
		}
		commit = " (" + commit + ")"
	}
	_, err := fmt.Fprintf(opts.IO.Out, "devkit %s%s %s %s\n", info.Version, commit, info.GoVersion, info.Platform)
	return err
}
