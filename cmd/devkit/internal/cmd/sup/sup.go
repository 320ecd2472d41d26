// Package sup implements `devkit sup`, the daemonless process supervisor:
// one file per verb, each an options struct, a constructor and a run
// function that tests call with buffers.
package sup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// configEnv names the environment variable holding the default config path.
const configEnv = "DEVKIT_SUP_CONFIG"

// projectEnv names the environment variable overriding the project key.
const projectEnv = "DEVKIT_SUP_PROJECT"

// defaultConfig is the config path when neither -c nor DEVKIT_SUP_CONFIG is given.
const defaultConfig = "ops.yaml"

// Factory builds the Supervisor a command works with. needConfig says
// whether the YAML must exist; commands that can work from the records
// alone (status, stop, logs) pass false.
type Factory func(needConfig bool) (*supervisor.Supervisor, error)

// NewCmd returns the `sup` noun with all its verbs.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	var configPath, project string
	cmd := &cobra.Command{
		Use:   "sup",
		Short: "Run a stack of local processes from YAML, without a daemon",
		Long: `devkit sup starts, stops, inspects and reloads the processes declared in a
YAML file (default ./ops.yaml, or $DEVKIT_SUP_CONFIG, or -c). There is no
daemon: every run derives what is running from records under the home
($OPS_HOME, else $DEVKIT_HOME/sup, else ~/.devkit/sup) and the kernel.

Each config file is its own project: its state lives under a key derived
from the file's absolute path (shown by status), so two projects under one
home never see each other; --project NAME or $DEVKIT_SUP_PROJECT names the
namespace instead. --all and reload act on the current project only.`,
	}
	cmd.PersistentFlags().StringVarP(&configPath, "config", "c", "", "config file (default $"+configEnv+" or ./"+defaultConfig+")")
	cmd.PersistentFlags().StringVar(&project, "project", "", "project namespace (default $"+projectEnv+", else derived from the config file's path)")
	factory := func(needConfig bool) (*supervisor.Supervisor, error) {
		return newSupervisor(ios, configPath, project, needConfig)
	}
	cmd.AddCommand(
		newStartCmd(ios, factory),
		newStopCmd(ios, factory),
		newStatusCmd(ios, factory),
		newRestartCmd(ios, factory),
		newReloadCmd(ios, factory),
		newLogsCmd(ios, factory),
		newExportCmd(ios, factory),
		newMonitorCmd(ios),
	)
	return cmd
}

// newSupervisor loads the config and opens the home. A missing default
// config is tolerated when needConfig is false; a path given with -c or
// DEVKIT_SUP_CONFIG must exist.
func newSupervisor(ios *cmdutil.IOStreams, configPath, project string, needConfig bool) (*supervisor.Supervisor, error) {
	if project == "" {
		project = os.Getenv(projectEnv)
	}
	if project != "" {
		if err := supervisor.ValidName(project); err != nil {
			return nil, cmdutil.UsageErrorf("--project: %v", err)
		}
	}
	explicit := configPath != ""
	if configPath == "" {
		configPath = os.Getenv(configEnv)
		explicit = configPath != ""
	}
	if configPath == "" {
		configPath = defaultConfig
	}
	var cfg *supervisor.Config
	if _, err := os.Stat(configPath); err == nil || explicit || needConfig {
		cfg, err = supervisor.LoadConfig(configPath)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && !explicit {
				return nil, fmt.Errorf("no %s here: pass -c FILE or set %s", defaultConfig, configEnv)
			}
			return nil, err
		}
	}
	home, err := supervisor.DefaultHome()
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for the monitor: %w", err)
	}
	if project == "" {
		project = supervisor.ProjectKey(configPath) // the same key whether the file exists or not
	}
	return supervisor.New(home, cfg, supervisor.Options{
		Project:        project,
		MonitorCommand: []string{exe, "sup", monitorVerb},
		OnLockWait: func(name string, holder int) {
			who := "another devkit run"
			if holder > 0 {
				who = fmt.Sprintf("PID %d", holder)
			}
			fmt.Fprintf(ios.ErrOut, "%s: waiting for the lock held by %s (a start or stop of %s in progress)\n", name, who, name)
		},
	})
}

// checkNames refuses, as a usage error, any name that could not name a
// process file — before the home is opened or anything is read.
func checkNames(names []string) error {
	for _, n := range names {
		if err := supervisor.ValidName(n); err != nil {
			return cmdutil.UsageError(err)
		}
	}
	return nil
}

// exitFor maps supervisor errors onto the exit-code contract.
func exitFor(err error) error {
	if errors.Is(err, supervisor.ErrInvalidName) {
		return cmdutil.UsageError(err)
	}
	if errors.Is(err, supervisor.ErrUnknownProcess) {
		return cmdutil.Negative(err)
	}
	return err
}

// namesOrAll resolves [NAME...|--all] into names; one of the two is required.
func namesOrAll(args []string, all bool, allNames func() ([]string, error)) ([]string, error) {
	switch {
	case all && len(args) > 0:
		return nil, cmdutil.UsageErrorf("give process names or --all, not both")
	case all:
		return allNames()
	case len(args) == 0:
		return nil, cmdutil.UsageErrorf("give process names or --all")
	}
	return args, nil
}
