package sup

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// ExportOptions are the inputs of `devkit sup export systemd`.
type ExportOptions struct {
	IO     *cmdutil.IOStreams
	Sup    Factory
	OutDir string
}

func newExportCmd(ios *cmdutil.IOStreams, sup Factory) *cobra.Command {
	export := &cobra.Command{
		Use:   "export",
		Short: "Export the YAML to another supervisor's format",
	}
	opts := &ExportOptions{IO: ios, Sup: sup}
	systemd := &cobra.Command{
		Use: "systemd [--out DIR]",
		Example: `  devkit sup export systemd
  devkit sup export systemd --out ~/.config/systemd/user && systemctl --user daemon-reload`,
		Short: "Write systemd user units (devkit-<name>.service) for boot persistence",
		Long: `Render one systemd user unit per process: ExecStart, Environment,
WorkingDirectory, KillMode=control-group, After/Requires from depends_on and
Restart from the restart policy. Without --out the units are printed; with
--out DIR they are written there (for example ~/.config/systemd/user), then
run 'systemctl --user daemon-reload'.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runExportSystemd(opts) },
	}
	systemd.Flags().StringVar(&opts.OutDir, "out", "", "directory to write the unit files to")
	export.AddCommand(systemd)
	return export
}

func runExportSystemd(opts *ExportOptions) error {
	sup, err := opts.Sup(true)
	if err != nil {
		return err
	}
	units := sup.Config().SystemdUnits(filepath.Join(sup.Home(), "logs"))
	names := slices.Sorted(maps.Keys(units))
	if opts.OutDir == "" {
		for i, name := range names {
			if i > 0 {
				fmt.Fprintln(opts.IO.Out)
			}
			fmt.Fprintf(opts.IO.Out, "# --- %s ---\n%s", name, units[name])
		}
		return nil
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return err
	}
	for _, name := range names {
		path := filepath.Join(opts.OutDir, name)
		if err := os.WriteFile(path, []byte(units[name]), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(opts.IO.Out, path)
	}
	return nil
}
