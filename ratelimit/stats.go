package ratelimit

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LatencyBuckets are the upper bounds of the decision latency histogram.
var latencyBuckets = [...]time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
}

// Stats counts decisions per rule. Counters only grow.
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
	// LatencyBuckets[i] counts decisions that took at most LatencyBounds[i];
	// the last entry counts the slower ones.
	LatencyBuckets []int64         `json:"latency_buckets"`
	LatencyBounds  []time.Duration `json:"latency_bounds"`
	LatencySum     time.Duration   `json:"latency_sum"`
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
	s.rules.Range(func(k, v any) bool {
		name, rs := k.(string), v.(*ruleStats)
		c := RuleCounters{
			Rule: name, Allowed: rs.allowed.Load(), Denied: rs.denied.Load(), ShadowDenied: rs.shadowDenied.Load(),
			StoreErrors: rs.storeErrors.Load(), Canceled: rs.canceled.Load(), CircuitOpen: rs.circuitOpen.Load(), FailOpen: rs.failOpen.Load(), FailClosed: rs.failClosed.Load(),
			BlockedCache: rs.blockedCache.Load(), LatencyBounds: latencyBuckets[:],
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

// WritePrometheus writes the counters in the Prometheus text exposition
// format (version 0.0.4), ready to serve on /metrics.
func (s *Stats) WritePrometheus(w io.Writer) error {
	snap := s.Snapshot()
	var b strings.Builder
	counter := func(name, help string, value func(RuleCounters) int64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		for _, c := range snap {
			fmt.Fprintf(&b, "%s{rule=%s} %d\n", name, strconv.Quote(c.Rule), value(c))
		}
	}
	counter("ratelimit_allowed_total", "Requests allowed.", func(c RuleCounters) int64 { return c.Allowed })
	counter("ratelimit_denied_total", "Requests denied.", func(c RuleCounters) int64 { return c.Denied })
	counter("ratelimit_shadow_denied_total", "Requests a limit denied but shadow mode let through.", func(c RuleCounters) int64 { return c.ShadowDenied })
	counter("ratelimit_store_errors_total", "Store calls that failed or timed out.", func(c RuleCounters) int64 { return c.StoreErrors })
	counter("ratelimit_canceled_total", "Checks whose caller went away before the store answered (not store errors).", func(c RuleCounters) int64 { return c.Canceled })
	counter("ratelimit_circuit_open_total", "Checks decided by an open circuit breaker without calling the store.", func(c RuleCounters) int64 { return c.CircuitOpen })
	counter("ratelimit_fail_open_total", "Requests let through by the fail-open policy.", func(c RuleCounters) int64 { return c.FailOpen })
	counter("ratelimit_fail_closed_total", "Requests refused by the fail-closed policy.", func(c RuleCounters) int64 { return c.FailClosed })
	counter("ratelimit_blocked_cache_total", "Requests denied from the in-process blocked cache.", func(c RuleCounters) int64 { return c.BlockedCache })
	const d = "ratelimit_limit_decisions_total"
	fmt.Fprintf(&b, "# HELP %s Decisions of the store and blocked cache by the limit that bound them.\n# TYPE %s counter\n", d, d)
	for _, c := range snap {
		for _, lc := range c.Limits {
			for _, v := range [...]struct {
				decision string
				n        int64
			}{{"allowed", lc.Allowed}, {"denied", lc.Denied}, {"shadow_denied", lc.ShadowDenied}} {
				fmt.Fprintf(&b, "%s{rule=%s,limit=%s,decision=%q} %d\n", d, strconv.Quote(c.Rule), strconv.Quote(lc.Limit), v.decision, v.n)
			}
		}
	}
	const h = "ratelimit_decision_seconds"
	fmt.Fprintf(&b, "# HELP %s Time to decide a request, store included.\n# TYPE %s histogram\n", h, h)
	for _, c := range snap {
		rule := strconv.Quote(c.Rule)
		var cum int64
		for i, n := range c.LatencyBuckets {
			cum += n
			le := "+Inf"
			if i < len(c.LatencyBounds) {
				le = strconv.FormatFloat(c.LatencyBounds[i].Seconds(), 'g', -1, 64)
			}
			fmt.Fprintf(&b, "%s_bucket{rule=%s,le=%q} %d\n", h, rule, le, cum)
		}
		fmt.Fprintf(&b, "%s_sum{rule=%s} %g\n%s_count{rule=%s} %d\n", h, rule, c.LatencySum.Seconds(), h, rule, cum)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
