//go:build unix

package live

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server"
)

// kvExposition starts a real KV server, sends it some traffic over HTTP (so
// that its request histogram holds the series an active server has) and
// returns its /metrics as a view reads it.
func kvExposition(b *testing.B) []byte {
	b.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := kvstore.Open(b.TempDir(), kvstore.Options{Sync: kvstore.SyncNone, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	srv := server.New(db, server.Config{HTTPAddr: "127.0.0.1:0", Logger: quiet})
	if err := srv.Listen(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	base := "http://" + srv.Addrs().HTTP
	for i := range 200 {
		for _, r := range []struct{ method, path string }{{"PUT", "/keys/k"}, {"GET", "/keys/k"}, {"DELETE", "/keys/gone"}, {"GET", "/health"}, {"GET", "/metrics"}} {
			req, _ := http.NewRequest(r.method, base+r.path, strings.NewReader("value"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatalf("request %d: %v", i, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSampler_TickOverAKVServer is the snapshot layer's cost per tick
// of a view watching a KV server: one Sample (the scrape of /metrics, its
// parse, the rates against the previous tick). The exposition is a real
// server's, served as recorded so that the figure is the view's work;
// cpu-µs/tick is the process's CPU time (user + system) per tick, the
// recorded body's serving included (a write of it), which is what an idle
// view costs a core once a second.
func BenchmarkSampler_TickOverAKVServer(b *testing.B) {
	body := kvExposition(b)
	static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	}))
	defer static.Close()
	s := NewSampler(Sources{KVURL: static.URL})
	ctx := context.Background()
	if snap := s.Sample(ctx); snap.KV == nil || !snap.KV.Up {
		b.Fatalf("first sample: %+v", snap.KV)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		s.Sample(ctx)
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/tick")
	b.ReportMetric(float64(len(body)), "exposition-bytes")
}
