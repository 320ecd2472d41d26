//go:build unix

package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A change to a watched file restarts the process (restart: never
// notwithstanding); a burst of writes makes one restart.
func TestWatch_ChangedFilesRestartOnceAfterDebounce(t *testing.T) {
	const yaml = `
processes:
  app:
    command: sh
    args: ["-c", "echo \"run $(cat conf/app.conf)\"; exec sleep 300"]
    watch: [conf]
`
	h := &harness{t: t, dir: t.TempDir(), home: filepath.Join(t.TempDir(), "sup")}
	if err := os.MkdirAll(filepath.Join(h.dir, "conf"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(h.dir, "conf", "app.conf")
	if err := os.WriteFile(conf, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.load(yaml)
	t.Cleanup(h.cleanup)
	pid := h.start("app")[0].PID
	h.waitLog("app", "run one")
	for i := range 5 { // one editor save, many writes
		if err := os.WriteFile(conf, []byte("two"+strings.Repeat("!", i)), 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.waitLog("app", "run two!!!!")
	eventually(t, 5*time.Second, "restarted and running", func() bool {
		st := h.status("app")
		return st.State == StateRunning && st.PID != pid && st.PID != 0
	})
	time.Sleep(2 * WatchDebounce)
	log, _ := h.sup.LogPath("app")
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), "run "); n != 2 {
		t.Fatalf("%d runs, want 2 (one restart for the burst):\n%s", n, data)
	}
	if alive(pid) {
		t.Fatalf("the first run (pid %d) still lives", pid)
	}
}

func TestWatch_MissingPathIsAConfigError(t *testing.T) {
	_, err := ParseConfig(filepath.Join(t.TempDir(), "ops.yaml"), []byte("processes:\n  app:\n    command: x\n    watch: [nosuch]\n"), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "ops.yaml:4: processes.app.watch[0]:") || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v", err)
	}
}
