//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLogs_RotatedWhileRunningWithoutRestart(t *testing.T) {
	for _, stamps := range []bool{false, true} {
		name := "copytruncate"
		if stamps {
			name = "timestamps"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, `
processes:
  chatty:
    command: sh
    args: ["-c", "echo ready; i=0; while :; do i=$((i+1)); echo line $i ................................................................................; sleep 0.01; done"]
    ready: {log: ready, timeout: 5s}
    log_max_size: 2KB
    log_backups: 2
    log_timestamps: `+map[bool]string{false: "false", true: "true"}[stamps]+`
`)
			pid := h.start("chatty")[0].PID
			path, _ := h.sup.LogPath("chatty")
			eventually(t, 10*time.Second, "the log is rotated twice", func() bool {
				_, err := os.Stat(path + ".2")
				return err == nil
			})
			if st := h.status("chatty"); st.PID != pid || st.Restarts != 0 {
				t.Fatalf("rotation restarted the process: %+v", st)
			}
			fi, _ := os.Stat(path)
			if fi.Size() > 16<<10 {
				t.Fatalf("%s is %d bytes, far over log_max_size", path, fi.Size())
			}
			if _, err := os.Stat(path + ".3"); err == nil {
				t.Fatal("more backups than log_backups")
			}
			// .1 may be caught between its creation and the copy: .2 is whole.
			data, _ := os.ReadFile(path + ".2")
			if stamps {
				line := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z line \d+ \.+$`)
				if !line.Match(data) || strings.Contains(string(data), "\nline ") {
					t.Fatalf("lines without timestamps:\n%.300s", data)
				}
			} else if !strings.Contains(string(data), "line ") {
				t.Fatalf("backup holds no output:\n%.300s", data)
			}
		})
	}
}
