// Package sup implements `devkit sup`, the daemonless process supervisor:
// one file per verb, each an XOptions struct (what the flags, args and
// environment gave, plus the dependencies from the cmdutil.Factory),
// NewCmdX(f, runF) building the cobra command and xRun(ctx, opts) doing the
// work, which tests call with buffers. The supervisor is opened only in the
// run function, after the flags are parsed.
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

// SupervisorFunc opens the Supervisor a command works with. needConfig says
// whether the YAML must exist; commands that can work from the records
// alone (status, stop, logs) pass false.
type SupervisorFunc func(needConfig bool) (*supervisor.Supervisor, error)

// ProjectOptions are what -c, --project and the environment say about the
// project every verb works in.
type ProjectOptions struct {
	// ConfigPath is -c, else $DEVKIT_SUP_CONFIG, else ./ops.yaml.
	ConfigPath string
	// ConfigExplicit says -c or $DEVKIT_SUP_CONFIG named the file: it must exist.
	ConfigExplicit bool
	// Project is --project, else $DEVKIT_SUP_PROJECT; "" derives the key from ConfigPath.
	Project string
	// Home is supervisor.DefaultHome(): $OPS_HOME, else $DEVKIT_HOME/sup,
	// else ~/.devkit/sup; "" when there is none (the open says why).
	Home string
}

// NewCmd returns the `sup` noun with all its verbs.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := newSupNoun(f)
	cmd.AddCommand(
		NewCmdStart(f, nil),
		NewCmdStop(f, nil),
		NewCmdStatus(f, nil),
		NewCmdRestart(f, nil),
		NewCmdReload(f, nil),
		NewCmdScale(f, nil),
		NewCmdLogs(f, nil),
		newExportCmd(f),
		NewCmdImport(f, nil),
		NewCmdMonitor(f, nil),
	)
	return cmd
}

// newSupNoun builds the noun and its persistent flags, without verbs.
func newSupNoun(_ *cmdutil.Factory) *cobra.Command {
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
	cmd.PersistentFlags().StringP("config", "c", "", "config file: YAML, or a Procfile (default $"+configEnv+" or ./"+defaultConfig+")")
	cmd.PersistentFlags().String("project", "", "project namespace (default $"+projectEnv+", else derived from the config file's path)")
	return cmd
}

// projectFrom reads sup's persistent -c and --project from cmd (a verb
// whose flags are parsed) and the environment.
func projectFrom(f *cmdutil.Factory, cmd *cobra.Command) ProjectOptions {
	var p ProjectOptions
	p.ConfigPath, _ = cmd.Flags().GetString("config") // "" when the verb runs outside sup (tests)
	p.Project, _ = cmd.Flags().GetString("project")
	if p.Project == "" {
		p.Project = f.Getenv(projectEnv)
	}
	if p.ConfigPath == "" {
		p.ConfigPath = f.Getenv(configEnv)
	}
	p.ConfigExplicit = p.ConfigPath != ""
	if p.ConfigPath == "" {
		p.ConfigPath = defaultConfig
	}
	p.Home, _ = supervisor.DefaultHome() // the error is reported when the supervisor opens
	return p
}

// opener returns the lazily opened supervisor of project p.
func (p ProjectOptions) opener(f *cmdutil.Factory) SupervisorFunc {
	return func(needConfig bool) (*supervisor.Supervisor, error) { return newSupervisor(f, p, needConfig) }
}

// newSupervisor loads the config and opens the home. A missing default
// config is tolerated when needConfig is false; a path given with -c or
// DEVKIT_SUP_CONFIG must exist.
func newSupervisor(f *cmdutil.Factory, p ProjectOptions, needConfig bool) (*supervisor.Supervisor, error) {
	project, configPath, explicit := p.Project, p.ConfigPath, p.ConfigExplicit
	if project != "" {
		if err := supervisor.ValidName(project); err != nil {
			return nil, cmdutil.UsageErrorf("--project: %v", err)
		}
	}
	var cfg *supervisor.Config
	if _, err := os.Stat(configPath); err == nil || explicit || needConfig {
		cfg, err = supervisor.LoadConfig(configPath)
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrNotExist) && !explicit:
			return nil, fmt.Errorf("no %s here: pass -c FILE or set %s", defaultConfig, configEnv)
		case errors.Is(err, supervisor.ErrUnsetVariable) && !needConfig:
			// stop, status and logs act on the records, which hold all they
			// need: a variable this shell lacks must not block them.
			fmt.Fprintf(f.IOStreams.ErrOut, "warning: %v; acting on the records only\n", err)
			cfg = nil
		default:
			return nil, err
		}
	}
	home := p.Home
	if home == "" {
		var err error
		if home, err = supervisor.DefaultHome(); err != nil {
			return nil, err
		}
	}
	exe, err := f.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for the monitor: %w", err)
	}
	if project == "" {
		project = supervisor.ProjectKeyIn(home, configPath) // the same key whether the file exists or not
	}
	return f.Supervisor(home, cfg, supervisor.Options{
		Project:            project,
		MonitorCommand:     []string{exe, "sup", monitorVerb},
		MonitorCommandFunc: monitorFor(exe),
		OnLockWait: func(name string, holder int) {
			who := "another devkit run"
			if holder > 0 {
				who = fmt.Sprintf("PID %d", holder)
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "%s: waiting for the lock held by %s (a start or stop of %s in progress)\n", name, who, name)
		},
	})
}

// checkNames refuses, as a usage error, any name that could not name a
// process file — before the home is opened or anything is read (the verbs
// call it before runF, so it is part of what the argv tests see).
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
