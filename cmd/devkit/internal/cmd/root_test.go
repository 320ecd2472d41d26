package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Main(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestVersion_JSONIsMachineReadable(t *testing.T) {
	code, out, _ := run("version", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var info struct {
		Version   string `json:"version"`
		GoVersion string `json:"go_version"`
		Platform  string `json:"platform"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if info.Version == "" || !strings.HasPrefix(info.GoVersion, "go") || !strings.Contains(info.Platform, "/") {
		t.Fatalf("incomplete version info: %+v", info)
	}
	code, out, _ = run("version")
	if code != 0 || !strings.HasPrefix(out, "devkit "+info.Version) {
		t.Fatalf("plain version: exit %d, %q", code, out)
	}
}

func TestExitCodes_UsageMistakesExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"no-such-command"},
		{"version", "--no-such-flag"},
		{"version", "extra-argument"},
		{"completion", "tcsh"},
	} {
		code, _, stderr := run(args...)
		if code != cmdutil.ExitUsage {
			t.Errorf("devkit %s: exit %d, want %d (stderr %q)", strings.Join(args, " "), code, cmdutil.ExitUsage, stderr)
		}
		if !strings.HasPrefix(stderr, "devkit: ") {
			t.Errorf("devkit %s: stderr %q does not say what went wrong", strings.Join(args, " "), stderr)
		}
	}
}

func TestCompletion_EveryShell(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "bash completion",
		"zsh":        "#compdef devkit",
		"fish":       "fish completion for devkit",
		"powershell": "Register-ArgumentCompleter",
	} {
		code, out, stderr := run("completion", shell)
		if code != 0 || !strings.Contains(out, marker) {
			t.Errorf("completion %s: exit %d, output lacks %q (stderr %q)", shell, code, marker, stderr)
		}
	}
}

func TestHelp_ExitCodesTopicAndExamplesEverywhere(t *testing.T) {
	code, out, _ := run("help", "exit-codes")
	if code != 0 || !strings.Contains(out, "3  a negative answer") {
		t.Fatalf("help exit-codes: exit %d\n%s", code, out)
	}
	// Every runnable command shows an example in its --help (cobra's own
	// help and completion commands aside).
	root := NewRootCmd(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" || c.Hidden {
			return
		}
		if c.Runnable() && !c.HasSubCommands() && c.Example == "" {
			t.Errorf("%s has no example in its --help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func TestGroupCommands_UnknownSubcommandIsAUsageError(t *testing.T) {
	root := NewRootCmd(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	for _, c := range root.Commands() {
		if !c.HasSubCommands() {
			continue
		}
		code, _, stderr := run(c.Name(), "no-such-verb")
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, `unknown command "no-such-verb"`) {
			t.Errorf("devkit %s no-such-verb: exit %d, stderr %q", c.Name(), code, stderr)
		}
		if code, out, _ := run(c.Name()); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("devkit %s alone: exit %d, want its help", c.Name(), code)
		}
	}
}

// TestDurationFlags_AllOneGrammar: every duration flag of every command is
// cmdutil.DurationFlag (Go durations or plain seconds), none pflag's own.
func TestDurationFlags_AllOneGrammar(t *testing.T) {
	root := NewRootCmd(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(fl *pflag.Flag) {
			if fl.Value.Type() != "duration" {
				return
			}
			seen++
			if _, ok := fl.Value.(cmdutil.DurationFlag); !ok {
				t.Errorf("%s --%s is a %T, not a cmdutil.DurationFlag", c.CommandPath(), fl.Name, fl.Value)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if seen == 0 {
		t.Fatal("no duration flag found: the walk is broken")
	}
}

// A mistyped verb gets cobra's suggestions, as a mistyped noun does: the
// group commands' own unknown-command error used to drop them.
func TestUnknownCommand_SuggestsTheNearestOnes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"kvv"}, "Did you mean this?\n\tkv\n"},
		{[]string{"kv", "gte"}, "Did you mean this?\n\tget\n"},
		{[]string{"ratelimit", "lnt"}, "Did you mean this?\n\tlint\n"},
		{[]string{"sup", "stat"}, "\tstatus\n"},
	} {
		code, _, stderr := run(tc.args...)
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("devkit %s: exit %d, stderr %q; want exit 2 suggesting %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	if _, _, stderr := run("kv", "zzzzzz"); strings.Contains(stderr, "Did you mean") {
		t.Errorf("devkit kv zzzzzz suggests something: %q", stderr)
	}
}

// A wrong number of arguments names the command and shows its usage line,
// for every command that takes a fixed number of them.
func TestArgumentCount_ErrorNamesTheCommandAndShowsItsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"kv", "get"},
		{"kv", "set", "k"},
		{"kv", "ping", "extra"},
		{"kv", "del"},
		{"version", "extra"},
	} {
		code, _, stderr := run(args...)
		root := NewRootCmd(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
		c, _, err := root.Find(args)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(c.CommandPath(), "devkit ")
		want := []string{"devkit: " + name + ": ", "\nUsage: " + c.UseLine() + "\n", "Run '" + c.CommandPath() + " --help'"}
		for _, w := range want {
			if code != cmdutil.ExitUsage || !strings.Contains(stderr, w) {
				t.Errorf("devkit %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(args, " "), code, stderr, w)
			}
		}
	}
}
