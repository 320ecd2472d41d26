package sup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil/cmdtest"
	"github.com/devkit-go/devkit/supervisor"
)

// TestArgv_Options: what each sup verb's flags, args and environment give
// its run function, and the command lines refused before it runs (exit 2).
func TestArgv_Options(t *testing.T) {
	home := filepath.Join(t.TempDir(), "devkit")
	t.Setenv("OPS_HOME", "")
	t.Setenv("DEVKIT_HOME", home) // supervisor.DefaultHome reads the process environment
	def := ProjectOptions{ConfigPath: defaultConfig, Home: filepath.Join(home, "sup")}
	cmdtest.RunTable(t, NewCmd(cmdtest.Factory(nil)), []cmdtest.Case{
		{Name: "start defaults", Parse: cmdtest.Parse(newSupNoun, NewCmdStart, "start", "api"),
			Want: StartOptions{ProjectOptions: def, Names: []string{"api"}}},
		{Name: "start --all --json -c", Parse: cmdtest.Parse(newSupNoun, NewCmdStart, "-c", "x/ops.yaml", "start", "--all", "--json"),
			Want: StartOptions{ProjectOptions: ProjectOptions{ConfigPath: "x/ops.yaml", ConfigExplicit: true, Home: def.Home}, All: true, JSON: true, Names: []string{}}},
		{Name: "start config and project from the environment", Env: map[string]string{configEnv: "e.yaml", projectEnv: "shop"},
			Parse: cmdtest.Parse(newSupNoun, NewCmdStart, "start", "api"),
			Want:  StartOptions{ProjectOptions: ProjectOptions{ConfigPath: "e.yaml", ConfigExplicit: true, Project: "shop", Home: def.Home}, Names: []string{"api"}}},
		{Name: "start flags win over the environment", Env: map[string]string{configEnv: "e.yaml", projectEnv: "shop"},
			Parse: cmdtest.Parse(newSupNoun, NewCmdStart, "--project", "p2", "start", "-c", "f.yaml", "api"),
			Want:  StartOptions{ProjectOptions: ProjectOptions{ConfigPath: "f.yaml", ConfigExplicit: true, Project: "p2", Home: def.Home}, Names: []string{"api"}}},
		{Name: "start unknown flag", Parse: cmdtest.Parse(newSupNoun, NewCmdStart, "start", "--bogus"), Code: 2, Stderr: "unknown flag: --bogus"},

		{Name: "stop defaults", Parse: cmdtest.Parse(newSupNoun, NewCmdStop, "stop", "api", "db"),
			Want: StopOptions{ProjectOptions: def, Names: []string{"api", "db"}}},
		{Name: "stop --all --force --timeout 1.5 --json", Parse: cmdtest.Parse(newSupNoun, NewCmdStop, "stop", "--all", "--force", "--timeout", "1.5", "--json"),
			Want: StopOptions{ProjectOptions: def, Names: []string{}, All: true, Force: true, Timeout: 1500 * time.Millisecond, JSON: true}},
		{Name: "stop --timeout Go duration", Parse: cmdtest.Parse(newSupNoun, NewCmdStop, "stop", "api", "--timeout", "250ms"),
			Want: StopOptions{ProjectOptions: def, Names: []string{"api"}, Timeout: 250 * time.Millisecond}},
		{Name: "stop --timeout not a duration", Parse: cmdtest.Parse(newSupNoun, NewCmdStop, "stop", "api", "--timeout", "soon"), Code: 2, Stderr: "not a duration"},
		{Name: "stop --timeout negative", Parse: cmdtest.Parse(newSupNoun, NewCmdStop, "stop", "api", "--timeout", "-1s"), Code: 2},

		{Name: "status defaults", Parse: cmdtest.Parse(newSupNoun, NewCmdStatus, "status"),
			Want: StatusOptions{ProjectOptions: def, Names: []string{}}},
		{Name: "status names --json --project", Parse: cmdtest.Parse(newSupNoun, NewCmdStatus, "status", "--project", "shop", "api", "--json"),
			Want: StatusOptions{ProjectOptions: ProjectOptions{ConfigPath: defaultConfig, Project: "shop", Home: def.Home}, Names: []string{"api"}, JSON: true}},
		{Name: "status --json=maybe", Parse: cmdtest.Parse(newSupNoun, NewCmdStatus, "status", "--json=maybe"), Code: 2},

		{Name: "restart defaults", Parse: cmdtest.Parse(newSupNoun, NewCmdRestart, "restart", "api"),
			Want: RestartOptions{ProjectOptions: def, Names: []string{"api"}}},
		{Name: "restart --force --timeout 5s --json", Parse: cmdtest.Parse(newSupNoun, NewCmdRestart, "restart", "api", "w", "--force", "--timeout", "5s", "--json"),
			Want: RestartOptions{ProjectOptions: def, Names: []string{"api", "w"}, Force: true, Timeout: 5 * time.Second, JSON: true}},
		{Name: "restart needs a name", Parse: cmdtest.Parse(newSupNoun, NewCmdRestart, "restart"), Code: 2, Stderr: "requires at least 1 arg"},

		{Name: "scale defaults", Parse: cmdtest.Parse(newSupNoun, NewCmdScale, "scale", "web", "3"),
			Want: ScaleOptions{ProjectOptions: def, Name: "web", Replicas: 3}},
		{Name: "scale --force --timeout 2s --json", Parse: cmdtest.Parse(newSupNoun, NewCmdScale, "scale", "web", "0", "--force", "--timeout", "2s", "--json"),
			Want: ScaleOptions{ProjectOptions: def, Name: "web", Force: true, Timeout: 2 * time.Second, JSON: true}},
		{Name: "scale a negative count", Parse: cmdtest.Parse(newSupNoun, NewCmdScale, "scale", "web", "-1"), Code: 2},
		{Name: "scale needs NAME and N", Parse: cmdtest.Parse(newSupNoun, NewCmdScale, "scale", "web"), Code: 2},

		{Name: "reload defaults", Parse: cmdtest.Parse(newSupNoun, NewCmdReload, "reload"), Want: ReloadOptions{ProjectOptions: def}},
		{Name: "reload --dry-run --json", Parse: cmdtest.Parse(newSupNoun, NewCmdReload, "reload", "--dry-run", "--json"),
			Want: ReloadOptions{ProjectOptions: def, DryRun: true, JSON: true}},
		{Name: "reload takes no names", Parse: cmdtest.Parse(newSupNoun, NewCmdReload, "reload", "api"), Code: 2},

		{Name: "logs defaults", Parse: cmdtest.Parse(newSupNoun, NewCmdLogs, "logs"),
			Want: LogsOptions{ProjectOptions: def, Names: []string{}, Lines: 20}},
		{Name: "logs -n -f", Parse: cmdtest.Parse(newSupNoun, NewCmdLogs, "logs", "api", "-n", "100", "-f"),
			Want: LogsOptions{ProjectOptions: def, Names: []string{"api"}, Lines: 100, Follow: true}},
		{Name: "logs --lines negative", Parse: cmdtest.Parse(newSupNoun, NewCmdLogs, "logs", "-n", "-1"), Code: 2, Stderr: "--lines must not be negative"},
		{Name: "logs a path for a name", Parse: cmdtest.Parse(newSupNoun, NewCmdLogs, "logs", "../../etc/passwd"), Code: 2},
		{Name: "stop a path for a name", Parse: cmdtest.Parse(newSupNoun, NewCmdStop, "stop", "../x"), Code: 2},
		{Name: "start a name with a slash", Parse: cmdtest.Parse(newSupNoun, NewCmdStart, "start", "a/b"), Code: 2},
		{Name: "status an empty name", Parse: cmdtest.Parse(newSupNoun, NewCmdStatus, "status", ""), Code: 2},
		{Name: "restart a dot name", Parse: cmdtest.Parse(newSupNoun, NewCmdRestart, "restart", ".."), Code: 2},
		{Name: "logs --lines not a number", Parse: cmdtest.Parse(newSupNoun, NewCmdLogs, "logs", "--lines", "many"), Code: 2},

		{Name: "export systemd defaults", Parse: cmdtest.Parse(newSupNoun, NewCmdExportSystemd, "systemd"),
			Want: ExportSystemdOptions{ProjectOptions: def}},
		{Name: "export systemd --out", Parse: cmdtest.Parse(newSupNoun, NewCmdExportSystemd, "systemd", "--out", "units"),
			Want: ExportSystemdOptions{ProjectOptions: def, OutDir: "units"}},
		{Name: "export systemd takes no args", Parse: cmdtest.Parse(newSupNoun, NewCmdExportSystemd, "systemd", "x"), Code: 2},
		{Name: "export nomad defaults", Parse: cmdtest.Parse(newSupNoun, NewCmdExportNomad, "nomad"),
			Want: ExportNomadOptions{ProjectOptions: def}},
		{Name: "export nomad --out --job", Parse: cmdtest.Parse(newSupNoun, NewCmdExportNomad, "nomad", "--out", "j.hcl", "--job", "shop"),
			Want: ExportNomadOptions{ProjectOptions: def, OutFile: "j.hcl", Job: "shop"}},
		{Name: "export compose defaults", Parse: cmdtest.Parse(newSupNoun, NewCmdExportCompose, "compose"),
			Want: ExportComposeOptions{ProjectOptions: def}},
		{Name: "export compose --out --name --image", Parse: cmdtest.Parse(newSupNoun, NewCmdExportCompose, "compose", "--out", "c.yaml", "--name", "shop", "--image", "shop:1"),
			Want: ExportComposeOptions{ProjectOptions: def, OutFile: "c.yaml", Name: "shop", Image: "shop:1"}},

		{Name: "import supervisord -o", Parse: cmdtest.Parse(newSupNoun, NewCmdImport, "import", "supervisord", "s.conf", "-o", "ops.yaml"),
			Want: ImportOptions{Format: "supervisord", File: "s.conf", OutFile: "ops.yaml"}},
		{Name: "import process-compose to stdout", Parse: cmdtest.Parse(newSupNoun, NewCmdImport, "import", "process-compose", "pc.yaml"),
			Want: ImportOptions{Format: "process-compose", File: "pc.yaml"}},
		{Name: "import unknown format", Parse: cmdtest.Parse(newSupNoun, NewCmdImport, "import", "procfile", "Procfile"), Code: 2, Stderr: `unknown format "procfile"`},
		{Name: "import needs a file", Parse: cmdtest.Parse(newSupNoun, NewCmdImport, "import", "supervisord"), Code: 2},

		{Name: "monitor", Parse: cmdtest.Parse(newSupNoun, NewCmdMonitor, monitorVerb), Want: MonitorOptions{}},
		{Name: "monitor takes no args", Parse: cmdtest.Parse(newSupNoun, NewCmdMonitor, monitorVerb, "x"), Code: 2},
	})
}

// TestArgv_HomeFromOpsHome: $OPS_HOME wins over $DEVKIT_HOME, as the
// supervisor's DefaultHome says.
func TestArgv_HomeFromOpsHome(t *testing.T) {
	ops := t.TempDir()
	t.Setenv("OPS_HOME", ops)
	t.Setenv("DEVKIT_HOME", t.TempDir())
	r := cmdtest.Run(cmdtest.Factory(nil), newSupNoun, NewCmdStatus, "status")
	if r.Code != 0 || r.Opts == nil || r.Opts.Home != ops {
		t.Fatalf("exit %d, options %+v; want Home %s", r.Code, r.Opts, ops)
	}
}

// TestArgv_SupervisorFromFactory: the supervisor a verb opens is the
// factory's, with the home, project and config the options name and the
// running executable as the monitor command.
func TestArgv_SupervisorFromFactory(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "ops.yaml")
	if err := os.WriteFile(cfgPath, []byte("processes:\n  api:\n    command: sleep\n    args: [\"60\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPS_HOME", filepath.Join(dir, "home"))
	f := cmdtest.Factory(map[string]string{projectEnv: "shop"})
	f.Executable = func() (string, error) { return "/opt/devkit", nil }
	var gotHome string
	var gotCfg *supervisor.Config
	var gotOpts supervisor.Options
	f.Supervisor = func(home string, cfg *supervisor.Config, o supervisor.Options) (*supervisor.Supervisor, error) {
		gotHome, gotCfg, gotOpts = home, cfg, o
		return supervisor.New(home, cfg, o)
	}
	r := cmdtest.Run(f, newSupNoun, NewCmdStart, "-c", cfgPath, "start", "api")
	if r.Code != 0 || r.Opts == nil {
		t.Fatalf("exit %d %q", r.Code, r.Stderr)
	}
	s, err := r.Opts.Sup(true)
	if err != nil {
		t.Fatal(err)
	}
	if gotHome != filepath.Join(dir, "home") || gotCfg == nil || len(gotCfg.Order) != 1 || gotOpts.Project != "shop" || s.Project() != "shop" {
		t.Errorf("factory got home %q, config %+v, project %q", gotHome, gotCfg, gotOpts.Project)
	}
	if want := []string{"/opt/devkit", "sup", monitorVerb}; !slices.Equal(gotOpts.MonitorCommand, want) {
		t.Errorf("monitor command %v, want %v", gotOpts.MonitorCommand, want)
	}
}
