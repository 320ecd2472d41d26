package gateway_test

// Long-lived traffic through the gateway with the idle timeouts at 1 s:
// what lasts longer than a timeout but never waits that long between two
// reads or two writes completes; an upstream that stalls past the read
// idle timeout is cut.

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit/gateway"
)

// idleTimeouts is a gateway configuration with both idle timeouts at d.
func idleTimeouts(d time.Duration) gateway.Config {
	return gateway.Config{ReadIdleTimeout: d, WriteIdleTimeout: d, Logger: discardLogger()}
}

// gatewayFor starts a gateway with cfg in front of h and returns its URL.
func gatewayFor(t *testing.T, h http.Handler, cfg gateway.Config) string {
	t.Helper()
	upstream := httptest.NewServer(h)
	t.Cleanup(upstream.Close)
	return "http://" + startGateway(t, upstream.URL, openTestPolicy, cfg).Addr()
}

// A server-sent events stream of 3 s, an event every 100 ms, completes
// through idle timeouts of 1 s. The timeouts covered the whole request:
// the stream was cut at the first.
func TestTimeouts_EventStreamLongerThanTheIdleTimeoutsCompletes(t *testing.T) {
	const events = 30
	url := gatewayFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			fmt.Fprintf(w, "data: %d\n\n", i)
			http.NewResponseController(w).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	}), idleTimeouts(time.Second))
	resp, err := http.Get(url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, start := 0, time.Now()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			got++
		}
	}
	if got != events {
		t.Fatalf("%d of %d events in %v (%v): want the whole stream", got, events, time.Since(start).Round(time.Millisecond), sc.Err())
	}
}

// A 16 MB download read at about 4 MB/s (4 s, more than the kernel's
// buffers hold) completes through idle timeouts of 1 s: no write waits
// that long.
func TestTimeouts_SlowDownloadCompletes(t *testing.T) {
	const size = 16 << 20
	url := gatewayFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		io.Copy(w, io.LimitReader(zeros{}, size))
	}), idleTimeouts(time.Second))
	resp, err := http.Get(url + "/download")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64<<10)
	n, start := 0, time.Now()
	for {
		m, err := io.ReadFull(resp.Body, buf)
		n += m
		if err != nil {
			break
		}
		time.Sleep(16 * time.Millisecond) // 64 KB per 16 ms: 4 MB/s
	}
	if n != size {
		t.Fatalf("%d of %d bytes in %v: want the whole download", n, size, time.Since(start).Round(time.Millisecond))
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// An upload sent a chunk every 150 ms for 3 s reaches the upstream whole
// through idle timeouts of 1 s, and its answer comes back.
func TestTimeouts_SlowUploadCompletes(t *testing.T) {
	url := gatewayFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d %v", n, err)
	}), idleTimeouts(time.Second))
	pr, pw := io.Pipe()
	go func() {
		for range 20 {
			pw.Write([]byte(strings.Repeat("u", 1000)))
			time.Sleep(150 * time.Millisecond)
		}
		pw.Close()
	}()
	resp, err := http.Post(url+"/upload", "application/octet-stream", pr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "20000 <nil>" {
		t.Fatalf("%d %q: want 200 and the upstream's count of the whole body, 20000", resp.StatusCode, b)
	}
}

// An upstream that says nothing for longer than the read idle timeout is
// cut: before its headers with a 504, in the middle of its body by ending
// the client's response early.
func TestTimeouts_StalledUpstreamCutAtTheReadIdleTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	url := gatewayFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mid-body" {
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "12345")
			http.NewResponseController(w).Flush()
		}
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
	}), idleTimeouts(500*time.Millisecond))
	start := time.Now()
	resp, err := http.Get(url + "/before-headers")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusGatewayTimeout || took > 3*time.Second {
		t.Errorf("a stalled upstream: %d after %v, want 504 after about 500ms", resp.StatusCode, took.Round(time.Millisecond))
	}
	start = time.Now()
	var b []byte
	resp, err = http.Get(url + "/mid-body")
	if err == nil { // the head may have been held back with the first bytes
		b, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if took := time.Since(start); err == nil || took > 3*time.Second {
		t.Errorf("an upstream stalled mid-body: %q, %v after %v; want the response cut after about 500ms", b, err, took.Round(time.Millisecond))
	}
}
