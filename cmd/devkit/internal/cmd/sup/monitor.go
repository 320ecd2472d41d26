package sup

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// monitorVerb is the hidden verb `devkit sup __monitor`: the devkit binary
// re-executed as one process's monitor (see supervisor.RunMonitor).
const monitorVerb = "__monitor"

func newMonitorCmd(ios *cmdutil.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:    monitorVerb,
		Short:  "Internal: supervise one process (started by sup start)",
		Hidden: true,
		Args:   cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			code := supervisor.RunMonitor(os.Stdin, os.Stdout)
			if code != 0 {
				return cmdutil.SilentExit(code)
			}
			return nil
		},
	}
}
