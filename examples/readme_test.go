// Package examples_test holds the test that keeps the README honest: every
// command the README shows in a sh block is run here, or by the e2e test of
// the stack (stack/stack_test.go), or by examples/demo.sh which that test runs.
package examples_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// readmeCommands returns the commands of the README's ```sh blocks, comments cut.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	inSh := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			inSh = true
		case strings.HasPrefix(line, "```"):
			inSh = false
		case inSh:
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" {
				cmds = append(cmds, line)
			}
		}
	}
	if len(cmds) == 0 {
		t.Fatal("no sh block in README.md")
	}
	return cmds
}

// TestReadme_EveryCommandIsRun checks each README command: `go run` ones run
// here and must exit 0; `make X` must be a Makefile target (make demo runs
// examples/demo.sh, which TestStack runs; make test is what CI runs); `go
// install` must name the binary's module (TestStack installs it); `devkit ...`
// must be a step of examples/demo.sh. Anything else fails: no test runs it.
func TestReadme_EveryCommandIsRun(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	demo, err := os.ReadFile("demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmdMod, err := os.ReadFile(filepath.Join("..", "cmd", "devkit", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range readmeCommands(t) {
		f := strings.Fields(c)
		switch {
		case f[0] == "make" && len(f) == 2:
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(f[1]) + `:`).Match(makefile) {
				t.Errorf("README shows %q but the Makefile has no target %s", c, f[1])
			}
		case f[0] == "go" && len(f) == 3 && f[1] == "install" && strings.HasPrefix(f[2], "./"):
			t.Run("install", func(t *testing.T) { runGoInstall(t, f[2]) })
		case f[0] == "go" && len(f) == 3 && f[1] == "install":
			// A remote install (pkg@version) ignores the workspace and refuses replace directives.
			pkg, _, _ := strings.Cut(f[2], "@")
			if !strings.Contains(string(cmdMod), "module "+pkg+"\n") {
				t.Errorf("README shows %q but cmd/devkit is module %q", c, firstLine(cmdMod))
			}
			if regexp.MustCompile(`(?m)^\s*replace\b`).Match(cmdMod) {
				t.Errorf("README shows %q, but go install pkg@version refuses cmd/devkit/go.mod's replace directives", c)
			}
		case f[0] == "go" && len(f) >= 3 && f[1] == "run" && strings.HasPrefix(f[2], "./examples/"):
			t.Run(strings.TrimPrefix(f[2], "./examples/"), func(t *testing.T) { runGoRun(t, f[1:]) })
		case f[0] == "devkit":
			if !strings.Contains(string(demo), c) {
				t.Errorf("README shows %q, which examples/demo.sh does not run", c)
			}
		default:
			t.Errorf("README shows %q, which no test runs", c)
		}
	}
}

// runGoRun runs `go run ./examples/...` from the repository root, in the workspace, as a reader would.
func runGoRun(t *testing.T, args []string) {
	if runtime.GOOS == "windows" {
		t.Skip("the small programs kill processes the Unix way")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=") // the workspace at the root, as on a fresh clone
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("go %s:\n%s", strings.Join(args, " "), out)
}

// runGoInstall runs `go install ./...` from the repository root into a
// temporary GOBIN, as a reader with a checkout would, and runs the result.
func runGoInstall(t *testing.T, pkg string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gobin := t.TempDir()
	cmd := exec.CommandContext(ctx, "go", "install", pkg)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=", "GOBIN="+gobin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", pkg, err, out)
	}
	bin := filepath.Join(gobin, filepath.Base(pkg))
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	out, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "devkit ") {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}
