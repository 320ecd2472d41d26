package live

import (
	"bytes"
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

// scraper reads one server's /metrics every tick and parses only what a
// snapshot uses: the families it names and, where a sample has an op label,
// the ops it counts, leaving out their series that are still zero (a
// counter at 0, a histogram whose _count is 0), which add nothing to a sum
// or a rate. A KV server's exposition is mostly the Go runtime's families
// and the request histogram's 21 series (op × transport, made up front),
// most of them unused; parsing them all was the largest part of a tick's
// work. Its buffers are kept from one tick to the next.
type scraper struct {
	families map[string]bool // family names to parse
	ops      map[string]bool // when set, a sample with an op label outside it is passed over
	body     bytes.Buffer
	kept     []byte
	zero     map[string]bool // labels of the histogram series whose _count is 0, this scrape
}

// scrape GETs url and parses the families s keeps from its text exposition.
func (s *scraper) scrape(ctx context.Context, client *http.Client, url, token string) (families, error) {
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
	s.body.Reset()
	if _, err := s.body.ReadFrom(io.LimitReader(resp.Body, maxScrape)); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	s.kept = s.filter(s.kept[:0], s.body.Bytes())
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(s.kept))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return fams, nil
}

// filter appends to dst the lines of text that belong to the families s
// keeps: their comment lines (HELP, TYPE) and their samples, a histogram's
// _bucket, _sum and _count included.
func (s *scraper) filter(dst, text []byte) []byte {
	// A histogram's _count comes after its buckets: a first pass finds the
	// series still at zero.
	clear(s.zero)
	eachLine(text, func(line []byte) {
		if name, labels, value, ok := s.opSample(line); ok && string(value) == "0" && bytes.HasSuffix(name, []byte("_count")) {
			if s.zero == nil {
				s.zero = map[string]bool{}
			}
			s.zero[string(labels)] = true
		}
	})
	eachLine(text, func(line []byte) {
		if s.keeps(line) {
			dst = append(dst, line...)
		}
	})
	return dst
}

// eachLine calls fn with every line of text, its newline included.
func eachLine(text []byte, fn func(line []byte)) {
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i+1], text[i+1:]
		} else {
			text = nil
		}
		fn(line)
	}
}

func (s *scraper) keeps(line []byte) bool {
	if rest, ok := bytes.CutPrefix(line, []byte("# ")); ok {
		// A HELP or TYPE comment line: the family is its second word.
		_, rest, _ = bytes.Cut(rest, []byte(" "))
		return s.families[string(word(rest))]
	}
	end := bytes.IndexAny(line, "{ \t")
	if end <= 0 || !s.families[string(family(line[:end], s.families))] {
		return false
	}
	name, labels, value, ok := s.opSample(line)
	if !ok {
		return true // no op label: a gauge or counter of the whole server
	}
	op, _, _ := bytes.Cut(labels[bytes.Index(labels, []byte(`op="`))+4:], []byte(`"`))
	if !s.ops[string(op)] {
		return false
	}
	if len(family(name, s.families)) != len(name) {
		// A histogram's line: its series goes whole or not at all, since a
		// bucket at 0 now may not be at the next scrape, and the p99 over
		// the interval compares the two scrapes' buckets one by one.
		return !s.zero[string(labels)]
	}
	return string(value) != "0"
}

// family is the family of a sample's metric name: the name itself, or the
// name without a histogram's _bucket, _sum or _count.
func family(name []byte, known map[string]bool) []byte {
	if known[string(name)] {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := bytes.CutSuffix(name, []byte(suffix)); ok {
			return b
		}
	}
	return name
}

// word is text up to its first space, tab or newline.
func word(text []byte) []byte {
	if i := bytes.IndexAny(text, " \t\n"); i >= 0 {
		return text[:i]
	}
	return text
}

// opSample splits a sample line that has an op label (when s filters ops)
// into its metric name, its labels without le (the series), and its value.
func (s *scraper) opSample(line []byte) (name, labels, value []byte, ok bool) {
	open := bytes.IndexByte(line, '{')
	closing := bytes.LastIndexByte(line, '}')
	if s.ops == nil || open <= 0 || closing < open || !bytes.Contains(line[open:closing], []byte(`op="`)) {
		return nil, nil, nil, false
	}
	labels = line[open+1 : closing]
	if i := bytes.Index(labels, []byte(`le="`)); i >= 0 {
		// client_golang writes le last: the series is what precedes it.
		labels = bytes.TrimSuffix(labels[:i], []byte(","))
	}
	value = word(bytes.TrimLeft(line[closing+1:], " \t"))
	return line[:open], labels, value, len(value) > 0
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
