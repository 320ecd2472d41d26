package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

// The test binary plays three parts, chosen by environment variables: the
// monitor (as devkit does), helper children with scripted behaviour, and
// the test suite itself.
const (
	roleEnv  = "SUP_TEST_ROLE"  // "monitor" or "child"
	childEnv = "SUP_TEST_CHILD" // what a helper child does
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "monitor":
		os.Exit(RunMonitor(os.Stdin, os.Stdout))
	case "child":
		os.Exit(runChild(os.Getenv(childEnv)))
	}
	os.Exit(m.Run())
}

// runChild is a helper process. Modes (several, comma-separated):
//
//	sleep            run until signalled
//	sleepfor=D       sleep for duration D
//	ignore-term      ignore SIGTERM, then sleep
//	exit=N           print a line and exit with N
//	listen=ADDR      print "listening" and accept on ADDR until signalled
//	http=ADDR        serve HTTP 200 on ADDR until signalled
//	orphan           start a grandchild in its own process group (same session) that ignores SIGTERM
//	env=VAR          print VAR's value
//	print=TEXT       print TEXT
func runChild(modes string) int {
	for _, mode := range strings.Split(modes, ",") {
		name, arg, _ := strings.Cut(mode, "=")
		switch name {
		case "ignore-term":
			signal.Ignore(syscall.SIGTERM)
		case "exit":
			n, _ := strconv.Atoi(arg)
			fmt.Println("exiting with", n)
			return n
		case "listen":
			ln, err := net.Listen("tcp", arg)
			if err != nil {
				fmt.Println("listen:", err)
				return 1
			}
			fmt.Println("listening on", ln.Addr())
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
		case "http":
			ln, err := net.Listen("tcp", arg)
			if err != nil {
				fmt.Println("listen:", err)
				return 1
			}
			fmt.Println("serving http on", ln.Addr())
			go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		case "orphan":
			exe, _ := os.Executable()
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), roleEnv+"=child", childEnv+"=ignore-term,print=ignoring,sleep")
			cmd.SysProcAttr = ownGroupAttr()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				fmt.Println("orphan:", err)
				return 1
			}
			// Only once it ignores SIGTERM: a stop may signal it at once.
			bufio.NewReader(out).ReadString('\n')
			fmt.Println("grandchild", cmd.Process.Pid)
			// The session leader lives until the test has looked it up
			// (it closes our stdin), so a loaded machine cannot turn the
			// lookup into a race with our exit.
			_, _ = io.Copy(io.Discard, os.Stdin)
		case "env":
			fmt.Printf("%s=%s\n", arg, os.Getenv(arg))
		case "print":
			fmt.Println(arg)
		case "sleep":
			time.Sleep(time.Hour)
		case "sleepfor":
			d, _ := time.ParseDuration(arg)
			time.Sleep(d)
		}
	}
	return 0
}

// testExe is the test binary, used as monitor and helper child.
func testExe(t testing.TB) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// harness is one supervisor home plus its YAML, cleaned up at test end.
type harness struct {
	t    testing.TB
	dir  string
	home string
	sup  *Supervisor
	// started is every process h.start started, so cleanup can end one a
	// test left untracked (it overwrote the record, say).
	started []proc.Identity
}

// newHarness writes yaml (with {{exe}} replaced by the test binary) and
// returns a Supervisor over it; every process it started is gone when the
// test ends.
func newHarness(t testing.TB, yaml string) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), home: filepath.Join(t.TempDir(), "sup")}
	h.load(yaml)
	t.Cleanup(h.cleanup)
	return h
}

func (h *harness) load(yaml string) {
	h.t.Helper()
	path := filepath.Join(h.dir, "ops.yaml")
	yaml = strings.ReplaceAll(yaml, "{{exe}}", strconv.Quote(testExe(h.t)))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		h.t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		h.t.Fatal(err)
	}
	sup, err := New(h.home, cfg, Options{
		MonitorCommand: []string{testExe(h.t)},
		MonitorEnv:     []string{roleEnv + "=monitor"},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.sup = sup
}

// cleanup force-stops everything recorded, then kills whatever is left of
// every session the home knows of (records and exit records), so no test
// leaks a process, even one that failed half-way.
func (h *harness) cleanup() {
	names, _, _ := h.sup.home.RecordNames()
	var sessions []int
	for _, n := range names {
		if r, _ := h.sup.home.ReadRecord(n); r != nil {
			sessions = append(sessions, r.Process.PID)
		}
	}
	for _, n := range h.sup.cfg.Order {
		if e, _ := h.sup.home.ReadExit(n); e != nil {
			sessions = append(sessions, e.PID)
		}
	}
	ctx := context.Background()
	for _, n := range names {
		h.sup.stopOne(ctx, n, StopOptions{Force: true, Timeout: 200 * time.Millisecond})
	}
	for _, id := range h.started {
		if p, err := proc.Open(id); err == nil { // still that very process
			h.t.Logf("cleanup: pid %d was left running untracked; killing it", id.PID)
			p.Signal(proc.Kill)
			p.Close()
		}
	}
	for _, sid := range sessions {
		members, _ := proc.SessionMembers(sid)
		if slices.ContainsFunc(members, func(m proc.Info) bool { return m.PID == sid }) {
			continue // a live leader now: the PID was reused by an unrelated session
		}
		for _, m := range members {
			if h, err := proc.Open(m.Identity); err == nil {
				h.Signal(proc.Kill)
				h.Close()
			}
		}
	}
}

func (h *harness) start(names ...string) []StartResult {
	h.t.Helper()
	res, err := h.sup.Start(context.Background(), names)
	for _, r := range res {
		if info, lerr := proc.Lookup(r.PID); lerr == nil {
			h.started = append(h.started, info.Identity)
		}
	}
	if err != nil {
		h.t.Fatalf("start %v: %v", names, err)
	}
	return res
}

func (h *harness) status(name string) ProcessStatus {
	h.t.Helper()
	sts, err := h.sup.Status(context.Background(), []string{name})
	if err != nil {
		h.t.Fatalf("status %s: %v", name, err)
	}
	return sts[0]
}

// alive reports whether pid names a live (non-zombie) process.
func alive(pid int) bool {
	_, err := proc.Lookup(pid)
	return err == nil
}

// freeAddr returns a 127.0.0.1 address with a port nobody listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
