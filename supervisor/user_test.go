//go:build unix

package supervisor

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// As root, user: nobody runs the process as nobody, with nobody's primary
// and supplementary groups and none of root's.
func TestUser_RootRunsTheProcessAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const yaml = `
processes:
  app:
    command: sh
    args: ["-c", "echo \"ids $(id -u) $(id -g) $(id -G)\"; exec sleep 300"]
    user: nobody
    cwd: /
`
	h := newHarness(t, yaml)
	run := h.sup.cfg.Processes["app"].RunAs
	if run == nil || run.User != "nobody" {
		t.Fatalf("RunAs = %+v", run)
	}
	pid := h.start("app")[0].PID
	status, err := os.ReadFile("/proc/" + itoa(pid) + "/status")
	if err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "Uid:") && strings.Fields(line)[1] != itoa(int(run.UID)) {
				t.Fatalf("pid %d: %s, want uid %d", pid, line, run.UID)
			}
		}
	}
	want := "ids " + itoa(int(run.UID)) + " " + itoa(int(run.GID))
	log, _ := h.sup.LogPath("app")
	var got []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = os.ReadFile(log); strings.Contains(string(got), want) {
			break
		}
	}
	line := strings.TrimSpace(string(got))
	if !strings.Contains(line, want) {
		t.Fatalf("log %q, want %q", got, want)
	}
	groups := strings.Fields(line[strings.Index(line, want)+len(want):])
	for _, g := range groups {
		if g == "0" {
			t.Fatalf("the process kept root's group: id -G = %v", groups)
		}
	}
	if _, err := h.sup.Stop(context.Background(), []string{"app"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestUser_RefusedUnlessRoot(t *testing.T) {
	parse := func(body string) error {
		_, err := ParseConfig("ops.yaml", []byte("processes:\n  app:\n    command: x\n    "+body+"\n"), func(string) (string, bool) { return "", false })
		return err
	}
	if err := parse("user: no-such-user-devkit"); err == nil || !strings.Contains(err.Error(), `ops.yaml:4: processes.app.user: no such user "no-such-user-devkit"`) {
		t.Fatalf("unknown user: %v", err)
	}
	defer func(f func() int) { geteuid = f }(geteuid)
	geteuid = func() int { return 1000 }
	err := parse("user: nobody")
	if err == nil || !strings.Contains(err.Error(), "ops.yaml:4: processes.app.user: devkit runs as UID 1000, not root") {
		t.Fatalf("user: as a user who is not root: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
