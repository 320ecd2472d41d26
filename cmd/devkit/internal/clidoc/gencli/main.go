// Command gencli writes docs/cli.md from the devkit command tree:
//
//	go run ./cmd/devkit/internal/clidoc/gencli -out docs/cli.md   (make docs)
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/devkit-go/devkit/cmd/devkit/internal/clidoc"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

func main() {
	out := flag.String("out", "", "file to write (default: stdout)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gencli:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	var buf bytes.Buffer
	root := cmd.NewRootCmd(&cmdutil.IOStreams{In: bytes.NewReader(nil), Out: io.Discard, ErrOut: io.Discard})
	if err := clidoc.Write(&buf, root); err != nil {
		return err
	}
	if out == "" {
		_, err := os.Stdout.Write(buf.Bytes())
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}
