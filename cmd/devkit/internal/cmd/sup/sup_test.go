package sup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

// The test binary doubles as the monitor: newSupervisor re-executes
// os.Executable() as "sup __monitor", exactly as the devkit binary does.
// With SUP_TEST_CLI=1 it is the devkit CLI itself, so tests can race
// separate CLI processes.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "sup" && os.Args[2] == monitorVerb {
		os.Exit(supervisor.RunMonitor(os.Stdin, os.Stdout))
	}
	if os.Getenv("SUP_TEST_CLI") == "1" {
		os.Exit(runCLI(cmdutil.System(), os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runCLI runs `devkit args...` with the sup noun, as cmd.Main does.
func runCLI(ios *cmdutil.IOStreams, args []string) int {
	root := &cobra.Command{Use: "devkit", SilenceUsage: true, SilenceErrors: true}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return cmdutil.UsageError(err) })
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	root.AddCommand(NewCmd(cmdutil.NewFactory(ios)))
	root.SetArgs(args)
	err := root.Execute()
	var ee *cmdutil.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.Silent) {
		fmt.Fprintf(ios.ErrOut, "devkit: %v\n", err)
	}
	return cmdutil.ExitCode(err)
}

// env is one test's devkit home and config directory.
type env struct {
	t   *testing.T
	dir string
}

// newEnv points DEVKIT_HOME at a fresh directory, writes yaml as the
// config and force-stops everything at the end of the test.
func newEnv(t *testing.T, yaml string) *env {
	t.Helper()
	t.Setenv("OPS_HOME", "")
	t.Setenv("DEVKIT_HOME", t.TempDir())
	t.Setenv(configEnv, "")
	e := &env{t: t, dir: t.TempDir()}
	e.write(yaml)
	t.Cleanup(func() { e.run("stop", "--all", "--force", "--timeout", "200ms") })
	return e
}

func (e *env) config() string { return filepath.Join(e.dir, "ops.yaml") }

func (e *env) write(yaml string) {
	if err := os.WriteFile(e.config(), []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// run executes `devkit sup -c <config> args...` in-process, as cmd.Main
// would, and returns stdout, stderr and the exit code.
func (e *env) run(args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := runCLI(ios, append([]string{"sup", "-c", e.config()}, args...))
	return out.String(), errOut.String(), code
}

// must runs args and fails the test unless the exit code is want.
func (e *env) must(want int, args ...string) (string, string) {
	e.t.Helper()
	out, errOut, code := e.run(args...)
	if code != want {
		e.t.Fatalf("sup %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out, errOut
}

func (e *env) statusJSON(names ...string) supervisor.StatusReport {
	e.t.Helper()
	out, _, _ := e.run(append([]string{"status", "--json"}, names...)...)
	var rep supervisor.StatusReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		e.t.Fatalf("status --json: %v\n%s", err, out)
	}
	return rep
}

const twoProcs = `
processes:
  db:
    command: sh
    args: ["-c", "echo db up; exec sleep 300"]
  api:
    command: sh
    args: ["-c", "echo api $GREETING; exec sleep 300"]
    env: {GREETING: "${GREETING:-hello}"}
    depends_on: [db]
`

func TestSup_StartStatusStopAndExitCodes(t *testing.T) {
	e := newEnv(t, twoProcs)
	out, _ := e.must(0, "start", "api")
	if !strings.Contains(out, "db: started") || !strings.Contains(out, "api: started") || strings.Index(out, "db:") > strings.Index(out, "api:") {
		t.Fatalf("start output (want db then api):\n%s", out)
	}
	out, _ = e.must(0, "status")
	if !strings.Contains(out, "NAME") || strings.Count(out, "running") != 2 {
		t.Fatalf("status table:\n%s", out)
	}
	rep := e.statusJSON()
	if rep.Schema != supervisor.StatusSchema || len(rep.Processes) != 2 || rep.Processes[0].Name != "db" || rep.Processes[1].State != supervisor.StateRunning || rep.Processes[1].PID == 0 {
		t.Fatalf("status --json = %+v", rep)
	}
	_, errOut := e.must(1, "start", "api") // double start is refused
	if !strings.Contains(errOut, "already running") {
		t.Fatalf("double start stderr: %s", errOut)
	}
	e.must(0, "start", "--all") // --all leaves running processes alone
	out, _ = e.must(0, "logs", "api", "-n", "1")
	if out != "api hello\n" {
		t.Fatalf("logs -n 1 = %q", out)
	}
	out, _ = e.must(0, "stop", "--all")
	if strings.Index(out, "api: stopped") > strings.Index(out, "db: stopped") || !strings.Contains(out, "db: stopped") {
		t.Fatalf("stop output (want api then db):\n%s", out)
	}
	e.must(3, "status")         // nothing runs: negative answer
	e.must(3, "status", "nope") // unknown process
	e.must(0, "stop", "api")    // stopping a stopped process is fine
	e.must(2, "start")          // neither names nor --all
	e.must(2, "start", "api", "--all")
	e.must(0, "logs") // the whole stack, merged
	e.must(2, "logs", "-n", "-1")
	e.must(2, "status", "--bogus")
	e.must(3, "logs", "nope")
	e.must(2, "stop", "api", "--timeout", "soon")
}

func TestSup_FailedStartPrintsLogTailAndExitCode(t *testing.T) {
	e := newEnv(t, `
processes:
  broken:
    command: sh
    args: ["-c", "echo 'listen: address already in use' >&2; exit 4"]
    ready: {tcp: "127.0.0.1:1", timeout: 5s}
`)
	_, errOut := e.must(1, "start", "broken")
	for _, want := range []string{"exit code 4", "--- last lines of", "listen: address already in use"} {
		if !strings.Contains(errOut, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if st := e.statusJSON("broken").Processes[0]; st.State != supervisor.StateExited || st.ExitCode == nil || *st.ExitCode != 4 {
		t.Fatalf("status after failed start = %+v", st)
	}
}

func TestSup_ConfigErrorsNameFileLineAndField(t *testing.T) {
	e := newEnv(t, "processes:\n  kv:\n    command: kv\n    stop_timeout: ten\n")
	_, errOut := e.must(1, "start", "--all")
	want := e.config() + `:4: processes.kv.stop_timeout: "ten" is not a duration`
	if !strings.Contains(errOut, want) {
		t.Fatalf("stderr = %q, want %q", errOut, want)
	}
}

func TestSup_ReloadClassifiesAndDryRunChangesNothing(t *testing.T) {
	proc := func(name, arg string) string {
		return fmt.Sprintf("  %s:\n    command: sh\n    args: [\"-c\", \"echo %s; exec sleep 300\"]\n", name, arg)
	}
	e := newEnv(t, "processes:\n"+proc("same", "v1")+proc("changed", "v1")+proc("removed", "v1")+proc("idle", "v1"))
	e.must(0, "start", "--all")
	e.must(0, "stop", "idle")
	before := e.statusJSON()
	e.write("processes:\n" + proc("same", "v1") + proc("changed", "v2") + proc("idle", "v2") + proc("added", "v1"))
	want := map[string]supervisor.ReloadAction{
		"removed": supervisor.ReloadStop, "same": supervisor.ReloadNone, "changed": supervisor.ReloadRestart,
		"idle": supervisor.ReloadRecord, "added": supervisor.ReloadStart,
	}
	check := func(out string, dry bool) []supervisor.ReloadStep {
		var rep struct {
			DryRun bool                    `json:"dry_run"`
			Steps  []supervisor.ReloadStep `json:"steps"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err, out)
		}
		if rep.DryRun != dry || len(rep.Steps) != len(want) || rep.Steps[0].Name != "removed" {
			t.Fatalf("reload plan = %+v", rep)
		}
		for _, s := range rep.Steps {
			if want[s.Name] != s.Action {
				t.Errorf("%s: action %s, want %s", s.Name, s.Action, want[s.Name])
			}
		}
		return rep.Steps
	}
	out, _ := e.must(0, "reload", "--dry-run", "--json")
	planned := check(out, true)
	after := map[string]supervisor.ProcessStatus{}
	for _, p := range e.statusJSON().Processes {
		after[p.Name] = p
	}
	for _, b := range before.Processes {
		if a := after[b.Name]; a.PID != b.PID || a.State != b.State {
			t.Fatalf("dry run changed %s: %+v -> %+v", b.Name, b, a)
		}
	}
	out, _ = e.must(0, "reload", "--json")
	done := check(out, false)
	if fmt.Sprint(planned) != fmt.Sprint(done) {
		t.Fatalf("real run took %v, dry run promised %v", done, planned)
	}
	pids := map[string]int{}
	for _, p := range before.Processes {
		pids[p.Name] = p.PID
	}
	st := e.statusJSON()
	for _, p := range st.Processes {
		switch p.Name {
		case "changed":
			if p.State != supervisor.StateRunning || p.PID == pids["changed"] || p.Drift {
				t.Errorf("changed after reload: %+v", p)
			}
		case "same":
			if p.PID != pids["same"] {
				t.Errorf("unchanged process was restarted: %+v", p)
			}
		case "removed":
			t.Errorf("removed process still listed: %+v", p)
		case "added":
			if p.State != supervisor.StateRunning {
				t.Errorf("added process not started by reload: %+v", p)
			}
		}
	}
	out, _ = e.must(0, "reload", "--dry-run")
	if strings.Contains(out, "restart") || strings.Contains(out, "record") || strings.Contains(out, "stop") {
		t.Fatalf("second reload is not a no-op:\n%s", out)
	}
}

func TestSup_StopForceAndTimeoutFlags(t *testing.T) {
	e := newEnv(t, `
processes:
  stubborn:
    command: sh
    args: ["-c", "trap '' TERM; echo ready; while :; do sleep 1; done"]
    ready: {log: ready, timeout: 5s}
`)
	e.must(0, "start", "stubborn")
	_, errOut := e.must(1, "stop", "stubborn", "--timeout", "0.2") // plain numbers are seconds
	if !strings.Contains(errOut, "--force") {
		t.Fatalf("stop without force should point at --force: %s", errOut)
	}
	e.must(0, "status", "stubborn")
	out, _ := e.must(0, "stop", "stubborn", "--timeout", "200ms", "--force")
	if !strings.Contains(out, "stubborn: killed") {
		t.Fatalf("stop --force output: %s", out)
	}
	e.must(3, "status", "stubborn")
}

func TestSup_ReadyPortTakenSaysWhichPID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e := newEnv(t, fmt.Sprintf(`
processes:
  web:
    command: sleep
    args: ["300"]
    ready: {tcp: %q, timeout: 5s}
`, ln.Addr().String()))
	_, errOut := e.must(1, "start", "web")
	if !strings.Contains(errOut, fmt.Sprintf("in use by pid %d", os.Getpid())) {
		t.Fatalf("stderr = %s", errOut)
	}
}

func TestSup_ExportSystemd(t *testing.T) {
	e := newEnv(t, `
processes:
  db:
    command: /usr/bin/postgres
    args: ["-D", "/var/lib/my data"]
    restart: on-failure
    ready: {tcp: "127.0.0.1:5432", timeout: 20s, interval: 200ms}
  api:
    command: ./api
    env: {PRICE: "5$", QUOTE: 'say "hi" \ 100%'}
    cwd: /srv/api
    depends_on: [db]
    ready: {http: "http://127.0.0.1:8080/healthz"}
`)
	dir := t.TempDir()
	out, _ := e.must(0, "export", "systemd", "--out", dir)
	if strings.Count(out, ".service") != 2 {
		t.Fatalf("export output: %s", out)
	}
	api, _ := os.ReadFile(filepath.Join(dir, "devkit-api.service"))
	db, _ := os.ReadFile(filepath.Join(dir, "devkit-db.service"))
	// In Environment= "$" has no special meaning (systemd.exec(5)): it stays
	// as is; "%" is a specifier and is doubled.
	for _, want := range []string{"After=devkit-db.service", "Requires=devkit-db.service", `Environment="PRICE=5$"` + "\n", `Environment="QUOTE=say \"hi\" \\ 100%%"`, "WorkingDirectory=/srv/api", "KillMode=control-group", "Restart=no", "ExecStart=/srv/api/api",
		`ExecStartPost=/bin/sh -c "until\ncurl -fsS -o /dev/null 'http://127.0.0.1:8080/healthz'\ndo sleep 0.05; done"`, "TimeoutStartSec=30s"} {
		if !strings.Contains(string(api), want) {
			t.Errorf("devkit-api.service lacks %q:\n%s", want, api)
		}
	}
	for _, want := range []string{`ExecStart=/usr/bin/postgres -D "/var/lib/my data"`, "Restart=on-failure", "TimeoutStopSec=10s",
		`ExecStartPost=/bin/bash -c "until\n(exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null\ndo sleep 0.2; done"`, "TimeoutStartSec=20s"} {
		if !strings.Contains(string(db), want) {
			t.Errorf("devkit-db.service lacks %q:\n%s", want, db)
		}
	}
	// systemd's own parser accepts every line.
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze not found (CI installs the systemd package)")
		}
		t.Skip("systemd-analyze not found: install systemd to check the units with systemd's parser")
	}
	outb, _ := exec.Command(analyze, "verify", "--man=no", filepath.Join(dir, "devkit-api.service"), filepath.Join(dir, "devkit-db.service")).CombinedOutput()
	for _, line := range strings.Split(string(outb), "\n") {
		if strings.Contains(line, dir) && (strings.Contains(line, "Invalid") || strings.Contains(line, "ignoring") || strings.Contains(line, "Unknown")) {
			t.Errorf("systemd-analyze: %s", line)
		}
	}
}

func TestSup_StatusWithoutConfigUsesRecords(t *testing.T) {
	e := newEnv(t, twoProcs)
	e.must(0, "start", "db")
	os.Remove(e.config())
	// An explicit -c that is missing is an error...
	e.must(1, "status")
	// ...but with no -c and no ./ops.yaml, the records of the project
	// (the key of ./ops.yaml's path, which is the same file) suffice.
	t.Chdir(e.dir)
	var out, errOut bytes.Buffer
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	cmd := NewCmd(cmdutil.NewFactory(ios))
	cmd.SetArgs([]string{"status", "--json"})
	err := cmd.Execute()
	if err != nil && cmdutil.ExitCode(err) != 0 {
		t.Fatalf("status without config: %v %s", err, errOut.String())
	}
	if !strings.Contains(out.String(), `"state": "running"`) || !strings.Contains(out.String(), `"drift": true`) {
		t.Fatalf("status without config:\n%s", out.String())
	}
	cmd = NewCmd(cmdutil.NewFactory(ios))
	cmd.SetArgs([]string{"stop", "--all"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
}

func TestSup_ProjectsAreSeparateAndNamedByStatus(t *testing.T) {
	a := newEnv(t, twoProcs)
	b := &env{t: t, dir: t.TempDir()}
	b.write(twoProcs)
	t.Cleanup(func() { b.run("stop", "--all", "--force", "--timeout", "200ms") })
	a.must(0, "start", "db")
	out, _ := b.must(3, "status", "db")
	if strings.Contains(out, "running") {
		t.Fatalf("project B sees A's db:\n%s", out)
	}
	b.must(0, "stop", "--all")
	b.must(0, "reload")
	out, _ = a.must(0, "status", "db")
	if !strings.Contains(out, "running") || !strings.Contains(out, "project "+supervisor.ProjectKey(a.config())) {
		t.Fatalf("A after B's stop --all and reload:\n%s", out)
	}
	// --project and DEVKIT_SUP_PROJECT name the namespace instead.
	b.must(0, "--project", "shared", "start", "db")
	t.Setenv(projectEnv, "shared")
	if rep := b.statusJSON("db"); rep.Project != "shared" || rep.Processes[0].State != supervisor.StateRunning {
		t.Fatalf("status with DEVKIT_SUP_PROJECT=shared: %+v", rep)
	}
	b.must(0, "stop", "db")
	b.must(2, "--project", "../x", "status")
}

func TestSup_StartAndStopJSON(t *testing.T) {
	e := newEnv(t, twoProcs)
	out, _ := e.must(0, "start", "api", "--json")
	var started struct {
		Schema  string                   `json:"schema"`
		Results []supervisor.StartResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &started); err != nil || started.Schema != "devkit.sup.start/v1" || len(started.Results) != 2 || started.Results[1].Name != "api" || started.Results[1].PID == 0 {
		t.Fatalf("start --json = %s (%v)", out, err)
	}
	out, _ = e.must(0, "stop", "--all", "--json")
	var stopped struct {
		Results []supervisor.StopResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &stopped); err != nil || len(stopped.Results) != 2 || stopped.Results[0].Name != "api" || stopped.Results[0].Outcome != supervisor.StopStopped {
		t.Fatalf("stop --json = %s (%v)", out, err)
	}
}

func TestSup_HostileNamesExitTwoBeforeTouchingTheHome(t *testing.T) {
	e := newEnv(t, twoProcs)
	home := os.Getenv("DEVKIT_HOME")
	for _, name := range []string{"../exits/db", "a/../db", "..", "/etc/passwd", "a/b", "../../victim"} {
		for _, verb := range [][]string{{"stop", name}, {"status", name}, {"logs", name}, {"restart", name}, {"start", name}} {
			e.must(2, verb...)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("the home was touched: %v", entries)
	}
}

func TestSup_StopDuringAStartSaysItWaitsForTheLockHolder(t *testing.T) {
	e := newEnv(t, `
processes:
  slow:
    command: sh
    args: ["-c", "sleep 0.7; echo ready; exec sleep 300"]
    ready: {log: ready, timeout: 5s}
`)
	done := make(chan struct{})
	go func() { defer close(done); e.run("start", "slow") }()
	time.Sleep(300 * time.Millisecond)
	_, errOut := e.must(0, "stop", "slow")
	<-done
	want := fmt.Sprintf("slow: waiting for the lock held by PID %d", os.Getpid())
	if !strings.Contains(errOut, want) {
		t.Fatalf("stderr %q does not say %q", errOut, want)
	}
}

func TestSup_ExportNomad(t *testing.T) {
	e := newEnv(t, twoProcs)
	out, _ := e.must(0, "export", "nomad", "--job", "stack")
	for _, want := range []string{`job "stack" {`, `task "db" {`, `task "api" {`, `driver = "raw_exec"`, `GREETING = "hello"`} {
		if !strings.Contains(out, want) {
			t.Errorf("export nomad lacks %q:\n%s", want, out)
		}
	}
	file := filepath.Join(t.TempDir(), "job.hcl")
	e.must(0, "export", "nomad", "--out", file)
	data, _ := os.ReadFile(file)
	if !strings.Contains(string(data), `job "`+supervisor.ProjectKey(e.config())+`" {`) {
		t.Fatalf("job file not named after the project:\n%s", data)
	}
}

// brokenWriter fails every write, as a closed stdout does.
type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("stdout is gone") }

// A table that cannot be written is an error (exit 1, naming it), not the
// answer it would have printed: status and reload report stdout's failure
// as their --json branches do.
func TestSup_TablesOnAFailedStdoutAreAnError(t *testing.T) {
	e := newEnv(t, "processes:\n  app:\n    command: sleep\n    args: [\"300\"]\n")
	for _, verb := range [][]string{{"status"}, {"reload", "--dry-run"}} {
		var errOut bytes.Buffer
		ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: brokenWriter{}, ErrOut: &errOut}
		code := runCLI(ios, append([]string{"sup", "-c", e.config()}, verb...))
		if code != cmdutil.ExitFailure || !strings.Contains(errOut.String(), "stdout is gone") {
			t.Errorf("%v on a failed stdout: exit %d, stderr %q; want exit 1 naming the write error", verb, code, errOut.String())
		}
	}
}

func TestSup_StopStatusLogsWorkWithAVariableThisShellLacks(t *testing.T) {
	t.Setenv("SUP_TEST_PORT", "7001")
	e := newEnv(t, `
processes:
  api:
    command: sh
    args: ["-c", "echo api on $PORT; exec sleep 300"]
    env: {PORT: "${SUP_TEST_PORT}"}
`)
	e.must(0, "start", "api")
	os.Unsetenv("SUP_TEST_PORT") // another shell, without the variable
	out, errOut := e.must(0, "status", "api")
	if !strings.Contains(out, "running") || !strings.Contains(errOut, "SUP_TEST_PORT") || !strings.Contains(errOut, "records only") {
		t.Fatalf("status without the variable:\nstdout: %s\nstderr: %s", out, errOut)
	}
	if out, _ := e.must(0, "logs", "api", "-n", "1"); out != "api on 7001\n" {
		t.Fatalf("logs without the variable: %q", out)
	}
	// restart starts it again from the spec its record keeps.
	before := e.statusJSON("api").Processes[0].PID
	out, errOut = e.must(0, "restart", "api")
	if !strings.Contains(out, "api: started") || !strings.Contains(errOut, "records only") {
		t.Fatalf("restart without the variable:\nstdout: %s\nstderr: %s", out, errOut)
	}
	if st := e.statusJSON("api").Processes[0]; st.State != supervisor.StateRunning || st.PID == before {
		t.Fatalf("after restart: %s pid %d (was %d)", st.State, st.PID, before)
	}
	if out, _ := e.must(0, "logs", "api", "-n", "2"); out != "api on 7001\napi on 7001\n" {
		t.Fatalf("the restarted process lost its environment: %q", out)
	}
	// start needs the YAML's values: it refuses, naming file:line:field.
	if _, errOut := e.must(1, "start", "--all"); !strings.Contains(errOut, "ops.yaml:6: processes.api.env.PORT: ${SUP_TEST_PORT} is not set") {
		t.Fatalf("start without the variable: %s", errOut)
	}
	out, _ = e.must(0, "stop", "api")
	if !strings.Contains(out, "api: stopped") {
		t.Fatalf("stop without the variable: %s", out)
	}
	e.must(0, "stop", "--all")
}

func TestSup_ASymlinkedDirectoryIsTheSameProject(t *testing.T) {
	e := newEnv(t, `
processes:
  db: {command: sh, args: ["-c", "echo up; exec sleep 300"]}
`)
	e.must(0, "start", "db")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(e.dir, link); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	if code := runCLI(ios, []string{"sup", "-c", filepath.Join(link, "ops.yaml"), "start", "db"}); code != 1 || !strings.Contains(errOut.String(), "already running") {
		t.Fatalf("start through a symlinked directory: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

const disabledConsole = `
processes:
  db: {command: sh, args: ["-c", "echo db; exec sleep 300"]}
  console:
    command: sh
    args: ["-c", "echo console; exec sleep 300"]
    depends_on: [db]
    disabled: true
`

func TestSup_DisabledIsDeclaredNotStartedByAllStartableByName(t *testing.T) {
	e := newEnv(t, disabledConsole)
	out, _ := e.must(0, "start", "--all")
	if !strings.Contains(out, "db: started") || strings.Contains(out, "console") {
		t.Fatalf("start --all with a disabled process:\n%s", out)
	}
	out, _ = e.must(0, "status") // disabled counts as fine
	if !strings.Contains(out, "disabled") {
		t.Fatalf("status does not say disabled:\n%s", out)
	}
	if out, _ := e.must(0, "reload"); strings.Contains(out, "console: start") {
		t.Fatalf("reload starts a disabled process:\n%s", out)
	}
	if st := e.statusJSON("console").Processes[0]; st.State != supervisor.StateDisabled {
		t.Fatalf("console after reload: %s", st.State)
	}
	out, _ = e.must(0, "start", "console")
	if !strings.Contains(out, "console: started") {
		t.Fatalf("start by name:\n%s", out)
	}
	if st := e.statusJSON("console").Processes[0]; st.State != supervisor.StateRunning {
		t.Fatalf("console after start: %s", st.State)
	}
	// An enabled process cannot need a disabled one: --all would start it.
	e.write(`
processes:
  db: {command: sh, disabled: true}
  api: {command: sh, depends_on: [db]}
`)
	_, errOut := e.must(1, "start", "--all")
	e.write(disabledConsole) // for the cleanup's stop --all
	if !strings.Contains(errOut, "ops.yaml:4: processes.api.depends_on: db is disabled") {
		t.Fatalf("enabled depending on disabled: %s", errOut)
	}
}

// A foreman user's Procfile starts as it is, with foreman's PORT numbering
// and the .env beside it.
func TestSup_ProcfileIsAConfig(t *testing.T) {
	e := newEnv(t, twoProcs)
	t.Setenv("PORT", "") // foreman would take it as the base port
	procfile := filepath.Join(e.dir, "Procfile")
	files := map[string]string{
		procfile:                     "# foreman stack\n\nweb: echo \"web port=$PORT ps=$PS greeting=$GREETING\"; exec sleep 300\nworker: echo \"worker port=$PORT\"; exec sleep 300\n",
		filepath.Join(e.dir, ".env"): "GREETING=hi\n",
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(want int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
		if code := runCLI(ios, append([]string{"sup", "-c", procfile}, args...)); code != want {
			t.Fatalf("sup %v: exit %d, want %d\n%s%s", args, code, want, out.String(), errOut.String())
		}
		return out.String()
	}
	t.Cleanup(func() { run(0, "stop", "--all", "--force", "--timeout", "200ms") })
	if out := run(0, "start", "--all"); !strings.Contains(out, "web: started") || !strings.Contains(out, "worker: started") {
		t.Fatalf("start --all -c Procfile:\n%s", out)
	}
	for name, want := range map[string]string{"web": "web port=5000 ps=web.1 greeting=hi", "worker": "worker port=5100"} {
		var got string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if got = run(0, "logs", name, "-n", "5"); strings.Contains(got, want) {
				break
			}
		}
		if !strings.Contains(got, want) {
			t.Fatalf("logs %s = %q, want %q", name, got, want)
		}
	}
	run(0, "status")
	run(0, "stop", "--all")
	run(3, "status")
}

func TestSup_ReplicasAndScale(t *testing.T) {
	e := newEnv(t, `
processes:
  web:
    command: sh
    args: ["-c", "echo \"web $DEVKIT_SUP_REPLICA on $PORT\"; exec sleep 300"]
    env: {PORT: "9000"}
    replicas: 2
`)
	out, _ := e.must(0, "start", "--all")
	if !strings.Contains(out, "web.1: started") || !strings.Contains(out, "web.2: started") {
		t.Fatalf("start --all:\n%s", out)
	}
	out, _ = e.must(0, "scale", "web", "3")
	if !strings.Contains(out, "web.3: started") || strings.Contains(out, "web.1") {
		t.Fatalf("scale web 3:\n%s", out)
	}
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = e.must(0, "logs", "web.3"); strings.Contains(got, "web 3 on 9002") {
			break
		}
	}
	if !strings.Contains(got, "web 3 on 9002") {
		t.Fatalf("logs web.3 = %q", got)
	}
	if rep := e.statusJSON("web"); len(rep.Processes) != 3 {
		t.Fatalf("status web: %+v", rep.Processes)
	}
	out, _ = e.must(0, "scale", "web", "1")
	if !strings.Contains(out, "web.3: stopped") || !strings.Contains(out, "web.2: stopped") {
		t.Fatalf("scale web 1:\n%s", out)
	}
	e.must(2, "scale", "web", "many")
	e.must(3, "scale", "nosuch", "2")
	e.must(0, "stop", "--all")
}
