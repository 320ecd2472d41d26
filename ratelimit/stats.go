package ratelimit

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds of the decision latency histogram.
var latencyBuckets = [...]time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
}

// Stats counts decisions per rule. Counters only grow. The package exposes
// them as plain numbers (Snapshot) and knows no metrics system: a server
// turns them into Prometheus metrics when scraped (ratelimit/middleware's
// Collector, served on the admin API's /metrics).
type Stats struct {
	// rules maps a rule name to its *ruleStats; read-mostly, so lock-free reads.
	rules sync.Map
}

type ruleStats struct {
	decisionCounters
	storeErrors, canceled, circuitOpen atomic.Int64
	failOpen, failClosed, blockedCache atomic.Int64
	latencyCount                       [len(latencyBuckets) + 1]atomic.Int64
	latencySumNanos                    atomic.Int64
	// deniedRate counts denials per second over the last seconds.
	deniedRate secondRing
	// limits counts the decisions of the store and blocked cache by the
	// limit that bound them: name → *decisionCounters.
	limits sync.Map
}

// decisionCounters splits decisions into allowed, denied and shadow-denied;
// a rule and each limit that binds within it keep one.
type decisionCounters struct{ allowed, denied, shadowDenied atomic.Int64 }

func (c *decisionCounters) count(res *Result) {
	switch {
	case res.Shadowed:
		c.shadowDenied.Add(1)
	case res.Allowed:
		c.allowed.Add(1)
	default:
		c.denied.Add(1)
	}
}

func newStats() *Stats { return &Stats{} }

func (s *Stats) rule(name string) *ruleStats {
	if name == "" {
		name = "default"
	}
	if rs, ok := s.rules.Load(name); ok {
		return rs.(*ruleStats)
	}
	rs, _ := s.rules.LoadOrStore(name, &ruleStats{})
	return rs.(*ruleStats)
}

func (rs *ruleStats) record(res *Result, took time.Duration) {
	rs.count(res)
	switch res.Source {
	case FromFailOpen:
		rs.failOpen.Add(1)
	case FromFailClosed:
		rs.failClosed.Add(1)
	case FromBlockedCache:
		rs.blockedCache.Add(1)
	}
	if res.Source == FromStore || res.Source == FromBlockedCache {
		name := res.Limit.DisplayName()
		lc, ok := rs.limits.Load(name)
		if !ok {
			lc, _ = rs.limits.LoadOrStore(name, &decisionCounters{})
		}
		lc.(*decisionCounters).count(res)
	}
	i, _ := slices.BinarySearch(latencyBuckets[:], took)
	rs.latencyCount[i].Add(1)
	rs.latencySumNanos.Add(int64(took))
}

// RuleCounters is a snapshot of one rule's counters.
type RuleCounters struct {
	Rule         string `json:"rule"`
	Allowed      int64  `json:"allowed"`
	Denied       int64  `json:"denied"`
	ShadowDenied int64  `json:"shadow_denied"`
	StoreErrors  int64  `json:"store_errors"`
	// Canceled counts checks whose caller gave up before the store answered
	// (a client that went away): not store errors.
	Canceled int64 `json:"canceled"`
	// CircuitOpen counts checks an open circuit breaker decided without
	// calling the store.
	CircuitOpen  int64 `json:"circuit_open"`
	FailOpen     int64 `json:"fail_open"`
	FailClosed   int64 `json:"fail_closed"`
	BlockedCache int64 `json:"blocked_cache"`
	// DeniedPerSecond is the rule's denials (shadow ones included) per
	// second over the last RateWindow, up to the second before the snapshot.
	DeniedPerSecond float64 `json:"denied_per_second"`
	// LatencyBuckets[i] counts decisions that took at most LatencyBounds[i];
	// the last entry counts the slower ones.
	LatencyBuckets []int64         `json:"latency_buckets"`
	LatencyBounds  []time.Duration `json:"latency_bounds_seconds"`
	LatencySum     time.Duration   `json:"latency_sum_seconds"`
	// Limits are the decisions per binding limit, sorted by name.
	Limits []LimitCounters `json:"limits,omitempty"`
}

// LimitCounters are the decisions one limit bound.
type LimitCounters struct {
	Limit        string `json:"limit"`
	Allowed      int64  `json:"allowed"`
	Denied       int64  `json:"denied"`
	ShadowDenied int64  `json:"shadow_denied"`
}

// Decisions is the number of decisions counted.
func (c RuleCounters) Decisions() int64 { return c.Allowed + c.Denied + c.ShadowDenied }

// Snapshot returns every rule's counters, sorted by rule.
func (s *Stats) Snapshot() []RuleCounters {
	var out []RuleCounters
	now := time.Now().Unix()
	s.rules.Range(func(k, v any) bool {
		name, rs := k.(string), v.(*ruleStats)
		c := RuleCounters{
			Rule: name, Allowed: rs.allowed.Load(), Denied: rs.denied.Load(), ShadowDenied: rs.shadowDenied.Load(),
			StoreErrors: rs.storeErrors.Load(), Canceled: rs.canceled.Load(), CircuitOpen: rs.circuitOpen.Load(), FailOpen: rs.failOpen.Load(), FailClosed: rs.failClosed.Load(),
			BlockedCache: rs.blockedCache.Load(), LatencyBounds: latencyBuckets[:], DeniedPerSecond: rs.deniedRate.rate(now),
			LatencySum: time.Duration(rs.latencySumNanos.Load()),
		}
		for i := range rs.latencyCount {
			c.LatencyBuckets = append(c.LatencyBuckets, rs.latencyCount[i].Load())
		}
		rs.limits.Range(func(k, v any) bool {
			lc := v.(*decisionCounters)
			c.Limits = append(c.Limits, LimitCounters{Limit: k.(string), Allowed: lc.allowed.Load(), Denied: lc.denied.Load(), ShadowDenied: lc.shadowDenied.Load()})
			return true
		})
		slices.SortFunc(c.Limits, func(a, b LimitCounters) int { return strings.Compare(a.Limit, b.Limit) })
		out = append(out, c)
		return true
	})
	slices.SortFunc(out, func(a, b RuleCounters) int { return strings.Compare(a.Rule, b.Rule) })
	return out
}

// RateWindow is the span of RuleCounters.DeniedPerSecond.
const RateWindow = 10 * time.Second

// secondRing counts events per Unix second in a ring longer than
// RateWindow; a slot is reused when its second comes round again. Writers
// racing on a slot's turn may lose a count of that second: a rate, not a
// counter (the counters are exact).
type secondRing struct {
	slots [16]struct{ sec, n atomic.Int64 }
}

func (r *secondRing) add(sec int64) {
	s := &r.slots[sec%int64(len(r.slots))]
	if old := s.sec.Load(); old != sec && s.sec.CompareAndSwap(old, sec) {
		s.n.Store(0)
	}
	s.n.Add(1)
}

// rate is the events per second over the RateWindow seconds before now.
func (r *secondRing) rate(now int64) float64 {
	window := int64(RateWindow / time.Second)
	var sum int64
	for i := range r.slots {
		s := &r.slots[i]
		if sec := s.sec.Load(); sec >= now-window && sec < now {
			sum += s.n.Load()
		}
	}
	return float64(sum) / float64(window)
}
