// Command devkit-sup-monitor is devkit's process monitor alone: the program
// `devkit sup start` runs once per supervised process when it lies in the
// devkit binary's directory and reports the same build (--version). It
// links the supervisor and nothing else of devkit, so an idle monitor costs
// about a third of the devkit binary re-executed as one (whose every
// package initialiser — gRPC, Envoy's protobufs, Prometheus, the TUI — runs
// before main). Without it devkit runs itself as `devkit sup __monitor`.
//
// Usage (by devkit, not by hand):
//
//	devkit-sup-monitor             read the request on stdin, supervise
//	devkit-sup-monitor --version   print the build identity and exit
package main

import (
	"fmt"
	"os"

	"github.com/devkit-go/devkit/cmd/devkit/internal/buildinfo"
	"github.com/devkit-go/devkit/supervisor"
)

func main() {
	switch {
	case len(os.Args) == 2 && os.Args[1] == "--version":
		fmt.Println(buildinfo.Current().Build())
	case len(os.Args) == 1:
		os.Exit(supervisor.RunMonitor(os.Stdin, os.Stdout))
	default:
		fmt.Fprintln(os.Stderr, "usage: devkit-sup-monitor [--version] (started by devkit sup, with its request on stdin)")
		os.Exit(2)
	}
}
