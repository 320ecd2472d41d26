package sup

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/devkit-go/devkit/supervisor"
)

// Two separate devkit processes start the same name at the same moment:
// exactly one process results, one run says started, the others refuse.
func TestSup_ConcurrentCLIStartsYieldOneProcess(t *testing.T) {
	e := newEnv(t, `
processes:
  app:
    command: sh
    args: ["-c", "echo up; exec sleep 300"]
    ready: {log: up, timeout: 5s}
`)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const runs = 3
	var wg sync.WaitGroup
	outs := make([]string, runs)
	codes := make([]int, runs)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(exe, "sup", "-c", e.config(), "start", "app")
			cmd.Env = append(os.Environ(), "SUP_TEST_CLI=1")
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			err := cmd.Run()
			outs[i] = buf.String()
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				codes[i] = ee.ExitCode()
			}
		}()
	}
	wg.Wait()
	started, refused := 0, 0
	for i := range runs {
		switch {
		case codes[i] == 0 && strings.Contains(outs[i], "app: started"):
			started++
		case codes[i] == 1 && strings.Contains(outs[i], "already running"):
			refused++
		default:
			t.Errorf("run %d: exit %d, output %q", i, codes[i], outs[i])
		}
	}
	if started != 1 || refused != runs-1 {
		t.Fatalf("%d runs started app and %d refused, want 1 and %d", started, refused, runs-1)
	}
	st := e.statusJSON("app").Processes[0]
	if st.State != supervisor.StateRunning {
		t.Fatalf("status = %+v", st)
	}
}
