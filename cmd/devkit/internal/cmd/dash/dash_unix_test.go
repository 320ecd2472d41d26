//go:build unix

package dash

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devkit-go/devkit/cmd/devkit/internal/stacktest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stacktest.RemoveBuilt()
	os.Exit(code)
}

// chromium finds a headless-capable Chromium, or skips (fails under CI=true).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium is required under CI=true: apt-get install -y chromium")
	}
	t.Skip("Chromium not installed (apt-get install -y chromium, or brew install --cask chromium): the browser test of devkit dash is skipped")
	return ""
}

// startDash runs `devkit dash` over s and returns its URL.
func startDash(t *testing.T, s *stacktest.Stack) string {
	t.Helper()
	cmd := exec.Command(s.Bin, "dash", "-c", s.Config, "--listen", "127.0.0.1:0", "--interval", "500ms")
	cmd.Env = s.Environ()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("devkit dash did not end within 10s of SIGTERM")
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("devkit dash printed no address: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "devkit dash: ")
	if !ok {
		t.Fatalf("devkit dash printed %q, want its address", line)
	}
	return url
}

// awaitJS polls a JavaScript boolean expression in the page until it holds.
func awaitJS(t *testing.T, ctx context.Context, within time.Duration, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML("main"))
			t.Fatalf("timed out after %v waiting until %s (%s); the page:\n%s", within, what, expr, html)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func jsInt(t *testing.T, ctx context.Context, expr string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return n
}

// TestDash_InChromium is devkit dash used as a person would: the real
// binary over the real example stack, in headless Chromium.
func TestDash_InChromium(t *testing.T) {
	exe := chromium(t)
	s := stacktest.Start(t, stacktest.Devkit(t), stacktest.Options{Restart: true})
	url := startDash(t, s)

	actx, cancel := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}

	// Every process shows, running.
	awaitJS(t, ctx, 30*time.Second, "kv and gateway show running",
		`["kv","gateway"].every(n => { const r = document.querySelector('#processes tr[data-name="'+n+'"]'); return r && r.dataset.state === "running" })`)

	// kill -9 of kv: its row shows the restart.
	pid, err := chromedp.Run(ctx, chromedp.Evaluate[int](`+document.querySelector('#processes tr[data-name="kv"]').children[2].textContent`))
	if err != nil || pid <= 0 {
		t.Fatalf("kv's pid on the page: %d, %v", pid, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitJS(t, ctx, 30*time.Second, "kv's row shows the restart",
		fmt.Sprintf(`(() => { const r = document.querySelector('#processes tr[data-name="kv"]'); return r.dataset.state === "running" && r.dataset.restarts === "1" && r.children[2].textContent !== "%d" })()`, pid))

	// A denial flood shows in the rule's chart.
	gw := s.URL("GATEWAY_PORT")
	for range 40 {
		req, _ := http.NewRequest("PUT", gw+"/keys/flood", strings.NewReader("v"))
		req.Header = http.Header{"X-Workspace-Id": {"acme"}, "X-Workspace-Plan": {"free"}, "X-User-Id": {"flood"}}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	awaitJS(t, ctx, 30*time.Second, "the denials show in the rule's chart",
		`[...document.querySelectorAll('#chart-denied polyline')].some(l => +l.dataset.max > 0)`)

	// The log of the selected process (kv, the first) resumes after a
	// reload: what was shown is shown again, each line once, then new lines.
	awaitJS(t, ctx, 30*time.Second, "kv's log shows its restart", `document.querySelectorAll('#log div').length >= 4`)
	before := jsInt(t, ctx, `document.querySelectorAll('#log div').length`)
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	awaitJS(t, ctx, 30*time.Second, "the page is live again", `document.getElementById("conn").textContent === "live"`)
	if _, err := s.Run("sup", "-c", s.Config, "restart", "kv"); err != nil {
		t.Fatal(err)
	}
	awaitJS(t, ctx, 30*time.Second, "new lines after the reload", fmt.Sprintf(`document.querySelectorAll('#log div').length > %d`, before))
	dup := jsInt(t, ctx, `(() => { const ids = [...document.querySelectorAll('#log div')].map(d => d.dataset.id); return ids.length - new Set(ids).size })()`)
	texts := jsInt(t, ctx, `(() => { const t = [...document.querySelectorAll('#log div')].map(d => d.dataset.id + d.textContent); return t.length - new Set(t).size })()`)
	if dup != 0 || texts != 0 {
		t.Fatalf("after a reload the log holds %d duplicate ids, %d duplicate lines", dup, texts)
	}

	// A screenshot for the docs (UPDATE_SCREENSHOTS=1 writes docs/dash.png),
	// once the restarted KV server answers again.
	awaitJS(t, ctx, 30*time.Second, "the KV server is up again", `document.getElementById("kv-summary").textContent.endsWith("ops/s")`)
	time.Sleep(2 * time.Second)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if os.Getenv("UPDATE_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "..", "..", "..", "..", "docs")
	}
	if err := os.WriteFile(filepath.Join(dir, "dash.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
