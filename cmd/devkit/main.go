// Command devkit drives devkit's rate limiter, KV store and supervisor.
package main

import (
	"os"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

func main() {
	os.Exit(cmd.Main(cmdutil.System(), os.Args[1:]))
}
