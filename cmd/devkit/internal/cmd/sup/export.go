package sup

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// ExportSystemdOptions are the inputs of `devkit sup export systemd`.
type ExportSystemdOptions struct {
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup    SupervisorFunc
	OutDir string
}

// ExportNomadOptions are the inputs of `devkit sup export nomad`.
type ExportNomadOptions struct {
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup     SupervisorFunc
	OutFile string
	Job     string
}

// ExportComposeOptions are the inputs of `devkit sup export compose`.
type ExportComposeOptions struct {
	IO *cmdutil.IOStreams
	ProjectOptions
	Sup     SupervisorFunc
	OutFile string
	Name    string
	Image   string
}

// newExportCmd builds the `export` group and its verbs.
func newExportCmd(f *cmdutil.Factory) *cobra.Command {
	export := &cobra.Command{
		Use:   "export",
		Short: "Export the YAML to another supervisor's format (systemd, Nomad, docker compose)",
		Long: `Export the YAML for a supervisor that outgrows devkit sup: systemd user units
for boot persistence on one machine, a docker compose file to run the stack
in containers, or a HashiCorp Nomad job to run it on a cluster. See
docs/supervisor.md for when to move.`,
	}
	export.AddCommand(NewCmdExportSystemd(f, nil), NewCmdExportNomad(f, nil), NewCmdExportCompose(f, nil))
	return export
}

// NewCmdExportSystemd builds `devkit sup export systemd`.
func NewCmdExportSystemd(f *cmdutil.Factory, runF func(context.Context, *ExportSystemdOptions) error) *cobra.Command {
	opts := &ExportSystemdOptions{IO: f.IOStreams}
	systemd := &cobra.Command{
		Use: "systemd [--out DIR]",
		Example: `  devkit sup export systemd
  devkit sup export systemd --out ~/.config/systemd/user && systemctl --user daemon-reload`,
		Short: "Write systemd user units (devkit-<name>.service) for boot persistence",
		Long: `Render one systemd user unit per process: ExecStart, Environment (a "$" in
a value stays a literal "$": systemd does not expand it there; "%" is
doubled), WorkingDirectory, KillMode=control-group, After/Requires from
depends_on, Restart from the restart policy, and the ready probe as an
ExecStartPost= wait (tcp through bash's /dev/tcp, http through curl, exec as
is; a log probe has no counterpart) bounded by TimeoutStartSec=. Without --out the units are printed; with
--out DIR they are written there (for example ~/.config/systemd/user), then
run 'systemctl --user daemon-reload'.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ProjectOptions, opts.Sup = bindProject(f, cmd)
			return runVerb(cmd.Context(), runF, exportSystemdRun, opts)
		},
	}
	systemd.Flags().StringVar(&opts.OutDir, "out", "", "directory to write the unit files to")
	return systemd
}

// NewCmdExportNomad builds `devkit sup export nomad`.
func NewCmdExportNomad(f *cmdutil.Factory, runF func(context.Context, *ExportNomadOptions) error) *cobra.Command {
	opts := &ExportNomadOptions{IO: f.IOStreams}
	nomad := &cobra.Command{
		Use: "nomad [--out FILE] [--job NAME]",
		Example: `  devkit sup export nomad > stack.nomad.hcl && nomad job run stack.nomad.hcl
  devkit sup export nomad --job shop --out shop.nomad.hcl`,
		Short: "Write a HashiCorp Nomad job (HCL): one group, raw_exec tasks",
		Long: `Render the YAML as one Nomad job: one group, one raw_exec task per process
with its command, args, env, kill signal and timeout and a restart block
from the restart policy; ready probes become service checks (tcp and http,
on static ports of the group's network; exec as a Consul script check;
health failures as check_restart). A oneshot that depends on nothing
long-running becomes a prestart task, one that depends on a long-running
process a poststart task; an order Nomad cannot keep is said in a comment
on the task. The job is named after the project unless --job is given.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ProjectOptions, opts.Sup = bindProject(f, cmd)
			return runVerb(cmd.Context(), runF, exportNomadRun, opts)
		},
	}
	nomad.Flags().StringVar(&opts.OutFile, "out", "", "file to write the job to (default: stdout)")
	nomad.Flags().StringVar(&opts.Job, "job", "", "job name (default: the project key)")
	return nomad
}

// NewCmdExportCompose builds `devkit sup export compose`.
func NewCmdExportCompose(f *cmdutil.Factory, runF func(context.Context, *ExportComposeOptions) error) *cobra.Command {
	opts := &ExportComposeOptions{IO: f.IOStreams}
	compose := &cobra.Command{
		Use: "compose [--out FILE] [--name NAME] [--image IMAGE]",
		Example: `  devkit sup export compose --image registry.example/shop:1 > compose.yaml && docker compose up -d
  DEVKIT_SUP_IMAGE=shop:dev docker compose -f <(devkit sup export compose) config`,
		Short: "Write a docker compose file: one service per process, probes as healthchecks",
		Long: `Render the YAML as a docker compose file: one service per process (per
replica) running its command and args as the entrypoint in IMAGE (default:
the image $DEVKIT_SUP_IMAGE names, which compose then requires), with its
environment, working directory, the config's directory mounted at its own
path, and the host's network (127.0.0.1 keeps its meaning). Probes become
healthchecks; depends_on conditions become service_started, service_healthy
or service_completed_successfully; the restart policy, stop signal and
timeout, shutdown command (pre_stop), log rotation (json-file options),
user, disabled (a profile) and watch (develop.watch) are carried. What
compose cannot express is listed in the header comment. The project is
named after the devkit project unless --name is given.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ProjectOptions, opts.Sup = bindProject(f, cmd)
			return runVerb(cmd.Context(), runF, exportComposeRun, opts)
		},
	}
	compose.Flags().StringVar(&opts.OutFile, "out", "", "file to write the compose file to (default: stdout)")
	compose.Flags().StringVar(&opts.Name, "name", "", "compose project name (default: the project key)")
	compose.Flags().StringVar(&opts.Image, "image", "", "image every service runs in (default: ${DEVKIT_SUP_IMAGE}, required by compose)")
	return compose
}

func exportComposeRun(_ context.Context, opts *ExportComposeOptions) error {
	sup, err := opts.Sup(true)
	if err != nil {
		return err
	}
	name := opts.Name
	if name == "" {
		name = sup.Project()
	}
	data, err := sup.Config().ComposeFile(name, opts.Image)
	if err != nil {
		return err
	}
	if opts.OutFile == "" {
		_, err := opts.IO.Out.Write(data)
		return err
	}
	if err := os.WriteFile(opts.OutFile, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out, opts.OutFile)
	return nil
}

func exportNomadRun(_ context.Context, opts *ExportNomadOptions) error {
	sup, err := opts.Sup(true)
	if err != nil {
		return err
	}
	job := opts.Job
	if job == "" {
		job = sup.Project()
	}
	hcl := sup.Config().NomadJob(job)
	if opts.OutFile == "" {
		_, err := io.WriteString(opts.IO.Out, hcl)
		return err
	}
	if err := os.WriteFile(opts.OutFile, []byte(hcl), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out, opts.OutFile)
	return nil
}

func exportSystemdRun(_ context.Context, opts *ExportSystemdOptions) error {
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
