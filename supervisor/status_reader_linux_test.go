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

// openProcFiles counts this test process's open files under /proc/<pid>/.
func openProcFiles(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		target, _ := os.Readlink("/proc/self/fd/" + fd.Name())
		if strings.HasPrefix(target, fmt.Sprintf("/proc/%d/", pid)) {
			n++
		}
	}
	return n
}

func TestStatusReader_KeepsAProcessesProcFilesOnlyWhileItRuns(t *testing.T) {
	h := newHarness(t, `
processes:
  app:
    command: sleep
    args: ["300"]
    stop_timeout: 500ms
`)
	h.start("app")
	r := h.sup.NewStatusReader(0)
	ctx := context.Background()
	first, err := r.Status(ctx, nil)
	if err != nil || first[0].State != StateRunning {
		t.Fatalf("status = %+v, %v", first, err)
	}
	pid := first[0].PID
	second, err := r.Status(ctx, nil)
	if err != nil || second[0].State != StateRunning || second[0].PID != pid {
		t.Fatalf("second status = %+v, %v", second, err)
	}
	if n := openProcFiles(t, pid); n == 0 {
		t.Fatalf("a StatusReader keeps no /proc/%d file open between reports", pid)
	}
	if second[0].UsageSource == UsageTree && second[0].RSSBytes <= 0 {
		t.Fatalf("usage through the kept files: %+v", second[0])
	}
	if _, err := h.sup.Stop(ctx, []string{"app"}, StopOptions{}); err != nil {
		t.Fatal(err)
	}
	after, err := r.Status(ctx, nil)
	if err != nil || after[0].State == StateRunning {
		t.Fatalf("status after stop = %+v, %v", after, err)
	}
	r.Status(ctx, nil) // the sweep after a report that read none of them
	if n := openProcFiles(t, pid); n != 0 {
		t.Fatalf("%d files of /proc/%d still open after it stopped", n, pid)
	}
}
