//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestLogs_RotatedWhileRunningWithoutRestart(t *testing.T) {
	for _, stamps := range []bool{false, true} {
		name := "plain"
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
			// Rotation renames the live log before it creates the next
			// one: the path may be missing for a moment.
			var fi os.FileInfo
			eventually(t, 10*time.Second, "the live log exists", func() bool {
				var err error
				fi, err = os.Stat(path)
				return err == nil
			})
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

// logFamilySize is the bytes held by path and its backups, each file
// counted once even if a rotation renames it between two looks.
func logFamilySize(path string, backups int) int64 {
	var seen []os.FileInfo
	var total int64
	for i := 0; i <= backups+1; i++ {
		p := path
		if i > 0 {
			p = fmt.Sprintf("%s.%d", path, i)
		}
		fi, err := os.Stat(p)
		if err != nil || slices.ContainsFunc(seen, func(s os.FileInfo) bool { return os.SameFile(s, fi) }) {
			continue
		}
		seen = append(seen, fi)
		total += fi.Size()
	}
	return total
}

// firstSeq returns the number of the first "seq N" line of the file at path.
func firstSeq(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	if i := strings.Index(line, "seq "); i >= 0 {
		n, _ := strconv.Atoi(strings.Fields(line[i+4:])[0])
		return n
	}
	return 0
}

func TestLogs_RotationNeverStops(t *testing.T) {
	for _, stamps := range []string{"false", "true"} {
		t.Run("log_timestamps="+stamps, func(t *testing.T) {
			h := newHarness(t, `
processes:
  flood:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "flood=200KB"}
    log_max_size: 2KB
    log_backups: 1
    log_timestamps: `+stamps+`
`)
			h.start("flood")
			path, _ := h.sup.LogPath("flood")
			// Each file holds about 20 lines: seq 3000 at the top of the live
			// log means some 150 rotations, well past where the ledger used to
			// forget the live log (64 entries).
			eventually(t, 60*time.Second, "the live log starts past seq 3000", func() bool { return firstSeq(path) > 3000 })
			if fi, err := os.Stat(path); err == nil && fi.Size() > 2<<10+64<<10 { // err: caught mid-rotation
				t.Fatalf("live log not bounded after many rotations: %d bytes", fi.Size())
			}
			if st := h.status("flood"); st.LogWarning != "" {
				t.Fatalf("status warns about the log: %s", st.LogWarning)
			}
			ledger, _ := os.ReadFile(h.sup.home.LogLedgerPath("flood"))
			if n := strings.Count(string(ledger), `"key"`); n > 3 {
				t.Fatalf("the ledger holds %d entries for a log with one backup:\n%s", n, ledger)
			}
		})
	}
}

func TestLogs_DiskBoundedUnderAFastWriter(t *testing.T) {
	h := newHarness(t, `
processes:
  flood:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "flood=4000KB"}
    log_max_size: 256KB
    log_backups: 2
`)
	h.start("flood")
	path, _ := h.sup.LogPath("flood")
	// Three files of log_max_size, each allowed one read's slack (64 KiB).
	const bound = 3 * (256<<10 + 64<<10)
	var peak int64
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) || firstSeq(path+".2") == 0 {
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatal("the log never rotated twice")
		}
		peak = max(peak, logFamilySize(path, 2))
		if peak > bound {
			t.Fatalf("logs of a 4 MB/s writer reached %d bytes, over 3 × (256 KiB + slack) = %d", peak, bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("peak %d bytes (bound %d)", peak, bound)
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// seqGaps reports where the "seq N" lines of out do not follow one another.
func seqGaps(out string) (count int, gaps []string) {
	prev := 0
	for _, line := range strings.Split(out, "\n") {
		i := strings.Index(line, "seq ")
		if i < 0 {
			continue
		}
		f := strings.Fields(line[i+4:])
		if len(f) == 0 || len(line) < i+99 { // the last line may be cut short
			continue
		}
		n, _ := strconv.Atoi(f[0])
		if prev != 0 && n != prev+1 {
			gaps = append(gaps, fmt.Sprintf("%d -> %d", prev, n))
		}
		prev = n
		count++
	}
	return count, gaps
}

func TestLogs_FollowAcrossRotationsLosesNoLine(t *testing.T) {
	h := newHarness(t, `
processes:
  flood:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "flood=50KB"}
    log_max_size: 4KB
    log_backups: 30
`)
	h.start("flood")
	var out lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.sup.FollowLog(ctx, "flood", 5, LogFilter{}, &out) }()
	// About 12 rotations a second, more than one between two looks of the
	// follower at times; 30 backups leave a loaded machine 2 s of slack.
	eventually(t, 60*time.Second, "3000 lines followed", func() bool { n, _ := seqGaps(out.String()); return n >= 3000 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n, gaps := seqGaps(out.String())
	if len(gaps) > 0 {
		t.Fatalf("logs -f lost lines across rotations: %d lines, gaps %v", n, gaps)
	}
}

func TestLogs_TailReadsBackThroughRotatedFiles(t *testing.T) {
	h := newHarness(t, `
processes:
  big:
    command: sh
    args: ["-c", "for i in 1 2 3; do printf 'line %s %0600d\n' $i 0; done; echo done; sleep 600"]
    ready: {log: done, timeout: 10s}
    log_max_size: 1KB
    log_backups: 5
`)
	h.start("big")
	path, _ := h.sup.LogPath("big")
	// Let a copy-and-truncate rotation happen if there is one.
	eventually(t, 10*time.Second, "the log rotates", func() bool { _, err := os.Stat(path + ".1"); return err == nil })
	var out bytes.Buffer
	if err := h.sup.TailLog("big", 3, LogFilter{}, &out); err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`(?m)^(line \d|done)`).FindAllString(out.String(), -1)
	if want := []string{"line 2", "line 3", "done"}; !slices.Equal(got, want) {
		t.Fatalf("logs -n 3 gave %q, want %q", got, want)
	}
}

func TestLogs_SinceAndGrep(t *testing.T) {
	h := newHarness(t, `
processes:
  talk:
    command: sh
    args: ["-c", "echo old one; echo old error; while [ ! -e next ]; do sleep 0.02; done; echo new one; echo new error; echo ready; sleep 600"]
    log_timestamps: true
    ready: {log: ready, timeout: 20s}
`)
	h.sup.cfg.Processes["talk"].Cwd = h.dir
	go func() {
		eventually(t, 20*time.Second, "the old lines are logged", func() bool {
			path, _ := h.sup.LogPath("talk")
			data, _ := os.ReadFile(path)
			return strings.Contains(string(data), "old error")
		})
		time.Sleep(50 * time.Millisecond) // the stamps of old and new differ
		os.WriteFile(filepath.Join(h.dir, "next"), nil, 0o600)
	}()
	between := time.Time{}
	h.start("talk")
	path, _ := h.sup.LogPath("talk")
	data, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasSuffix(line, "new one") {
			between, _ = time.Parse("2006-01-02T15:04:05.000Z07:00", strings.Fields(line)[0])
		}
	}
	if between.IsZero() {
		t.Fatalf("no stamped 'new one' line in\n%s", data)
	}
	lines := func(filt LogFilter, n int) []string {
		var out bytes.Buffer
		if err := h.sup.TailLog("talk", n, filt, &out); err != nil {
			t.Fatal(err)
		}
		return regexp.MustCompile(`(old|new) \w+|ready`).FindAllString(out.String(), -1)
	}
	errRE := regexp.MustCompile(`error`)
	for _, c := range []struct {
		filt LogFilter
		n    int
		want []string
	}{
		{LogFilter{Since: between}, 100, []string{"new one", "new error", "ready"}},
		{LogFilter{Grep: errRE}, 100, []string{"old error", "new error"}},
		{LogFilter{Grep: errRE}, 1, []string{"new error"}},
		{LogFilter{Since: between, Grep: errRE}, 100, []string{"new error"}},
	} {
		if got := lines(c.filt, c.n); !slices.Equal(got, c.want) {
			t.Errorf("filter %+v -n %d: %q, want %q", c.filt, c.n, got, c.want)
		}
	}
	// With -f the filter applies to the lines that follow too.
	var out lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.sup.FollowLog(ctx, "talk", 100, LogFilter{Grep: errRE}, &out) }()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "2030-01-01T00:00:00.000Z later fine")
	fmt.Fprintln(f, "2030-01-01T00:00:00.000Z later error")
	f.Close()
	eventually(t, 20*time.Second, "the followed error line", func() bool { return strings.Contains(out.String(), "later error") })
	cancel()
	<-done
	if strings.Contains(out.String(), "fine") || strings.Contains(out.String(), "one") {
		t.Fatalf("logs -f --grep printed lines that do not match:\n%s", out.String())
	}
	// A process without time stamps refuses --since rather than guessing.
	h2 := newHarness(t, `
processes:
  plain: {command: sh, args: ["-c", "echo hi; sleep 600"], ready: {log: hi, timeout: 10s}}
`)
	h2.start("plain")
	if err := h2.sup.TailLog("plain", 10, LogFilter{Since: between}, io.Discard); !errors.Is(err, ErrNoTimestamps) {
		t.Fatalf("--since on a log without stamps: %v, want ErrNoTimestamps", err)
	}
}

func TestLogs_RotationFailureIsVisibleInStatus(t *testing.T) {
	h := newHarness(t, `
processes:
  app:
    command: sh
    args: ["-c", "for i in 1 2 3 4 5 6 7 8; do printf '%0300d\n' $i; done; echo up; sleep 600"]
    ready: {log: up, timeout: 10s}
    log_max_size: 1KB
    log_backups: 1
`)
	// A backup devkit did not create is never replaced: the refusal to
	// rotate must show in status, not only in the log.
	path, _ := h.sup.LogPath("app")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".1", []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.start("app")
	eventually(t, 10*time.Second, "status shows the log warning", func() bool {
		return strings.Contains(h.status("app").LogWarning, "not created by devkit sup")
	})
}

func TestLogs_ProcessOutlivesAKilledMonitor(t *testing.T) {
	h := newHarness(t, `
processes:
  loop:
    command: sh
    args: ["-c", "i=0; while :; do i=$((i+1)); echo $i; echo $i > count.tmp; mv count.tmp count; sleep 0.01; done"]
`)
	h.sup.cfg.Processes["loop"].Cwd = h.dir
	h.start("loop")
	count := func() int {
		data, _ := os.ReadFile(filepath.Join(h.dir, "count"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return n
	}
	eventually(t, 10*time.Second, "the loop runs", func() bool { return count() > 0 })
	rec, err := h.sup.home.ReadRecord("loop")
	if err != nil || rec.Monitor == nil {
		t.Fatalf("record %+v: %v", rec, err)
	}
	if err := syscall.Kill(rec.Monitor.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "status says unsupervised", func() bool { return h.status("loop").State == StateUnsupervised })
	// Its output pipe has no reader now: SIGPIPE is ignored, so the
	// process lives on through many failed writes.
	c0 := count()
	eventually(t, 20*time.Second, "the loop goes on writing", func() bool { return count() > c0+30 })
	if !alive(rec.Process.PID) {
		t.Fatal("the process died with its monitor")
	}
}

// Once a process's exit is recorded, its log holds everything the process
// wrote: a script that reads status "exited" and then the log finds the
// last line. The monitor's copy is slowed here, as on a loaded machine or a
// slow disk, so that output is still in the pipe when the process ends.
func TestLogs_AnExitIsRecordedOnlyOnceTheOutputIsInTheLog(t *testing.T) {
	t.Setenv(slowLogEnv, "20ms")
	h := newHarness(t, `
processes:
  burst:
    command: sh
    args: ["-c", "i=0; while [ $i -lt 2000 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done; echo LAST; exit 3"]
    restart: never
`)
	// Start is watched from beside it: it returns only once the monitor
	// is gone, and a script may read the exit record before then.
	started := make(chan struct{})
	go func() {
		defer close(started)
		_, _ = h.sup.Start(context.Background(), []string{"burst"}) // it ends during start: its exit is what is checked
	}()
	defer func() { <-started }()
	code := -1
	eventually(t, 20*time.Second, "the exit is recorded", func() bool {
		e, err := h.sup.home.ReadExit("burst")
		if err != nil || e == nil || e.PID == 0 {
			return false
		}
		code = e.Code
		return true
	})
	path, err := h.sup.LogPath("burst")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("LAST\n")) {
		t.Fatalf("exit recorded (code %d) with %d bytes of output in the log, and not the last line", code, len(data))
	}
	if code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
}
