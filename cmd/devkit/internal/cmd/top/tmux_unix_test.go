//go:build unix

package top

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/stacktest"
)

// tmux drives the real binary in a real terminal: a tmux server of the
// test's own (its own socket), so nothing of the user's tmux is touched.
type tmux struct {
	t      testing.TB
	socket string
}

func newTmux(t testing.TB) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is required under CI=true: apt-get install -y tmux")
		}
		t.Skip("tmux not installed (apt-get install -y tmux, or brew install tmux): the terminal test of devkit top is skipped")
	}
	tm := &tmux{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", tm.socket, "kill-server").Run() })
	return tm
}

func (tm *tmux) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tm.socket}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (tm *tmux) keys(keys ...string) { tm.run(append([]string{"send-keys", "-t", "top"}, keys...)...) }

func (tm *tmux) screen() string { return tm.run("capture-pane", "-p", "-t", "top") }

// await polls the screen until cond holds.
func (tm *tmux) await(within time.Duration, what string, cond func(screen string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := tm.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("timed out after %v waiting until %s; the screen:\n%s", within, what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// row is a process row on the screen: its state, PID and restarts.
type row struct {
	state    string
	pid      int
	restarts string
}

// rowOf finds name's row: NAME STATE PID CPU% [sparkline] RSS RST HEALTH UPTIME.
func rowOf(screen, name string) (row, bool) {
	for _, line := range strings.Split(screen, "\n") {
		f := strings.Fields(strings.TrimPrefix(line, ">"))
		if len(f) < 8 || f[0] != name {
			continue
		}
		pid, _ := strconv.Atoi(f[2])
		return row{state: f[1], pid: pid, restarts: f[len(f)-3]}, true
	}
	return row{}, false
}

// writeScreenshot writes the screen, without trailing blanks and with
// the log pane's empty rows squeezed to one, to docs/top.txt, which the
// README shows (TestReadme_ShowsTheTopCapture).
func writeScreenshot(t *testing.T, screen string) {
	t.Helper()
	var lines []string
	for line := range strings.SplitSeq(screen, "\n") {
		line = strings.TrimRight(line, " ")
		if line == "" && len(lines) > 0 && lines[len(lines)-1] == "" {
			continue
		}
		lines = append(lines, line)
	}
	out := strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
	if err := os.WriteFile(filepath.Join("..", "..", "..", "..", "..", "docs", "top.txt"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestTop_InTmux is devkit top used as a person would: the real binary in
// a 120x40 terminal over the real example stack.
func TestTop_InTmux(t *testing.T) {
	tm := newTmux(t)
	s := stacktest.Start(t, stacktest.Devkit(t), stacktest.Options{Restart: true})
	// The stack's variables: a restart from the view interpolates the YAML
	// with the view's environment, as `devkit sup restart` would.
	env := []string{"PATH=" + shellQuote(os.Getenv("PATH"))}
	for k, v := range s.Env {
		env = append(env, k+"="+shellQuote(v))
	}
	command := fmt.Sprintf("env TERM=xterm-256color %s %s top -c %s --interval 500ms; echo top exited $?; sleep 600",
		strings.Join(env, " "), shellQuote(s.Bin), shellQuote(s.Config))
	tm.run("new-session", "-d", "-s", "top", "-x", "120", "-y", "40", command)

	screen := tm.await(30*time.Second, "the kv row shows running", func(sc string) bool {
		r, ok := rowOf(sc, "kv")
		return ok && r.state == "running" && r.pid > 0
	})
	kv, _ := rowOf(screen, "kv")

	// kill -9 of kv's process: the row shows the restart.
	if err := syscall.Kill(kv.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	tm.await(30*time.Second, "the kv row shows the restart", func(sc string) bool {
		r, ok := rowOf(sc, "kv")
		return ok && r.state == "running" && r.pid != kv.pid && r.pid > 0 && r.restarts == "1"
	})
	t.Logf("kill -9 of kv to its row showing running again, restarted: %v", time.Since(killed).Round(10*time.Millisecond))
	if os.Getenv("UPDATE_SCREENSHOTS") == "1" {
		writeScreenshot(t, tm.screen())
	}

	// / on the log pane filters it: kv's log has "engine open" and
	// "listening" lines; filtered by "listening", only those stay.
	tm.await(15*time.Second, "kv's log shows both kinds of line", func(sc string) bool {
		return strings.Contains(sc, "engine open") && strings.Contains(sc, "msg=listening")
	})
	tm.keys("l", "/")
	tm.keys("-l", "msg=listening")
	tm.keys("Enter")
	tm.await(10*time.Second, "the log is filtered", func(sc string) bool {
		return strings.Contains(sc, "/msg=listening") && strings.Contains(sc, "msg=listening") && !strings.Contains(sc, "engine open")
	})
	// Esc alone (an Esc followed at once by a key is that key with Alt).
	tm.keys("Escape")
	tm.await(10*time.Second, "esc clears the filter", func(sc string) bool {
		return strings.Contains(sc, "engine open") && !strings.Contains(sc, "/msg=listening")
	})
	tm.keys("h")

	// r on the gateway, then y: restarted (a new PID).
	screen = tm.screen()
	gw, ok := rowOf(screen, "gateway")
	if !ok || gw.pid == 0 {
		t.Fatalf("no running gateway row:\n%s", screen)
	}
	tm.keys("j", "r")
	tm.await(10*time.Second, "the restart is asked to be confirmed", func(sc string) bool {
		return strings.Contains(sc, "restart gateway? [y/n]")
	})
	tm.keys("y")
	tm.await(60*time.Second, "the gateway row shows a new PID", func(sc string) bool {
		r, ok := rowOf(sc, "gateway")
		return ok && r.state == "running" && r.pid > 0 && r.pid != gw.pid
	})

	// q leaves the terminal as it was: the view's screen is gone.
	tm.keys("q")
	screen = tm.await(15*time.Second, "top exits", func(sc string) bool { return strings.Contains(sc, "top exited") })
	if !regexp.MustCompile(`(?m)^top exited 0$`).MatchString(screen) || strings.Contains(screen, "devkit top") || strings.Contains(screen, "ratelimit") {
		t.Fatalf("after q the terminal is not clean:\n%s", screen)
	}
	if out := tm.run("display-message", "-p", "-t", "top", "#{alternate_on} #{cursor_flag}"); strings.TrimSpace(out) != "0 1" {
		t.Fatalf("after q: alternate screen, cursor = %q, want 0 1 (main screen, cursor shown)", out)
	}
}
