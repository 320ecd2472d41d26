package middleware

// The limiter's metrics are read from its counters (ratelimit.Stats) when
// scraped: the decision path does atomic adds only, and the numbers served
// on /metrics are those of Stats.Snapshot. The ratelimit package itself
// knows nothing of Prometheus.

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/devkit-go/devkit/ratelimit"
)

// ruleCounter is one per-rule counter of ratelimit.RuleCounters.
type ruleCounter struct {
	desc  *prometheus.Desc
	value func(ratelimit.RuleCounters) int64
}

func ruleCounterOf(name, help string, value func(ratelimit.RuleCounters) int64) ruleCounter {
	return ruleCounter{prometheus.NewDesc(name, help, []string{"rule"}, nil), value}
}

var (
	ruleCounters = [...]ruleCounter{
		ruleCounterOf("ratelimit_allowed_total", "Requests allowed.", func(c ratelimit.RuleCounters) int64 { return c.Allowed }),
		ruleCounterOf("ratelimit_denied_total", "Requests denied.", func(c ratelimit.RuleCounters) int64 { return c.Denied }),
		ruleCounterOf("ratelimit_shadow_denied_total", "Requests a limit denied but shadow mode let through.", func(c ratelimit.RuleCounters) int64 { return c.ShadowDenied }),
		ruleCounterOf("ratelimit_store_errors_total", "Store calls that failed or timed out.", func(c ratelimit.RuleCounters) int64 { return c.StoreErrors }),
		ruleCounterOf("ratelimit_canceled_total", "Checks whose caller went away before the store answered (not store errors).", func(c ratelimit.RuleCounters) int64 { return c.Canceled }),
		ruleCounterOf("ratelimit_circuit_open_total", "Checks decided by an open circuit breaker without calling the store.", func(c ratelimit.RuleCounters) int64 { return c.CircuitOpen }),
		ruleCounterOf("ratelimit_fail_open_total", "Requests let through by the fail-open policy.", func(c ratelimit.RuleCounters) int64 { return c.FailOpen }),
		ruleCounterOf("ratelimit_fail_closed_total", "Requests refused by the fail-closed policy.", func(c ratelimit.RuleCounters) int64 { return c.FailClosed }),
		ruleCounterOf("ratelimit_blocked_cache_total", "Requests denied from the in-process blocked cache.", func(c ratelimit.RuleCounters) int64 { return c.BlockedCache }),
	}
	limitDecisions = prometheus.NewDesc("ratelimit_limit_decisions_total",
		"Decisions of the store and blocked cache by the limit that bound them.", []string{"rule", "limit", "decision"}, nil)
	decisionSeconds = prometheus.NewDesc("ratelimit_decision_seconds",
		"Time to decide a request, store included.", []string{"rule"}, nil)
	storeEvictions = prometheus.NewDesc("ratelimit_store_evictions_total",
		"Live identities a bounded store (memory) evicted to make room, by kind: counter, or block (a penalty block lifted early).",
		[]string{"kind"}, nil)
)

// Collector is a prometheus.Collector of a limiter's counters: per rule,
// the decisions (ratelimit_allowed_total, ratelimit_denied_total...), the
// decisions by the limit that bound them (ratelimit_limit_decisions_total
// with labels rule, limit, decision) and the decision latency histogram
// (ratelimit_decision_seconds), and, for a bounded store, the identities
// it evicted (ratelimit_store_evictions_total by kind). Register it in the registry a server
// exposes; NewAdmin does so for its /metrics.
type Collector struct{ l *ratelimit.Limiter }

// NewCollector returns the collector of l's counters.
func NewCollector(l *ratelimit.Limiter) *Collector { return &Collector{l} }

var _ prometheus.Collector = (*Collector)(nil)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, rc := range ruleCounters {
		ch <- rc.desc
	}
	ch <- limitDecisions
	ch <- decisionSeconds
	if _, ok := c.l.Store().(ratelimit.Evicting); ok {
		ch <- storeEvictions
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if es, ok := c.l.Store().(ratelimit.Evicting); ok {
		ev := es.Evictions()
		ch <- prometheus.MustNewConstMetric(storeEvictions, prometheus.CounterValue, float64(ev.Counters), "counter")
		ch <- prometheus.MustNewConstMetric(storeEvictions, prometheus.CounterValue, float64(ev.Blocks), "block")
	}
	for _, rc := range c.l.Stats().Snapshot() {
		for _, m := range ruleCounters {
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(m.value(rc)), rc.Rule)
		}
		for _, lc := range rc.Limits {
			for _, d := range [...]struct {
				decision string
				n        int64
			}{{"allowed", lc.Allowed}, {"denied", lc.Denied}, {"shadow_denied", lc.ShadowDenied}} {
				ch <- prometheus.MustNewConstMetric(limitDecisions, prometheus.CounterValue, float64(d.n), rc.Rule, lc.Limit, d.decision)
			}
		}
		// LatencyBuckets[i] counts the decisions of bucket i alone; a
		// Prometheus bucket counts those at or below its bound.
		buckets := make(map[float64]uint64, len(rc.LatencyBounds))
		var cumulative uint64
		for i, n := range rc.LatencyBuckets {
			cumulative += uint64(n)
			if i < len(rc.LatencyBounds) {
				buckets[rc.LatencyBounds[i].Seconds()] = cumulative
			}
		}
		ch <- prometheus.MustNewConstHistogram(decisionSeconds, cumulative, rc.LatencySum.Seconds(), buckets, rc.Rule)
	}
}
