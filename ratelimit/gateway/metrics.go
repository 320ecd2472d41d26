package gateway

// Upstream metrics count every response the upstream gave by status class
// and its latency; an upstream that failed is an error, a client that left
// is counted apart (it says nothing about the upstream). They live in the
// gateway's own Prometheus registry, with the Go runtime and process
// collectors, which the admin API serves beside the limiter's metrics.

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// upstreamBuckets are the bounds, in seconds, of gateway_upstream_seconds.
var upstreamBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

type upstreamMetrics struct {
	registry   *prometheus.Registry
	classes    [6]prometheus.Counter // 1xx..5xx at 1..5
	errors     prometheus.Counter
	clientGone prometheus.Counter
	latency    prometheus.Histogram
}

func newUpstreamMetrics() *upstreamMetrics {
	m := &upstreamMetrics{
		registry: prometheus.NewRegistry(),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "gateway_upstream_errors_total",
			Help: "Requests the upstream did not answer (refused, reset, timed out)."}),
		clientGone: prometheus.NewCounter(prometheus.CounterOpts{Name: "gateway_client_gone_total",
			Help: "Requests whose client went away before the upstream answered."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gateway_upstream_seconds",
			Help: "Time to the upstream's response headers.", Buckets: upstreamBuckets}),
	}
	responses := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gateway_upstream_responses_total",
		Help: "Upstream responses by status class."}, []string{"class"})
	for c := 1; c <= 5; c++ {
		m.classes[c] = responses.WithLabelValues(strconv.Itoa(c) + "xx")
	}
	// A fresh registry holds nothing these could collide with.
	m.registry.MustRegister(responses, m.errors, m.clientGone, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *upstreamMetrics) observe(status int, took time.Duration) {
	if c := status / 100; c >= 1 && c <= 5 {
		m.classes[c].Inc()
	}
	m.latency.Observe(took.Seconds())
}

// measuredTransport observes every upstream round trip.
type measuredTransport struct {
	next http.RoundTripper
	m    *upstreamMetrics
}

func (t *measuredTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		if r.Context().Err() == nil {
			t.m.errors.Inc()
		}
		return nil, err
	}
	t.m.observe(resp.StatusCode, time.Since(start))
	return resp, nil
}
