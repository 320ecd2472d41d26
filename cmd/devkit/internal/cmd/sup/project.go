package sup

import (
	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// AddProjectFlags registers sup's -c/--config and --project on a command
// outside the sup noun (devkit top, devkit dash), so that it finds the
// stack exactly as the sup verbs do.
func AddProjectFlags(cmd *cobra.Command) {
	cmd.Flags().StringP("config", "c", "", "config file (default $"+configEnv+" or ./"+defaultConfig+")")
	cmd.Flags().String("project", "", "project namespace (default $"+projectEnv+", else derived from the config file's path)")
}

// OpenProject opens the supervisor of the project cmd's -c and --project
// (and the environment) name, as the sup verbs open it. needConfig says
// whether the YAML must exist.
func OpenProject(f *cmdutil.Factory, cmd *cobra.Command, needConfig bool) (*supervisor.Supervisor, error) {
	return newSupervisor(f, projectFrom(f, cmd), needConfig)
}
