//go:build unix

package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDependsOn_StartedStartsBeforeTheDependencyIsReady(t *testing.T) {
	h := newHarness(t, `
processes:
  db:
    command: sh
    args: ["-c", "while [ ! -e go ]; do sleep 0.02; done; echo ready; exec sleep 300"]
    ready: {log: ready, timeout: 30s}
  api:
    command: sh
    args: ["-c", "touch api-started; exec sleep 300"]
    depends_on: [{name: db, condition: started}]
  report:
    command: sh
    args: ["-c", "touch report-started; exec sleep 300"]
    depends_on: [db]
`)
	for _, n := range []string{"db", "api", "report"} {
		h.sup.cfg.Processes[n].Cwd = h.dir
	}
	done := make(chan error, 1)
	go func() {
		res, err := h.sup.Start(context.Background(), []string{"api", "report"})
		_ = res // the harness's cleanup stops what the records name
		done <- err
	}()
	exists := func(f string) bool { _, err := os.Stat(filepath.Join(h.dir, f)); return err == nil }
	eventually(t, 20*time.Second, "api starts while db is not ready", func() bool { return exists("api-started") })
	if exists("report-started") {
		t.Fatal("report (depends_on: [db], condition ready) started before db was ready")
	}
	if err := os.WriteFile(filepath.Join(h.dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Started means spawned and alive after the grace: on a loaded machine
	// sh may not have run its touch yet.
	eventually(t, 20*time.Second, "report starts once db is ready", func() bool { return exists("report-started") })
}

func TestDependsOn_HealthyWaitsForTheFirstPassingHealthCheck(t *testing.T) {
	h := newHarness(t, `
processes:
  db:
    command: sh
    args: ["-c", "echo up; exec sleep 300"]
    ready: {exec: "true", timeout: 10s}
    health: {every: 200ms, failures: 3}
  api:
    command: sh
    args: ["-c", "exec sleep 300"]
    depends_on:
      - name: db
        condition: healthy
`)
	res := h.start("api")
	if len(res) != 2 || res[1].Name != "api" {
		t.Fatalf("start api: %+v", res)
	}
	hr, err := h.sup.home.ReadHealth("db")
	if err != nil || hr == nil || !hr.Healthy || hr.PID != res[0].PID {
		t.Fatalf("api started before db's health check passed: %+v %v", hr, err)
	}
}

func TestDependsOn_ConditionErrorsNameFileLineAndField(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"processes:\n  db: {command: db}\n  api:\n    command: api\n    depends_on: [{name: db, condition: completed_successfully}]\n",
			"ops.yaml:5: processes.api.depends_on[0].condition: completed_successfully needs db to be oneshot: true"},
		{"processes:\n  db: {command: db}\n  api:\n    command: api\n    depends_on:\n      - {name: db, condition: healthy}\n",
			"ops.yaml:6: processes.api.depends_on[0].condition: healthy needs a health check on db"},
		{"processes:\n  db: {command: db}\n  api:\n    command: api\n    depends_on: [{name: db, condition: soon}]\n",
			`ops.yaml:5: processes.api.depends_on[0].condition: "soon" is not a condition`},
		{"processes:\n  db: {command: db}\n  api:\n    command: api\n    depends_on: [{condition: started}]\n",
			"ops.yaml:5: processes.api.depends_on[0].name: missing"},
	} {
		_, err := ParseConfig("ops.yaml", []byte(c.yaml), func(string) (string, bool) { return "", false })
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.yaml, err, c.want)
		}
	}
	// The list of names stays valid and means ready.
	cfg, err := ParseConfig("ops.yaml", []byte("processes:\n  db: {command: db}\n  api: {command: api, depends_on: [db]}\n"), os.LookupEnv)
	if err != nil || cfg.Processes["api"].Condition("db") != DependsReady {
		t.Fatalf("list form: %v", err)
	}
}
