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

const nomadTestConfig = `
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
    resources: {memory_max: 512MiB, cpu_max: 1.5}
  seed:
    command: ./seed
    oneshot: true
    depends_on: [db]
  api:
    command: /srv/api
    env: {GREETING: "hi \"there\" $${HOME} 100%", "bad.name": x}
    ready: {http: "http://127.0.0.1:8080/healthz"}
    health: {every: 15s, failures: 3}
    restart: on-failure
    depends_on: [db, migrate]
  worker:
    command: /srv/worker
    ready:
      exec: |
        # a multi-line script check
        test -e /tmp
    depends_on: [seed]
`

func TestNomadJob_ParsesAgainstNomadsJobSchema(t *testing.T) {
	dir := t.TempDir()
	cfg, err := ParseConfig(filepath.Join(dir, "ops.yaml"), []byte(nomadTestConfig), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	src := cfg.NomadJob("shop")
	job := parseNomadJob(t, src)
	if job.Name != "shop" || len(job.Groups) != 1 || len(job.Groups[0].Tasks) != 5 {
		t.Fatalf("want job shop with one group of five tasks:\n%s", src)
	}
	tasks := map[string]nomadTaskSpec{}
	for _, task := range job.Groups[0].Tasks {
		tasks[task.Name] = task
	}
	hook := func(name string) string {
		if l := tasks[name].Lifecycle; l != nil {
			return l.Hook
		}
		return ""
	}
	// A oneshot that needs nothing long-running completes before the main
	// tasks; one that depends on a service must not run before it.
	if hook("migrate") != "prestart" || hook("seed") != "poststart" || hook("db") != "" || hook("api") != "" {
		t.Errorf("lifecycle hooks: migrate %q seed %q db %q api %q\n%s", hook("migrate"), hook("seed"), hook("db"), hook("api"), src)
	}
	env, diags := tasks["api"].Env.Body.JustAttributes()
	if diags.HasErrors() || env["GREETING"] == nil {
		t.Fatalf("api env: %v %v", env, diags)
	}
	if v, diags := env["GREETING"].Expr.Value(nil); diags.HasErrors() || v.AsString() != `hi "there" ${HOME} 100%` {
		t.Errorf("GREETING reads back as %#v (%v)", v, diags)
	}
	if r := tasks["db"].Resources; r == nil || r.Memory == nil || *r.Memory != 512 {
		t.Errorf("db resources: %+v", r)
	}
	if r := tasks["db"].Restart; r == nil || *r.Attempts != 3 || *r.Delay != "1s" || *r.Mode != "fail" {
		t.Errorf("db restart: %+v", r)
	}
	checks := func(name string) []nomadCheckSpec {
		if ss := tasks[name].Services; len(ss) == 1 {
			return ss[0].Checks
		}
		return nil
	}
	if c := checks("db"); len(c) != 1 || c[0].Type != "tcp" {
		t.Errorf("db checks: %+v", c)
	}
	if c := checks("api"); len(c) != 1 || c[0].Type != "http" || *c[0].Path != "/healthz" || c[0].Interval != "15s" || c[0].CheckRestart == nil || *c[0].CheckRestart.Limit != 3 {
		t.Errorf("api checks: %+v", c)
	}
	if c := checks("worker"); len(c) != 1 || c[0].Type != "script" || len(c[0].Args) != 2 || !strings.Contains(c[0].Args[1], "# a multi-line script check\n") {
		t.Errorf("worker checks: %+v", c)
	}
	for _, want := range []string{"# depends_on seed: Nomad starts main and poststart tasks without waiting", `# "bad.name": not an HCL identifier`} {
		if !strings.Contains(src, want) {
			t.Errorf("job lacks %q:\n%s", want, src)
		}
	}
}
