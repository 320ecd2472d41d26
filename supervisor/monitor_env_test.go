//go:build unix

package supervisor

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The monitor runs with GOMAXPROCS=1 (set in its environment by the
// supervisor), and the process inherits the caller's environment as it
// was: without GOMAXPROCS when the caller had none, with the caller's
// value when it had one, and never with the monitor's own marker.
func TestMonitor_RunsWithOnePButTheProcessInheritsTheCallersEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, caller, want string // caller "": unset
	}{
		{name: "unset", caller: "", want: ""},
		{name: "set by the caller", caller: "3", want: "GOMAXPROCS=3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tc.caller)
			if tc.caller == "" {
				os.Unsetenv("GOMAXPROCS") // t.Setenv restores it at the end
			}
			out := filepath.Join(t.TempDir(), "env")
			h := newHarness(t, "processes:\n  app:\n    command: sh\n    args: [\"-c\", \"env > "+out+"; exec sleep 60\"]\n")
			res := h.start("app")
			eventually(t, 5*time.Second, "the process wrote its environment", func() bool {
				b, err := os.ReadFile(out)
				return err == nil && strings.Contains(string(b), "PATH=")
			})
			b, _ := os.ReadFile(out)
			env := strings.Split(strings.TrimSpace(string(b)), "\n")
			got := ""
			for _, kv := range env {
				if strings.HasPrefix(kv, "GOMAXPROCS=") {
					got = kv
				}
				if strings.HasPrefix(kv, monitorUnsetEnv+"=") {
					t.Errorf("the process inherited the monitor's %s", kv)
				}
			}
			if got != tc.want {
				t.Errorf("process environment has %q, want %q", got, tc.want)
			}
			if runtime.GOOS != "linux" {
				return
			}
			rec, err := h.sup.home.ReadRecord("app")
			if err != nil || rec == nil || rec.Monitor == nil || rec.Process.PID != res[0].PID {
				t.Fatalf("record %+v, %v", rec, err)
			}
			raw, err := os.ReadFile(filepath.Join("/proc", itoa(rec.Monitor.PID), "environ"))
			if err != nil {
				t.Fatal(err)
			}
			want := "GOMAXPROCS=1"
			if tc.caller != "" {
				want = "GOMAXPROCS=" + tc.caller
			}
			if !slices.Contains(strings.Split(string(raw), "\x00"), want) {
				t.Errorf("the monitor started without %s", want)
			}
		})
	}
}
