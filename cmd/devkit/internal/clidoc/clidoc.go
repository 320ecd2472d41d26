// Package clidoc renders the devkit command tree as one Markdown page,
// docs/cli.md. The page is generated from the cobra commands themselves —
// their usage, help text, examples and flags — so it cannot drift from the
// binary: `make docs` rewrites it and a test fails when it is stale.
package clidoc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Header opens the page; it tells a reader not to edit the file by hand.
const Header = `# devkit command reference

<!-- Generated from the cobra command tree by ` + "`make docs`" + ` (cmd/devkit/internal/clidoc). Do not edit:
     a test in cmd/devkit fails when this file is stale. -->

Every ` + "`devkit`" + ` command and flag, as ` + "`devkit <command> --help`" + ` prints them. Guides per module:
[kvstore](kvstore.md), [KV server](kvstore-server.md), [ratelimit](ratelimit.md), [supervisor](supervisor.md).
`

// Write renders root and every visible command under it to w: a table of
// contents, the exit codes (from the "exit-codes" help topic when root has
// one), then one section per command in tree order.
func Write(w io.Writer, root *cobra.Command) error {
	var b bytes.Buffer
	b.WriteString(Header)
	cmds := visible(root)

	b.WriteString("\n## Commands\n\n")
	for _, c := range cmds {
		depth := strings.Count(c.CommandPath(), " ")
		fmt.Fprintf(&b, "%s- [`%s`](#%s) — %s\n", strings.Repeat("  ", depth), c.CommandPath(), anchor(c), c.Short)
	}
	if topic, _, err := root.Find([]string{"exit-codes"}); err == nil && topic != root {
		fmt.Fprintf(&b, "\n## Exit codes\n\n```\n%s\n```\n", strings.TrimSpace(topic.Long))
	}
	for _, c := range cmds {
		writeCommand(&b, c)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// visible lists root and its descendants in tree order, leaving out hidden
// commands (internal re-exec entry points), cobra's help command and
// help-only topics such as exit-codes.
func visible(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || (!c.Runnable() && !c.HasSubCommands()) {
			continue
		}
		out = append(out, visible(c)...)
	}
	return out
}

// anchor is the GitHub heading anchor of a command's section.
func anchor(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

func writeCommand(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "\n## %s\n\n", c.CommandPath())
	text := c.Long
	if text == "" {
		text = c.Short
	}
	// Help text is laid out for a terminal (indented lists, aligned columns): keep it as is.
	fmt.Fprintf(b, "```text\n%s\n```\n", strings.TrimRight(text, "\n "))
	if c.Runnable() {
		fmt.Fprintf(b, "\n```\n%s\n```\n", c.UseLine())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(b, "\nAliases: `%s`\n", strings.Join(c.Aliases, "`, `"))
	}
	if c.Example != "" {
		fmt.Fprintf(b, "\nExamples:\n\n```sh\n%s\n```\n", dedent(c.Example))
	}
	if subs := visible(c)[1:]; len(subs) > 0 {
		b.WriteString("\nCommands:\n\n")
		for _, s := range subs {
			if s.Parent() == c {
				fmt.Fprintf(b, "- [`%s`](#%s) — %s\n", s.CommandPath(), anchor(s), s.Short)
			}
		}
	}
	if fl := c.NonInheritedFlags(); fl.HasAvailableFlags() {
		fmt.Fprintf(b, "\nFlags:\n\n```\n%s```\n", fl.FlagUsages())
	}
	if fl := c.InheritedFlags(); fl.HasAvailableFlags() {
		fmt.Fprintf(b, "\nInherited flags:\n\n```\n%s```\n", fl.FlagUsages())
	}
}

// dedent removes the indentation every non-empty line of s shares.
func dedent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	var out strings.Builder
	sc := bufio.NewScanner(strings.NewReader(strings.Join(lines, "\n")))
	for sc.Scan() {
		l := sc.Text()
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out.WriteString(strings.TrimRight(l, " \t") + "\n")
	}
	return strings.TrimRight(out.String(), "\n")
}
