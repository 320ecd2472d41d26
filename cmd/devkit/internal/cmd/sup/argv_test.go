package sup

import (
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil/cmdtest"
)

// TestArgv_Options: what each sup verb's flags, args and environment give
// its run function, and the command lines refused before it runs (exit 2).
func TestArgv_Options(t *testing.T) {
	def := ProjectOptions{ConfigPath: defaultConfig}
	cmdtest.RunTable(t, NewCmd(cmdtest.Factory(nil)), []cmdtest.Case{
		{Name: "start defaults", Parse: cmdtest.Parse(newSupCmd, NewCmdStart, "start", "api"),
			Want: StartOptions{ProjectOptions: def, Names: []string{"api"}}},
		{Name: "start --all --json -c", Parse: cmdtest.Parse(newSupCmd, NewCmdStart, "-c", "x/ops.yaml", "start", "--all", "--json"),
			Want: StartOptions{ProjectOptions: ProjectOptions{ConfigPath: "x/ops.yaml", ConfigExplicit: true}, All: true, JSON: true, Names: []string{}}},
		{Name: "start config and project from the environment", Env: map[string]string{configEnv: "e.yaml", projectEnv: "shop"},
			Parse: cmdtest.Parse(newSupCmd, NewCmdStart, "start", "api"),
			Want:  StartOptions{ProjectOptions: ProjectOptions{ConfigPath: "e.yaml", ConfigExplicit: true, Project: "shop"}, Names: []string{"api"}}},
		{Name: "start flags win over the environment", Env: map[string]string{configEnv: "e.yaml", projectEnv: "shop"},
			Parse: cmdtest.Parse(newSupCmd, NewCmdStart, "--project", "p2", "start", "-c", "f.yaml", "api"),
			Want:  StartOptions{ProjectOptions: ProjectOptions{ConfigPath: "f.yaml", ConfigExplicit: true, Project: "p2"}, Names: []string{"api"}}},
		{Name: "start unknown flag", Parse: cmdtest.Parse(newSupCmd, NewCmdStart, "start", "--bogus"), Code: 2, Stderr: "unknown flag: --bogus"},

		{Name: "stop defaults", Parse: cmdtest.Parse(newSupCmd, NewCmdStop, "stop", "api", "db"),
			Want: StopOptions{ProjectOptions: def, Names: []string{"api", "db"}}},
		{Name: "stop --all --force --timeout 1.5 --json", Parse: cmdtest.Parse(newSupCmd, NewCmdStop, "stop", "--all", "--force", "--timeout", "1.5", "--json"),
			Want: StopOptions{ProjectOptions: def, Names: []string{}, All: true, Force: true, Timeout: 1500 * time.Millisecond, JSON: true}},
		{Name: "stop --timeout Go duration", Parse: cmdtest.Parse(newSupCmd, NewCmdStop, "stop", "api", "--timeout", "250ms"),
			Want: StopOptions{ProjectOptions: def, Names: []string{"api"}, Timeout: 250 * time.Millisecond}},
		{Name: "stop --timeout not a duration", Parse: cmdtest.Parse(newSupCmd, NewCmdStop, "stop", "api", "--timeout", "soon"), Code: 2, Stderr: "not a duration"},
		{Name: "stop --timeout negative", Parse: cmdtest.Parse(newSupCmd, NewCmdStop, "stop", "api", "--timeout", "-1s"), Code: 2},

		{Name: "status defaults", Parse: cmdtest.Parse(newSupCmd, NewCmdStatus, "status"),
			Want: StatusOptions{ProjectOptions: def, Names: []string{}}},
		{Name: "status names --json --project", Parse: cmdtest.Parse(newSupCmd, NewCmdStatus, "status", "--project", "shop", "api", "--json"),
			Want: StatusOptions{ProjectOptions: ProjectOptions{ConfigPath: defaultConfig, Project: "shop"}, Names: []string{"api"}, JSON: true}},
		{Name: "status --json=maybe", Parse: cmdtest.Parse(newSupCmd, NewCmdStatus, "status", "--json=maybe"), Code: 2},

		{Name: "restart defaults", Parse: cmdtest.Parse(newSupCmd, NewCmdRestart, "restart", "api"),
			Want: RestartOptions{ProjectOptions: def, Names: []string{"api"}}},
		{Name: "restart --force --timeout 5s --json", Parse: cmdtest.Parse(newSupCmd, NewCmdRestart, "restart", "api", "w", "--force", "--timeout", "5s", "--json"),
			Want: RestartOptions{ProjectOptions: def, Names: []string{"api", "w"}, Force: true, Timeout: 5 * time.Second, JSON: true}},
		{Name: "restart needs a name", Parse: cmdtest.Parse(newSupCmd, NewCmdRestart, "restart"), Code: 2, Stderr: "requires at least 1 arg"},

		{Name: "reload defaults", Parse: cmdtest.Parse(newSupCmd, NewCmdReload, "reload"), Want: ReloadOptions{ProjectOptions: def}},
		{Name: "reload --dry-run --json", Parse: cmdtest.Parse(newSupCmd, NewCmdReload, "reload", "--dry-run", "--json"),
			Want: ReloadOptions{ProjectOptions: def, DryRun: true, JSON: true}},
		{Name: "reload takes no names", Parse: cmdtest.Parse(newSupCmd, NewCmdReload, "reload", "api"), Code: 2},

		{Name: "logs defaults", Parse: cmdtest.Parse(newSupCmd, NewCmdLogs, "logs"),
			Want: LogsOptions{ProjectOptions: def, Names: []string{}, Lines: 20}},
		{Name: "logs -n -f", Parse: cmdtest.Parse(newSupCmd, NewCmdLogs, "logs", "api", "-n", "100", "-f"),
			Want: LogsOptions{ProjectOptions: def, Names: []string{"api"}, Lines: 100, Follow: true}},
		{Name: "logs --lines not a number", Parse: cmdtest.Parse(newSupCmd, NewCmdLogs, "logs", "--lines", "many"), Code: 2},

		{Name: "export systemd defaults", Parse: cmdtest.Parse(newSupCmd, NewCmdExportSystemd, "systemd"),
			Want: ExportSystemdOptions{ProjectOptions: def}},
		{Name: "export systemd --out", Parse: cmdtest.Parse(newSupCmd, NewCmdExportSystemd, "systemd", "--out", "units"),
			Want: ExportSystemdOptions{ProjectOptions: def, OutDir: "units"}},
		{Name: "export systemd takes no args", Parse: cmdtest.Parse(newSupCmd, NewCmdExportSystemd, "systemd", "x"), Code: 2},
		{Name: "export nomad defaults", Parse: cmdtest.Parse(newSupCmd, NewCmdExportNomad, "nomad"),
			Want: ExportNomadOptions{ProjectOptions: def}},
		{Name: "export nomad --out --job", Parse: cmdtest.Parse(newSupCmd, NewCmdExportNomad, "nomad", "--out", "j.hcl", "--job", "shop"),
			Want: ExportNomadOptions{ProjectOptions: def, OutFile: "j.hcl", Job: "shop"}},

		{Name: "monitor", Parse: cmdtest.Parse(newSupCmd, NewCmdMonitor, monitorVerb), Want: MonitorOptions{}},
		{Name: "monitor takes no args", Parse: cmdtest.Parse(newSupCmd, NewCmdMonitor, monitorVerb, "x"), Code: 2},
	})
}
