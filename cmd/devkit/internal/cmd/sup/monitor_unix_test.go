//go:build unix

package sup

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/buildinfo"
)

// devkit-sup-monitor beside the devkit binary is its monitor only when it
// reports this devkit's build; otherwise (missing, another build, broken)
// devkit is its own monitor.
func TestSmallMonitor_ChosenOnlyWhenItReportsThisBuild(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string // "" = no devkit-sup-monitor at all
		chosen bool
	}{
		{name: "missing"},
		{name: "same build", script: "echo '" + buildinfo.Current().Build() + "'", chosen: true},
		{name: "another build", script: "echo 'v0.0.1 0123456789abcdef'"},
		{name: "fails", script: "exit 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, "devkit")
			small := filepath.Join(dir, smallMonitorName)
			if tc.script != "" {
				script := "#!/bin/sh\n[ \"$1\" = --version ] || exit 2\n" + tc.script + "\n"
				if err := os.WriteFile(small, []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got := smallMonitor(exe)
			if tc.chosen != slices.Equal(got, []string{small}) || !tc.chosen && got != nil {
				t.Errorf("smallMonitor = %q, chosen want %v", got, tc.chosen)
			}
		})
	}
}

// The devkit binary that make build made (DEVKIT_BIN) runs
// bin/devkit-sup-monitor as each process's monitor, and the process's
// environment carries nothing of the monitor's.
func TestStart_BuiltDevkitRunsItsSmallMonitor(t *testing.T) {
	bin := os.Getenv("DEVKIT_BIN")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DEVKIT_BIN is not set (make test sets it to bin/devkit)")
		}
		t.Skip("DEVKIT_BIN is not set: run `make build` and set DEVKIT_BIN=bin/devkit (make test does)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the monitor's executable from /proc")
	}
	dir := t.TempDir()
	envOut := filepath.Join(dir, "env")
	cfg := filepath.Join(dir, "ops.yaml")
	yaml := "processes:\n  idle:\n    command: sh\n    args: [\"-c\", \"env > " + envOut + "; exec sleep 60\"]\n" +
		// An HTTP health probe: devkit-sup-monitor is built without net/http.
		"  web:\n    command: sleep\n    args: [\"60\"]\n    liveness: {http: \"http://127.0.0.1:1/\"}\n    health: {every: 1h}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"sup", "-c", cfg}, args...)...)
		cmd.Env = append(os.Environ(), "DEVKIT_HOME="+filepath.Join(dir, "home"), "OPS_HOME=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("devkit sup %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("start", "--all")
	t.Cleanup(func() { run("stop", "--all") })
	var st struct {
		Processes []struct {
			Name string `json:"name"`
			PID  int    `json:"pid"`
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(run("status", "--json")), &st); err != nil || len(st.Processes) != 2 {
		t.Fatalf("status: %+v, %v", st, err)
	}
	want := map[string]string{
		"idle": filepath.Join(filepath.Dir(mustAbs(t, bin)), smallMonitorName),
		"web":  mustAbs(t, bin),
	}
	for _, p := range st.Processes {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		monitorExe, err := os.Readlink("/proc/" + fields[1] + "/exe") // field 4: the parent, the monitor
		if err != nil {
			t.Fatal(err)
		}
		if monitorExe != want[p.Name] {
			t.Errorf("%s: monitor is %s, want %s", p.Name, monitorExe, want[p.Name])
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	var env []byte
	var err error
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if env, err = os.ReadFile(envOut); err == nil && strings.Contains(string(env), "PATH=") {
			break
		}
	}
	if strings.Contains(string(env), "DEVKIT_SUP_MONITOR_UNSET") || strings.Contains(string(env), "GOMAXPROCS=1") {
		t.Errorf("the process inherited the monitor's environment:\n%s", env)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// devkit-sup-monitor as make build makes it (without net/http) refuses a
// process with an HTTP health probe before starting anything, should a
// devkit ever hand it one.
func TestSmallMonitor_BuiltWithoutHTTPRefusesAnHTTPHealthProbe(t *testing.T) {
	bin := os.Getenv("DEVKIT_BIN")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DEVKIT_BIN is not set (make test sets it to bin/devkit)")
		}
		t.Skip("DEVKIT_BIN is not set: run `make build` and set DEVKIT_BIN=bin/devkit (make test does)")
	}
	dir := t.TempDir()
	req := `{"home": "` + dir + `", "spec": {"name": "web", "command": "sh", "args": ["-c", "touch ` + dir + `/ran"],
		"log_file": "` + dir + `/web.log", "stop_signal": "TERM", "stop_timeout": 1000000000, "restart": {"mode": "never"},
		"liveness": {"http": "http://127.0.0.1:1/", "timeout": 1000000000, "interval": 50000000},
		"health": {"every": 1000000000, "failures": 3}}}`
	cmd := exec.Command(filepath.Join(filepath.Dir(bin), smallMonitorName))
	cmd.Stdin = strings.NewReader(req)
	out, err := cmd.Output()
	if err == nil || !strings.Contains(string(out), "built without HTTP probes") {
		t.Errorf("devkit-sup-monitor: %v, reply %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the process was started")
	}
}
