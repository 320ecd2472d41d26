// Package version implements `devkit version`.
package version

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// Set at link time: -ldflags "-X github.com/devkit-go/devkit/cmd/devkit/internal/cmd/version.Version=v1.2.3".
var (
	Version = ""
	Commit  = ""
)

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// Current reports the version baked in at link time, falling back to what
// the Go toolchain recorded in the binary (module version, VCS revision).
func Current() Info {
	info := Info{Version: Version, Commit: Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}

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
