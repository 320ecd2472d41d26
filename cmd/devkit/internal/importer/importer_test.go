package importer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor"
)

// convert runs fn on a testdata file and parses its output back with the
// supervisor's own config parser: an import is only good if devkit sup reads it.
func convert(t *testing.T, name string, fn func(string, []byte) (*Result, error)) (*supervisor.Config, *Result) {
	t.Helper()
	path := filepath.Join("testdata", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fn(path, data)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ops.yaml")
	env := map[string]string{"HOME": "/home/ada"}
	cfg, err := supervisor.ParseConfig(out, res.YAML, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("the supervisor refuses the import: %v\n%s", err, res.YAML)
	}
	return cfg, res
}

// hasWarning reports whether some warning holds every part.
func hasWarning(ws []string, parts ...string) bool {
	return slices.ContainsFunc(ws, func(w string) bool {
		for _, p := range parts {
			if !strings.Contains(w, p) {
				return false
			}
		}
		return true
	})
}

func TestSupervisord_RealConfigConvertsAndParsesBack(t *testing.T) {
	cfg, res := convert(t, "supervisord.conf", Supervisord)
	if got := cfg.Order; !slices.Equal(slices.Sorted(slices.Values(got)), []string{"cron", "web", "worker"}) {
		t.Fatalf("processes %v, want cron, web, worker", got)
	}
	web := cfg.Processes["web"]
	wantArgs := []string{"--bind", "127.0.0.1:8000", "--workers", "4", "app.wsgi:application"}
	if web.Command != "/srv/app/bin/gunicorn" || !slices.Equal(web.Args, wantArgs) {
		t.Errorf("web runs %q %q, want gunicorn %q (split as supervisord's shlex does)", web.Command, web.Args, wantArgs)
	}
	if web.Cwd != "/srv/app" || web.StopSignal != "INT" || web.StopTimeout != 20*time.Second {
		t.Errorf("web cwd %q stop %s after %s, want /srv/app, INT, 20s", web.Cwd, web.StopSignal, web.StopTimeout)
	}
	if web.Env["DJANGO_SETTINGS_MODULE"] != "app.settings.prod" || web.Env["PYTHONUNBUFFERED"] != "1" || web.Env["HOME"] != "/home/ada" {
		t.Errorf("web env %v: want the three variables, HOME from %%(ENV_HOME)s", web.Env)
	}
	if web.Restart.Mode != supervisor.RestartAlways || web.Restart.MaxRestarts != 3 {
		t.Errorf("web restart %+v, want always, at most 3", web.Restart)
	}
	if web.LogFile != "/var/log/app/web.log" || web.LogMaxSize != 20<<20 || web.LogBackups != 5 {
		t.Errorf("web log %q %d %d, want /var/log/app/web.log, 20 MiB (supervisord's MB), 5", web.LogFile, web.LogMaxSize, web.LogBackups)
	}
	worker := cfg.Processes["worker"]
	if worker.Args[len(worker.Args)-1] != "--concurrency=2" {
		t.Errorf("worker args %q: the continuation line is lost", worker.Args)
	}
	if worker.Restart.Mode != supervisor.RestartOnFailure {
		t.Errorf("worker restart %s, want on-failure (autorestart=unexpected)", worker.Restart.Mode)
	}
	cron := cfg.Processes["cron"]
	if cron.Command != "/bin/sh" || len(cron.Args) != 2 || !strings.HasPrefix(cron.Args[1], "while true;") {
		t.Errorf("cron runs %q %q", cron.Command, cron.Args)
	}
	if cron.Restart.Mode != supervisor.RestartNever {
		t.Errorf("cron restart %s, want never", cron.Restart.Mode)
	}
	// Nothing without an equivalent goes unreported.
	for _, w := range [][]string{
		{"[supervisord]", "no equivalent"}, {"[unix_http_server]"}, {"[supervisorctl]"}, {"[rpcinterface:supervisor]"},
		{"[program:web] user", "www-data"}, {"[program:web] startsecs"}, {"[program:web] priority"},
		{"[program:worker] numprocs", "2 copies"}, {"[program:worker] process_name"},
		{"[program:worker] exitcodes", "0,2"}, {"[program:worker] stderr_logfile", "worker.err"}, {"[program:worker] umask"},
		{"[program:cron] autostart"}, {"[program:cron] stdout_logfile", "NONE"},
		{"[group:app]", "web,worker"}, {"[include]", "conf.d"},
	} {
		if !hasWarning(res.Warnings, w...) {
			t.Errorf("no warning with %q among:\n%s", w, strings.Join(res.Warnings, "\n"))
		}
	}
	if hasWarning(res.Warnings, "[program:web] stopasgroup") || hasWarning(res.Warnings, "[program:web] redirect_stderr") {
		t.Errorf("a warning for a setting devkit honours:\n%s", strings.Join(res.Warnings, "\n"))
	}
}

func TestProcessCompose_RealConfigConvertsAndParsesBack(t *testing.T) {
	cfg, res := convert(t, "process-compose.yaml", ProcessCompose)
	if want := []string{"postgres", "migrate", "api", "frontend"}; !slices.Equal(cfg.Order, want) {
		t.Fatalf("order %v, want %v (from depends_on)", cfg.Order, want)
	}
	pg := cfg.Processes["postgres"]
	if pg.Command != "bash" || !slices.Equal(pg.Args, []string{"-c", "postgres -D ./data/pg -p 5433"}) {
		t.Errorf("postgres runs %q %q, want it under bash -c as process-compose runs it", pg.Command, pg.Args)
	}
	if pg.Env["APP_ENV"] != "dev" || pg.Env["PGDATA"] != "./data/pg" {
		t.Errorf("postgres env %v: want the global and its own", pg.Env)
	}
	if pg.Ready == nil || pg.Ready.Exec != "pg_isready -h 127.0.0.1 -p 5433" || pg.Ready.Interval != time.Second || pg.Ready.Timeout != 22*time.Second {
		t.Errorf("postgres ready %+v, want the exec probe every 1s for 2s + 20 × 1s", pg.Ready)
	}
	if pg.StopSignal != "INT" || pg.StopTimeout != 30*time.Second {
		t.Errorf("postgres stops with %s after %s, want INT (signal 2) after 30s", pg.StopSignal, pg.StopTimeout)
	}
	if pg.Restart.Mode != supervisor.RestartOnFailure || pg.Restart.MaxRestarts != 5 || pg.Restart.Backoff != 2*time.Second {
		t.Errorf("postgres restart %+v", pg.Restart)
	}
	migrate := cfg.Processes["migrate"]
	if !migrate.Oneshot || !strings.HasSuffix(migrate.Cwd, filepath.Join("", "backend")) {
		t.Errorf("migrate oneshot %v cwd %q: api waits for it to complete, so it is a oneshot", migrate.Oneshot, migrate.Cwd)
	}
	api := cfg.Processes["api"]
	if api.Ready == nil || api.Ready.HTTP != "http://127.0.0.1:8080/healthz" {
		t.Errorf("api ready %+v, want http://127.0.0.1:8080/healthz", api.Ready)
	}
	if api.Health == nil || api.Health.Every != 10*time.Second || api.Health.Failures != 3 {
		t.Errorf("api health %+v, want the liveness probe every 10s, 3 failures", api.Health)
	}
	if !slices.Equal(api.DependsOn, []string{"migrate"}) || api.Restart.Mode != supervisor.RestartAlways {
		t.Errorf("api depends on %v restart %s", api.DependsOn, api.Restart.Mode)
	}
	fe := cfg.Processes["frontend"]
	if fe.Ready == nil || fe.Ready.LogPattern != "ready in" {
		t.Errorf("frontend ready %+v, want the log line", fe.Ready)
	}
	for _, w := range [][]string{
		{"log_level"}, {"log_location"},
		{"processes.postgres.readiness_probe.timeout_seconds"}, {"processes.postgres.readiness_probe.success_threshold"},
		{"processes.api.replicas"}, {"processes.api.namespace"},
		{"processes.frontend.depends_on.api", "process_started"}, {"processes.frontend.is_daemon"},
		{"processes.frontend.shutdown.command"}, {"processes.frontend.availability.restart", "exit_on_failure"},
	} {
		if !hasWarning(res.Warnings, w...) {
			t.Errorf("no warning with %q among:\n%s", w, strings.Join(res.Warnings, "\n"))
		}
	}
	if hasWarning(res.Warnings, "description") {
		t.Error("a warning for description, which changes nothing")
	}
}

func TestImport_BrokenInputIsAnErrorNamingTheFile(t *testing.T) {
	for name, c := range map[string]struct {
		fn   func(string, []byte) (*Result, error)
		data string
		want string
	}{
		"no program":         {Supervisord, "[supervisord]\nnodaemon=true\n", "no [program:x]"},
		"no command":         {Supervisord, "[program:a]\ndirectory=/\n", "no command"},
		"bad autorestart":    {Supervisord, "[program:a]\ncommand=x\nautorestart=sometimes\n", "autorestart"},
		"unterminated quote": {Supervisord, "[program:a]\ncommand=x\nenvironment=A=\"b\n", "environment"},
		"pc not a mapping":   {ProcessCompose, "- a\n", "want a mapping"},
		"pc no command":      {ProcessCompose, "processes:\n  a:\n    working_dir: /\n", "processes.a: no command"},
		"pc unknown dep":     {ProcessCompose, "processes:\n  a:\n    command: x\n    depends_on:\n      b:\n        condition: process_completed_successfully\n", `"b"`},
		"pc bad env":         {ProcessCompose, "processes:\n  a:\n    command: x\n    environment: [NOEQUALS]\n", "NOEQUALS"},
	} {
		_, err := c.fn("in.conf", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "in.conf: ") {
			t.Errorf("%s: error %v, want one starting with the file and naming %q", name, err, c.want)
		}
	}
}
