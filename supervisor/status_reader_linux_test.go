//go:build linux

package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStatusReader_ReusesATreesMembersUntilTheRescan(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The shell blocks on the fifo (no child meanwhile), then starts one.
	h := newHarness(t, fmt.Sprintf(`
processes:
  app:
    command: sh
    args: ["-c", "echo ready; read x < %s; sleep 302 & echo spawned; wait"]
    ready: {log: ready, timeout: 10s}
    stop_timeout: 500ms
`, fifo))
	h.start("app")
	const rescan = 4 * time.Second
	r := h.sup.NewStatusReader(rescan)
	ctx := context.Background()
	descendants := func(sts []ProcessStatus, err error) int {
		t.Helper()
		if err != nil || len(sts) != 1 || sts[0].State != StateRunning {
			t.Fatalf("status = %+v, %v", sts, err)
		}
		return sts[0].Descendants
	}
	if n := descendants(r.Status(ctx, nil)); n != 0 {
		t.Fatalf("before the child: %d descendants", n)
	}
	walked := time.Now()
	if err := os.WriteFile(fifo, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path, _ := h.sup.LogPath("app")
	eventually(t, 10*time.Second, "the child is started", func() bool {
		data, _ := os.ReadFile(path)
		return strings.Contains(string(data), "spawned")
	})
	if n := descendants(h.sup.Status(ctx, nil)); n != 1 {
		t.Fatalf("Status: %d descendants, want the child", n)
	}
	if n := descendants(r.Status(ctx, nil)); n != 0 && time.Since(walked) < rescan {
		t.Fatalf("a StatusReader looked for descendants again %v after it last did (rescan %v): %d", time.Since(walked), rescan, n)
	}
	time.Sleep(time.Until(walked.Add(rescan)))
	if n := descendants(r.Status(ctx, nil)); n != 1 {
		t.Fatalf("after the rescan a StatusReader counts %d descendants, want the child", n)
	}
}
