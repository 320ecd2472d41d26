package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/devkit-go/devkit/ratelimit/gateway"
)

// TestGateway_MetricsServeUpstreamAndLimiterFromOneEndpoint: the admin
// /metrics carries the upstream metrics (responses by status class, errors,
// latency histogram), the limiter's per rule and per limit, and the Go
// runtime's, in one exposition that a Prometheus parser reads.
func TestGateway_MetricsServeUpstreamAndLimiterFromOneEndpoint(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer upstream.Close()
	srv := startGateway(t, upstream.URL, "rules:\n  - {name: api, paths: [/], limits: [{name: api-limit, limit: 2, window: 1m}]}\n", gateway.Config{Admin: ":0"})
	for _, p := range []string{"/a", "/missing", "/b"} { // the third is denied: it never reaches the upstream
		resp, err := http.Get("http://" + srv.Addr() + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := http.Get("http://" + srv.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f, ok := families[name]
		if !ok {
			t.Fatalf("no metric %s in:\n%s", name, body)
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
			return m.GetGauge().GetValue()
		}
		t.Fatalf("no %s%v in:\n%s", name, labels, body)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"gateway_upstream_responses_total", map[string]string{"class": "2xx"}, 1},
		{"gateway_upstream_responses_total", map[string]string{"class": "4xx"}, 1},
		{"gateway_upstream_responses_total", map[string]string{"class": "5xx"}, 0},
		{"gateway_upstream_errors_total", nil, 0},
		{"gateway_client_gone_total", nil, 0},
		{"gateway_upstream_seconds", nil, 2},
		{"ratelimit_allowed_total", map[string]string{"rule": "api"}, 2},
		{"ratelimit_denied_total", map[string]string{"rule": "api"}, 1},
		{"ratelimit_limit_decisions_total", map[string]string{"rule": "api", "limit": "api-limit", "decision": "denied"}, 1},
		{"ratelimit_decision_seconds", map[string]string{"rule": "api"}, 3},
	} {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, ok := families["go_goroutines"]; !ok {
		t.Error("the gateway's metrics lack the Go runtime's (go_goroutines)")
	}
}
