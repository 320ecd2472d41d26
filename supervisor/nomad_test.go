//go:build unix

// Unix only: the Nomad job runs tasks through /bin/sh and the test names
// Unix absolute paths, which Windows would resolve against the project.

package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNomadJob_OneGroupOfRawExecTasksWithRestartAndChecks(t *testing.T) {
	dir := t.TempDir()
	yaml := `
processes:
  migrate:
    command: ./migrate
    oneshot: true
  db:
    command: /usr/bin/redis-server
    args: ["--port", "6379"]
    ready: {tcp: "127.0.0.1:6379", timeout: 10s}
    restart: {policy: always, max_restarts: 3, backoff: 1s}
    stop_signal: INT
  api:
    command: /srv/api
    env: {GREETING: "hi \"there\" $${HOME} 100%"}
    ready: {http: "http://127.0.0.1:8080/healthz"}
    health: {every: 15s, failures: 3}
    depends_on: [db, migrate]
`
	cfg, err := ParseConfig(filepath.Join(dir, "ops.yaml"), []byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	job := cfg.NomadJob("shop")
	for _, want := range []string{
		`job "shop" {`, `group "shop" {`,
		`task "db" {`, `driver = "raw_exec"`, `args    = ["-c", "cd \"$0\" && exec \"$@\"", "` + dir + `", "/usr/bin/redis-server", "--port", "6379"]`,
		`kill_signal  = "SIGINT"`, "attempts = 3", `delay    = "1s"`,
		`port "db" {` + "\n        static = 6379", `port "api" {` + "\n        static = 8080",
		`type     = "tcp"`, `type     = "http"`, `path     = "/healthz"`, `interval = "15s"`,
		// HCL escapes, and no Nomad interpolation of a literal ${HOME}.
		`"GREETING" = "hi \"there\" $${HOME} 100%"`,
		"lifecycle {\n        hook    = \"prestart\"",
		"# depends_on: db, migrate",
	} {
		if !strings.Contains(job, want) {
			t.Errorf("job lacks %q:\n%s", want, job)
		}
	}
	if strings.Count(job, "group \"") != 1 || strings.Count(job, "task \"") != 3 {
		t.Errorf("want one group with three tasks:\n%s", job)
	}
}
