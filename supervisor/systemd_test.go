//go:build unix

// Unix only: the units name Unix paths and run /bin/sh.

package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// systemdVerify runs systemd-analyze verify over every unit (together, so
// that After=/Requires= find each other) and fails on any complaint about
// them. It skips where systemd is not installed, except under CI.
func systemdVerify(t *testing.T, units map[string]string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze not found (CI installs the systemd package)")
		}
		t.Skip("systemd-analyze not found: install systemd to check the units with systemd's parser")
	}
	dir := t.TempDir()
	args := []string{"verify", "--man=no"}
	for name, unit := range units {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(unit), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, path)
	}
	out, err := exec.Command(analyze, args...).CombinedOutput()
	var complaints []string
	for _, line := range strings.Split(string(out), "\n") {
		for name := range units {
			if strings.Contains(line, name) {
				complaints = append(complaints, line)
				break
			}
		}
	}
	if err != nil || len(complaints) > 0 {
		for name, unit := range units {
			t.Logf("%s:\n%s", name, unit)
		}
		t.Fatalf("systemd-analyze verify: %v\n%s", err, strings.Join(complaints, "\n"))
	}
}

func TestSystemdUnits_PassSystemdAnalyzeVerify(t *testing.T) {
	// A value that tries to inject a directive through a newline.
	t.Setenv("SUP_TEST_INJECT", "x\nExecStartPre=/bin/touch /tmp/PWNED\n[Service]")
	dir := t.TempDir()
	yaml := `
processes:
  migrate:
    command: /bin/sh
    args: ["-c", "echo migrating ${SUP_TEST_INJECT}"]
    oneshot: true
    restart: always
  db:
    command: /bin/sh
    args: ["-c", "exec sleep 300", "arg with 100% and $HOME"]
    cwd: /tmp
    ready:
      exec: |
        # wait for the socket
        test -d /tmp &&
          test -n "${SUP_TEST_INJECT}"
      timeout: 10s
    health: {every: 15s, failures: 3}
    restart: {policy: on-failure, backoff: 1s, max_backoff: 30s}
    log_max_size: 10MB
    stop_timeout: 20s
    resources: {memory_max: 512MB, cpu_max: 1.5}
  api:
    command: sh
    args: ["-c", "exec sleep 300"]
    env: {NOTE: "${SUP_TEST_INJECT}", PRICE: "5$ 100%"}
    depends_on: [db, migrate]
    ready: {http: "http://127.0.0.1:8080/healthz", timeout: 5s}
  tail:
    command: /bin/sh
    args: ["-c", "echo started; exec sleep 300"]
    ready: {log: started}
    log_timestamps: true
`
	cfg, err := ParseConfig(filepath.Join(dir, "ops.yaml"), []byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	units := cfg.SystemdUnits(filepath.Join(dir, "logs"))
	systemdVerify(t, units)
	for name, unit := range units {
		for _, line := range strings.Split(unit, "\n") {
			if strings.HasPrefix(line, "ExecStartPre") || (strings.HasPrefix(line, "[") && !slicesContains([]string{"[Unit]", "[Service]", "[Install]"}, line)) {
				t.Errorf("%s: a value injected a line: %q", name, line)
			}
		}
		if n := strings.Count("\n"+unit, "\n[Service]\n"); n != 1 {
			t.Errorf("%s: %d [Service] sections", name, n)
		}
	}
	migrate, db, api, tail := units["devkit-migrate.service"], units["devkit-db.service"], units["devkit-api.service"], units["devkit-tail.service"]
	for _, c := range []struct{ unit, want string }{
		{migrate, "Type=oneshot\nRemainAfterExit=yes\n"},
		{db, "MemoryMax=512000000\nMemorySwapMax=0\nCPUQuota=150%\n"},
		{migrate, "Restart=on-failure"},
		{migrate, "#   restart: always on a oneshot"},
		{api, "After=devkit-db.service devkit-migrate.service\n"},
		{api, `Environment="NOTE=x\nExecStartPre=/bin/touch /tmp/PWNED\n[Service]"`},
		{api, `Environment="PRICE=5$ 100%%"`},
		{db, "TimeoutStopSec=20s\n"},
		{db, "RestartSec=1s\n"},
		{db, "#   health: {every: 15s, failures: 3}"},
		{db, "#   log_max_size: 10000000 bytes, log_backups: 3"},
		{db, "#   restart backoff doubling from 1s up to max_backoff 30s"},
		{tail, "#   ready: a log probe has no systemd counterpart"},
		{tail, "#   log_timestamps"},
	} {
		if !strings.Contains(c.unit, c.want) {
			t.Errorf("unit lacks %q:\n%s", c.want, c.unit)
		}
	}
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
