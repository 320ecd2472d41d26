//go:build unix

// Unix only: these run devkit kv serve as a real process and end it with
// SIGTERM or SIGKILL.

package kv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// serverProcess is `devkit kv serve` in a child process.
type serverProcess struct {
	cmd    *exec.Cmd
	addrs  map[string]string // transport → address, from the "listening" logs
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
	err    error
}

var listeningLine = regexp.MustCompile(`msg=listening transport=(\w+) addr=(\S+)`)

// startServe starts `devkit kv serve args...` and waits until every listener
// is up, or the process exits.
func startServe(t *testing.T, args ...string) *serverProcess {
	t.Helper()
	return startServeIn(t, "", nil, args...)
}

// startServeIn is startServe in the working directory wd ("": this
// process's) with env added to the environment.
func startServeIn(t *testing.T, wd string, env []string, args ...string) *serverProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--http", "127.0.0.1:0", "--tcp", "127.0.0.1:0", "--resp", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
	cmd.Dir = wd
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serverProcess{cmd: cmd, addrs: map[string]string{}, exited: make(chan struct{})}
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			if m := listeningLine.FindStringSubmatch(line); m != nil {
				p.addrs[m[1]] = m[2]
				if len(p.addrs) == 3 && !signalled {
					signalled = true
					close(up)
				}
			}
			p.mu.Unlock()
		}
		io.Copy(io.Discard, pipe)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
	})
	select {
	case <-up:
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not come up:\n%s", p.logs())
	}
	return p
}

func (p *serverProcess) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait returns the exit code once the process ends.
func (p *serverProcess) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not exit:\n%s", p.logs())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

func httpPut(t *testing.T, addr, key, value string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/keys/"+key, strings.NewReader(value))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT %s: %s", key, resp.Status)
	}
}

func httpGet(t *testing.T, addr, key string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/keys/" + key)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeProcess_SIGTERMDrainsAndExits0(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, "--data", dir)
	for i := range 50 {
		httpPut(t, p.addrs["http"], fmt.Sprint("k", i), fmt.Sprint("v", i))
	}
	// A client holding an idle connection must not hold up the exit.
	idle, err := net.DialTimeout("tcp", p.addrs["resp"], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0:\n%s", code, p.logs())
	}
	if !strings.Contains(p.logs(), "stopped cleanly; engine closed") {
		t.Fatalf("logs:\n%s", p.logs())
	}
	p = startServe(t, "--data", dir)
	for i := range 50 {
		if code, v := httpGet(t, p.addrs["http"], fmt.Sprint("k", i)); code != 200 || v != fmt.Sprint("v", i) {
			t.Fatalf("after restart k%d = %d %q", i, code, v)
		}
	}
}

func TestServeProcess_KillDash9LosesNoAcknowledgedWrite(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, "--data", dir, "--sync", "always")
	for i := range 100 {
		httpPut(t, p.addrs["http"], fmt.Sprint("k", i), fmt.Sprint("v", i))
	}
	p.cmd.Process.Kill()
	p.wait(t)
	p = startServe(t, "--data", dir)
	for i := range 100 {
		if code, v := httpGet(t, p.addrs["http"], fmt.Sprint("k", i)); code != 200 || v != fmt.Sprint("v", i) {
			t.Fatalf("after kill -9, k%d = %d %q", i, code, v)
		}
	}
}

func TestServeProcess_SecondServerOnTheSameDirectoryFails(t *testing.T) {
	dir := t.TempDir()
	first := startServe(t, "--data", dir)
	second := startServe(t, "--data", dir)
	code := second.wait(t)
	if code == 0 || !strings.Contains(second.logs(), "cannot open the engine") {
		t.Fatalf("second server: exit %d\n%s", code, second.logs())
	}
	if !strings.Contains(strings.ToLower(second.logs()), "lock") {
		t.Fatalf("the reason does not mention the lock:\n%s", second.logs())
	}
	// The first one still serves.
	httpPut(t, first.addrs["http"], "still", "here")
}

func TestServeProcess_WritesAcknowledgedBeforeSIGTERMSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, "--data", dir, "--sync", "always")
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := tcpjson.Dial(context.Background(), p.addrs["tcp"])
			if err != nil {
				return
			}
			defer c.Close()
			for i := 0; ; i++ {
				k := fmt.Sprintf("w%d:%d", w, i)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := c.Set(ctx, []byte(k), []byte(k))
				cancel()
				if err != nil {
					return // the server is gone: this write was not acknowledged
				}
				mu.Lock()
				acked = append(acked, k)
				mu.Unlock()
			}
		}()
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 300 || time.Now().After(deadline) {
			break
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM under load:\n%s", code, p.logs())
	}
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	p = startServe(t, "--data", dir)
	c, err := tcpjson.Dial(context.Background(), p.addrs["tcp"])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, k := range acked {
		if v, err := c.Get(context.Background(), []byte(k)); err != nil || string(v) != k {
			t.Fatalf("acknowledged %q lost across SIGTERM: %q %v", k, v, err)
		}
	}
	t.Logf("%d writes acknowledged before SIGTERM, all present after restart", len(acked))
}
