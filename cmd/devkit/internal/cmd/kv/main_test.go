package kv

import (
	"fmt"
	"os"
	"testing"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// childEnv makes the test binary act as `devkit kv` with its arguments:
// the real-process tests re-execute themselves instead of building devkit.
const childEnv = "DEVKIT_KV_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		cmd := NewCmd(cmdutil.NewFactory(cmdutil.System()))
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		cmd.SetArgs(os.Args[1:])
		err := cmd.Execute()
		if err != nil {
			fmt.Fprintf(os.Stderr, "devkit: %v\n", err)
		}
		os.Exit(cmdutil.ExitCode(err))
	}
	os.Exit(m.Run())
}
