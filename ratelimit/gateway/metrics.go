package gateway

// Upstream metrics count every response the upstream gave by status class
// and its latency; an upstream that failed is an error, a client that left
// is counted apart (it says nothing about the upstream).

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

var upstreamBuckets = [...]time.Duration{
	500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

type upstreamMetrics struct {
	classes    [6]atomic.Int64 // 1xx..5xx at 1..5
	errors     atomic.Int64
	clientGone atomic.Int64
	buckets    [len(upstreamBuckets) + 1]atomic.Int64
	sumNanos   atomic.Int64
}

func newUpstreamMetrics() *upstreamMetrics { return &upstreamMetrics{} }

func (m *upstreamMetrics) observe(status int, took time.Duration) {
	if c := status / 100; c >= 1 && c <= 5 {
		m.classes[c].Add(1)
	}
	i, _ := slices.BinarySearch(upstreamBuckets[:], took)
	m.buckets[i].Add(1)
	m.sumNanos.Add(int64(took))
}

func (m *upstreamMetrics) write(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# HELP gateway_upstream_responses_total Upstream responses by status class.\n# TYPE gateway_upstream_responses_total counter\n")
	for c := 1; c <= 5; c++ {
		fmt.Fprintf(&b, "gateway_upstream_responses_total{class=\"%dxx\"} %d\n", c, m.classes[c].Load())
	}
	fmt.Fprintf(&b, "# HELP gateway_upstream_errors_total Requests the upstream did not answer (refused, reset, timed out).\n# TYPE gateway_upstream_errors_total counter\ngateway_upstream_errors_total %d\n", m.errors.Load())
	fmt.Fprintf(&b, "# HELP gateway_client_gone_total Requests whose client went away before the upstream answered.\n# TYPE gateway_client_gone_total counter\ngateway_client_gone_total %d\n", m.clientGone.Load())
	const h = "gateway_upstream_seconds"
	fmt.Fprintf(&b, "# HELP %s Time to the upstream's response headers.\n# TYPE %s histogram\n", h, h)
	var cum int64
	for i := range m.buckets {
		cum += m.buckets[i].Load()
		le := "+Inf"
		if i < len(upstreamBuckets) {
			le = fmt.Sprint(upstreamBuckets[i].Seconds())
		}
		fmt.Fprintf(&b, "%s_bucket{le=%q} %d\n", h, le, cum)
	}
	fmt.Fprintf(&b, "%s_sum %g\n%s_count %d\n", h, time.Duration(m.sumNanos.Load()).Seconds(), h, cum)
	_, err := io.WriteString(w, b.String())
	return err
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
			t.m.errors.Add(1)
		}
		return nil, err
	}
	t.m.observe(resp.StatusCode, time.Since(start))
	return resp, nil
}
