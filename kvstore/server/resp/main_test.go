package resp_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// eventLoopEnv selects the connection path the tests' servers use ("1":
// the event loop, "0": a goroutine per connection); unset, each test's
// Options decide.
const eventLoopEnv = "DEVKIT_RESP_EVENTLOOP"

// TestMain runs the suite once on the goroutine path and, on Linux, once
// more (the same binary, re-executed) on the event loop, so that both keep
// every contract the tests state. Benchmarks run once: they pick their
// path themselves.
func TestMain(m *testing.M) {
	if _, set := os.LookupEnv(eventLoopEnv); set || runtime.GOOS != "linux" {
		os.Exit(m.Run())
	}
	os.Setenv(eventLoopEnv, "0")
	code := m.Run()
	if f := flag.Lookup("test.bench"); code != 0 || (f != nil && f.Value.String() != "") {
		os.Exit(code)
	}
	fmt.Fprintf(os.Stderr, "resp tests again, on the event loop (%s=1)\n", eventLoopEnv)
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), eventLoopEnv+"=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "resp tests on the event loop: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}
