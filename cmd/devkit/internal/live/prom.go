package live

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// families is one scrape of a Prometheus text exposition, by metric name.
type families map[string]*dto.MetricFamily

// maxScrape bounds what one scrape reads: a view never holds more than
// this of a server's answer in memory.
const maxScrape = 8 << 20

// scrape GETs url and parses its Prometheus text exposition.
func scrape(ctx context.Context, client *http.Client, url, token string) (families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, maxScrape))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return fams, nil
}

// label returns the value of label name on m, "" when absent.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// value is a counter's, gauge's or untyped sample's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// sum adds the samples of name whose labels match where (nil: all).
func (f families) sum(name string, where func(*dto.Metric) bool) float64 {
	total := 0.0
	for _, m := range f[name].GetMetric() {
		if where == nil || where(m) {
			total += value(m)
		}
	}
	return total
}

// by adds the samples of name grouped by the value of label key.
func (f families) by(name, key string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f[name].GetMetric() {
		out[label(m, key)] += value(m)
	}
	return out
}

// buckets is a cumulative histogram: upper bounds ascending and counts.
type buckets struct {
	bounds []float64
	counts []float64
}

// histogram merges the histogram samples of name whose labels match
// where (nil: all) into one set of buckets (the series share their bounds:
// they come from one HistogramVec).
func (f families) histogram(name string, where func(*dto.Metric) bool) buckets {
	merged := map[float64]float64{}
	for _, m := range f[name].GetMetric() {
		if where != nil && !where(m) {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			merged[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	var h buckets
	for ub := range merged {
		h.bounds = append(h.bounds, ub)
	}
	sort.Float64s(h.bounds)
	for _, ub := range h.bounds {
		h.counts = append(h.counts, merged[ub])
	}
	return h
}

// quantileSince estimates quantile q of the observations made between
// prev and h (the same histogram, scraped twice), interpolating linearly
// inside the bucket as Prometheus's histogram_quantile does. ok is false
// when nothing was observed in between.
func (h buckets) quantileSince(prev buckets, q float64) (float64, bool) {
	if len(h.bounds) == 0 || len(prev.bounds) != len(h.bounds) {
		prev = buckets{}
	}
	delta := make([]float64, len(h.counts))
	for i, c := range h.counts {
		delta[i] = c
		if i < len(prev.counts) {
			delta[i] -= prev.counts[i]
		}
	}
	if len(delta) == 0 || delta[len(delta)-1] <= 0 {
		return 0, false
	}
	total := delta[len(delta)-1]
	rank := q * total
	lower, below := 0.0, 0.0
	for i, ub := range h.bounds {
		if delta[i] >= rank {
			if math.IsInf(ub, 1) {
				return lower, true // beyond the last finite bound: say the bound
			}
			in := delta[i] - below
			if in <= 0 {
				return ub, true
			}
			return lower + (ub-lower)*(rank-below)/in, true
		}
		lower, below = ub, delta[i]
	}
	return lower, true
}
