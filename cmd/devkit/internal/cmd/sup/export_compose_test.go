//go:build unix

// Unix only: the config runs sh and names Unix paths.

package sup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// composeStack exercises every field the compose export carries. INJECT
// is interpolated into an env value, an exec probe and a shell script.
const composeStack = `
processes:
  migrate:
    command: ./migrate
    oneshot: true
  db:
    command: redis-server
    args: ["--port", "6390"]
    ready: {tcp: "127.0.0.1:6390", timeout: 10s}
    health: {every: 5s}
    restart: {policy: always, max_restarts: 3, backoff: 1s}
    stop_signal: INT
    resources: {memory_max: 512MB, cpu_max: 1.5}
  api:
    command: ./bin/api
    env: {INJECT: "${INJECT}", PORT: "8080"}
    ready: {http: "http://127.0.0.1:8080/healthz"}
    health: {every: 15s, failures: 4}
    restart: {policy: on-failure, max_restarts: 2}
    replicas: 2
    log_max_size: 1MB
    log_backups: 2
    shutdown: {command: "kill -TERM $DEVKIT_SUP_PID", signal: QUIT, timeout: 5s}
    depends_on:
      - {name: db, condition: healthy}
      - migrate
    watch: [src]
  worker:
    command: sh
    args: ["-c", "echo '${INJECT}'; exec sleep 300"]
    ready: {exec: "test -n \"${INJECT}\""}
    depends_on:
      - {name: api, condition: started}
    restart_with_dependencies: true
  console:
    command: ./console
    disabled: true
`

// loadCompose reads data with the compose specification's own loader
// (schema validation, interpolation, consistency checks included).
func loadCompose(t *testing.T, dir string, data []byte, env map[string]string) (*types.Project, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return loader.LoadWithContext(ctx, types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "compose.yaml"), Content: data}},
		Environment: env,
	})
}

func TestSup_ExportComposeLoadsWithComposeSpecLoader(t *testing.T) {
	// A value that tries to add a service and a key through YAML, and
	// compose interpolation and shell syntax through its "$".
	inject := "x\"\n  evil:\n    image: pwned\n'${HOME}' $(touch PWNED) $$ # not a comment: {a: b}"
	t.Setenv("INJECT", inject)
	e := newEnv(t, composeStack)
	if err := os.Mkdir(filepath.Join(e.dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, _ := e.must(0, "export", "compose", "--name", "Shop.Stack")
	data := []byte(out)

	// The default image is a variable compose requires.
	if _, err := loadCompose(t, e.dir, data, map[string]string{}); err == nil || !strings.Contains(err.Error(), "DEVKIT_SUP_IMAGE") {
		t.Fatalf("load without DEVKIT_SUP_IMAGE: %v, want an error naming it", err)
	}
	proj, err := loadCompose(t, e.dir, data, map[string]string{"DEVKIT_SUP_IMAGE": "shop:1", "HOME": "/home/x"})
	if err != nil {
		t.Fatalf("compose-go refused the export: %v\n%s", err, out)
	}
	if proj.Name != "shop-stack" {
		t.Errorf("project name %q, want shop-stack", proj.Name)
	}
	want := []string{"api.1", "api.2", "db", "migrate", "worker"} // console: profile "disabled"
	if got := proj.ServiceNames(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("services %v, want %v (disabled %v)\n%s", got, want, proj.DisabledServiceNames(), out)
	}
	if d := proj.DisabledServiceNames(); len(d) != 1 || d[0] != "console" {
		t.Errorf("disabled services %v, want [console]", d)
	}
	svc := func(name string) types.ServiceConfig {
		s, err := proj.GetService(name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	api := svc("api.2")
	if v := api.Environment["INJECT"]; v == nil || *v != inject {
		t.Errorf("INJECT reads back as %q, want %q", deref(v), inject)
	}
	if v := api.Environment["PORT"]; v == nil || *v != "8081" || api.Image != "shop:1" || api.NetworkMode != "host" {
		t.Errorf("api.2: PORT %q image %q network %q", deref(v), api.Image, api.NetworkMode)
	}
	if got := strings.Join(api.Entrypoint, " "); got != filepath.Join(e.dir, "bin/api") {
		t.Errorf("api entrypoint %q", got)
	}
	if c := api.DependsOn["db"].Condition; c != types.ServiceConditionHealthy {
		t.Errorf("api depends_on db: %q, want service_healthy", c)
	}
	if c := api.DependsOn["migrate"].Condition; c != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("api depends_on migrate: %q, want service_completed_successfully", c)
	}
	if h := api.HealthCheck; h == nil || strings.Join(h.Test, " ") != "CMD curl -fsS -o /dev/null http://127.0.0.1:8080/healthz" || *h.Retries != 4 || time.Duration(*h.Interval) != 15*time.Second {
		t.Errorf("api healthcheck: %+v", h)
	}
	if api.Restart != "on-failure:2" || api.StopSignal != "SIGQUIT" || len(api.PreStop) != 1 {
		t.Errorf("api restart %q stop_signal %q pre_stop %+v", api.Restart, api.StopSignal, api.PreStop)
	}
	if api.Logging == nil || api.Logging.Options["max-size"] != "1000000" || api.Logging.Options["max-file"] != "3" {
		t.Errorf("api logging: %+v", api.Logging)
	}
	if api.Develop == nil || len(api.Develop.Watch) != 1 || api.Develop.Watch[0].Action != types.WatchActionRestart {
		t.Errorf("api develop: %+v", api.Develop)
	}
	db := svc("db")
	if db.Restart != "unless-stopped" || db.StopSignal != "SIGINT" || db.HealthCheck == nil || db.HealthCheck.Test[0] != "CMD" {
		t.Errorf("db: restart %q stop_signal %q healthcheck %+v", db.Restart, db.StopSignal, db.HealthCheck)
	}
	if db.MemLimit != 512e6 || db.MemSwapLimit != 512e6 || db.CPUS != 1.5 {
		t.Errorf("db: mem_limit %d memswap_limit %d cpus %v", db.MemLimit, db.MemSwapLimit, db.CPUS)
	}
	if m := svc("migrate"); m.Restart != "no" || m.HealthCheck != nil {
		t.Errorf("migrate: restart %q healthcheck %+v", m.Restart, m.HealthCheck)
	}
	w := svc("worker")
	if d := w.DependsOn["api.1"]; d.Condition != types.ServiceConditionStarted || !d.Restart {
		t.Errorf("worker depends_on api.1: %+v", d)
	}
	// The script and the probe refer to the value; they never contain it.
	script, probe := w.Entrypoint[len(w.Entrypoint)-1], w.HealthCheck.Test[1]
	if script != "echo '${DEVKIT_SUP_VAR_INJECT}'; exec sleep 300" || probe != `test -n "${DEVKIT_SUP_VAR_INJECT}"` {
		t.Errorf("worker script %q probe %q", script, probe)
	}
	if v := w.Environment["DEVKIT_SUP_VAR_INJECT"]; v == nil || *v != inject {
		t.Errorf("worker DEVKIT_SUP_VAR_INJECT = %q", deref(v))
	}
	if !strings.Contains(out, "# Not carried, or carried in part:") {
		t.Errorf("no header of what is not carried:\n%s", out)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
