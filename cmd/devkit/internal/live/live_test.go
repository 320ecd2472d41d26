package live

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/devkit-go/devkit/supervisor"
)

func parse(t *testing.T, text string) families {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func kvText(sets, stats, fsyncs int, bucketCounts [3]int) string {
	return fmt.Sprintf(`# TYPE devkit_kv_requests_total counter
devkit_kv_requests_total{op="set",transport="http"} %d
devkit_kv_requests_total{op="set",transport="resp"} 0
devkit_kv_requests_total{op="stats",transport="http"} %d
# TYPE devkit_kv_fsyncs_total counter
devkit_kv_fsyncs_total %d
# TYPE devkit_kv_request_duration_seconds histogram
devkit_kv_request_duration_seconds_bucket{op="set",transport="http",le="0.001"} %d
devkit_kv_request_duration_seconds_bucket{op="set",transport="http",le="0.01"} %d
devkit_kv_request_duration_seconds_bucket{op="set",transport="http",le="+Inf"} %d
devkit_kv_request_duration_seconds_sum{op="set",transport="http"} 1
devkit_kv_request_duration_seconds_count{op="set",transport="http"} %d
devkit_kv_request_duration_seconds_bucket{op="stats",transport="http",le="0.001"} 0
devkit_kv_request_duration_seconds_bucket{op="stats",transport="http",le="0.01"} 0
devkit_kv_request_duration_seconds_bucket{op="stats",transport="http",le="+Inf"} 500
devkit_kv_request_duration_seconds_sum{op="stats",transport="http"} 1
devkit_kv_request_duration_seconds_count{op="stats",transport="http"} 500
`, sets, stats, fsyncs, bucketCounts[0], bucketCounts[1], bucketCounts[2], bucketCounts[2])
}

// Rates come from the difference of two scrapes; the view's own scrapes
// (op stats) count neither in the rates nor in the latency.
func TestKVRates_FromTwoScrapes(t *testing.T) {
	prev := parse(t, kvText(100, 10, 50, [3]int{100, 100, 100}))
	cur := parse(t, kvText(300, 1000, 150, [3]int{100, 298, 300}))
	var kv KV
	kvRates(&kv, prev, cur, 2)
	if kv.OpsPerSecond["set"] != 100 || kv.TotalOpsPerSecond != 100 || kv.FsyncsPerSecond != 50 {
		t.Fatalf("rates %+v: want 100 sets/s in total and 50 fsyncs/s", kv)
	}
	// 200 sets in the interval, 198 of them in (1ms, 10ms], 2 above: the
	// 99th percentile (rank 198) is the top of the (1ms, 10ms] bucket.
	if kv.P99Seconds == nil || *kv.P99Seconds < 0.0099 || *kv.P99Seconds > 0.0101 {
		t.Fatalf("p99 = %v, want 10ms", *kv.P99Seconds)
	}
	// A restarted server's counters start again: no negative rate.
	kv = KV{}
	kvRates(&kv, cur, prev, 1)
	if kv.TotalOpsPerSecond != 0 || kv.FsyncsPerSecond != 0 || kv.P99Seconds != nil {
		t.Fatalf("after a restart %+v, want no rates", kv)
	}
}

func TestQuantileSince_Interpolates(t *testing.T) {
	prev := buckets{bounds: []float64{1, 2, 4}, counts: []float64{0, 0, 0}}
	cur := buckets{bounds: []float64{1, 2, 4}, counts: []float64{50, 100, 100}}
	if q, ok := cur.quantileSince(prev, 0.75); !ok || q != 1.5 {
		t.Fatalf("p75 = %v, %v; want 1.5 (halfway into (1, 2])", q, ok)
	}
	if _, ok := prev.quantileSince(prev, 0.99); ok {
		t.Fatal("a quantile of nothing observed")
	}
}

func TestGatewayRates_PerRule(t *testing.T) {
	text := func(a, d int) string {
		return fmt.Sprintf("# TYPE ratelimit_allowed_total counter\nratelimit_allowed_total{rule=\"api\"} %d\n# TYPE ratelimit_denied_total counter\nratelimit_denied_total{rule=\"api\"} %d\n", a, d)
	}
	g := Gateway{Rules: []Rule{{Name: "api", Allowed: 30, Denied: 70}}}
	gatewayRates(&g, parse(t, text(10, 10)), parse(t, text(30, 70)), 4)
	if r := g.Rules[0]; r.DecisionsPerSecond != 20 || r.DeniedPerSecond != 15 || g.DeniedPerSecond != 15 {
		t.Fatalf("%+v: want 20 decisions/s, 15 denied/s", g)
	}
}

// The example stack's YAML names both servers: kv serve --http and
// ratelimit proxy --admin, with their ${VAR:-default} ports.
func TestEndpointsOf_TheExampleStack(t *testing.T) {
	t.Setenv("KV_PORT", "4100")
	t.Setenv("GATEWAY_ADMIN_PORT", "")
	cfg, err := supervisor.LoadConfig(filepath.Join("..", "..", "..", "..", "examples", "stack", "ops.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e := EndpointsOf(cfg)
	if e.KVURL != "http://127.0.0.1:4100" || e.GatewayURL != "http://127.0.0.1:8081" {
		t.Fatalf("endpoints %+v", e)
	}
	if EndpointsOf(nil) != (Endpoints{}) {
		t.Fatal("endpoints without a config")
	}
}

func TestBaseURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:4000": "http://127.0.0.1:4000", ":4000": "http://127.0.0.1:4000", "0.0.0.0:1": "http://127.0.0.1:1",
		"[::]:9": "http://[::1]:9", "http://h:1/": "http://h:1", "nonsense": "",
	} {
		if got := baseURL(addr, nil); got != want {
			t.Errorf("baseURL(%q) = %q, want %q", addr, got, want)
		}
	}
	if got := baseURL("", &supervisor.ReadyProbe{HTTP: "http://127.0.0.1:7/health"}); got != "http://127.0.0.1:7" {
		t.Errorf("from the ready probe: %q", got)
	}
}

// Lines split across writes are joined; the ring keeps the newest; Since
// resumes after a sequence number without repeating a line.
func TestLogTail_LinesRingAndSince(t *testing.T) {
	tail := NewLogTail("app", 3)
	changed := tail.Changed()
	tail.Write([]byte("one\ntw"))
	select {
	case <-changed:
	default:
		t.Fatal("no change signalled for a new line")
	}
	tail.Write([]byte("o\r\nthree\nfour\n"))
	got := tail.Lines()
	if len(got) != 3 || got[0].Text != "two" || got[2].Text != "four" || got[2].Seq != 4 {
		t.Fatalf("lines %+v: want two, three, four with seq 2..4", got)
	}
	if s := tail.Since(3); len(s) != 1 || s[0].Text != "four" {
		t.Fatalf("since 3: %+v", s)
	}
	tail.Write([]byte(strings.Repeat("x", 3*maxLine) + "\n"))
	if l := tail.Lines(); len(l[2].Text) != maxLine {
		t.Fatalf("a long line held %d bytes, want %d", len(l[2].Text), maxLine)
	}
}
