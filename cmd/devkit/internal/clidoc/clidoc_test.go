package clidoc_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/clidoc"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// cliDoc is docs/cli.md, relative to this package.
var cliDoc = filepath.Join("..", "..", "..", "..", "docs", "cli.md")

// TestCLIDoc_IsCurrent fails when docs/cli.md differs from what the command
// tree generates: a command, flag or help text changed without `make docs`.
func TestCLIDoc_IsCurrent(t *testing.T) {
	var want bytes.Buffer
	root := cmd.NewRootCmd(&cmdutil.IOStreams{In: bytes.NewReader(nil), Out: io.Discard, ErrOut: io.Discard})
	if err := clidoc.Write(&want, root); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatalf("%v (run `make docs`)", err)
	}
	if bytes.Equal(got, want.Bytes()) {
		return
	}
	gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(want.String(), "\n")
	for i := 0; i < len(gotLines) || i < len(wantLines); i++ {
		var g, w string
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Fatalf("docs/cli.md is stale (run `make docs`); first difference at line %d:\n  file:      %q\n  generated: %q", i+1, g, w)
		}
	}
}

// TestWrite_EveryVisibleCommandAndFlag checks the page on a small tree: every
// visible command gets a section with its usage and flags; hidden commands
// and help topics get none.
func TestWrite_EveryVisibleCommandAndFlag(t *testing.T) {
	root := &cobra.Command{Use: "tool", Short: "A tool"}
	serve := &cobra.Command{Use: "serve", Short: "Serve things", Example: "  tool serve --port 1", RunE: noop}
	serve.Flags().Int("port", 80, "port to listen on")
	root.PersistentFlags().String("home", "", "state directory")
	hidden := &cobra.Command{Use: "__monitor", Hidden: true, RunE: noop}
	topic := &cobra.Command{Use: "exit-codes", Short: "Exit codes", Long: "0 ok\n3 no"}
	root.AddCommand(serve, hidden, topic)

	var b bytes.Buffer
	if err := clidoc.Write(&b, root); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"## tool serve\n", "tool serve [flags]", "--port int", "port to listen on (default 80)",
		"Inherited flags:", "--home string", "```sh\ntool serve --port 1\n```", "## Exit codes", "0 ok\n3 no",
		"[`tool serve`](#tool-serve)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	for _, unwanted := range []string{"__monitor", "## tool exit-codes"} {
		if strings.Contains(page, unwanted) {
			t.Errorf("page has %q", unwanted)
		}
	}
}

func noop(*cobra.Command, []string) error { return nil }
