// Package live is the one snapshot layer under `devkit top` and `devkit
// dash`: every tick it reads what already exists — the supervisor's status,
// the KV server's /metrics and the gateway's admin API — and turns two
// readings into rates. It only reads: opening and closing a view changes
// nothing, and any number of views can be open at once.
package live

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/devkit-go/devkit/supervisor"
)

// Schema versions the JSON form of a Snapshot.
const Schema = "devkit.top/v1"

// Snapshot is one reading of the whole stack.
type Snapshot struct {
	Schema  string    `json:"schema"`
	Time    time.Time `json:"time"`
	Project string    `json:"project"`
	// IntervalSeconds is the time since the reading the rates are taken
	// against; 0 for a first reading, which has no rates.
	IntervalSeconds float64   `json:"interval_seconds"`
	Processes       []Process `json:"processes"`
	// StatusError is why the supervisor's status could not be read.
	StatusError string   `json:"status_error,omitempty"`
	KV          *KV      `json:"kv,omitempty"`
	Gateway     *Gateway `json:"gateway,omitempty"`
}

// Process is a process's status with its CPU use over the interval.
type Process struct {
	supervisor.ProcessStatus
	// CPUPercent is the tree's CPU time over the interval, in percent of
	// one core (200 is two cores busy); absent without two readings of the
	// same process.
	CPUPercent *float64 `json:"cpu_percent,omitempty"`
}

// KV is the KV server's reading.
type KV struct {
	URL   string `json:"url"`
	Up    bool   `json:"up"`
	Error string `json:"error,omitempty"`
	// OpsPerSecond is requests per second by operation (get, set, delete,
	// scan...), every transport together; the view's own scrapes (stats)
	// and health probes (ping) are left out.
	OpsPerSecond map[string]float64 `json:"ops_per_second,omitempty"`
	// TotalOpsPerSecond sums OpsPerSecond.
	TotalOpsPerSecond float64 `json:"total_ops_per_second"`
	// P99Seconds is the 99th percentile of request latency over the
	// interval (from the histogram's buckets); absent when idle.
	P99Seconds      *float64 `json:"p99_seconds,omitempty"`
	Keys            int64    `json:"keys"`
	DataBytes       int64    `json:"data_bytes"`
	WALBytes        int64    `json:"wal_bytes"`
	WALSegments     int64    `json:"wal_segments"`
	FsyncsPerSecond float64  `json:"fsyncs_per_second"`
	Connections     int64    `json:"connections"`
	ReadOnly        bool     `json:"read_only"`
	RSSBytes        int64    `json:"rss_bytes,omitempty"`
}

// Gateway is the rate-limiting gateway's reading.
type Gateway struct {
	URL   string `json:"url"`
	Up    bool   `json:"up"`
	Error string `json:"error,omitempty"`
	// Rules are the policy's rules, by name.
	Rules []Rule `json:"rules"`
	// DecisionsPerSecond and DeniedPerSecond sum the rules.
	DecisionsPerSecond float64 `json:"decisions_per_second"`
	DeniedPerSecond    float64 `json:"denied_per_second"`
	// Top is the identities with the most hits (the store's view).
	Top []Consumer `json:"top"`
	// TopDenied is the identities denied most, when the gateway keeps them
	// (/top?by=denied); absent from a gateway that does not.
	TopDenied           []Consumer `json:"top_denied,omitempty"`
	StoreOK             bool       `json:"store_ok"`
	StoreLatencySeconds float64    `json:"store_latency_seconds"`
	StoreError          string     `json:"store_error,omitempty"`
	Breakers            []Breaker  `json:"breakers,omitempty"`
}

// Rule is one rule's decisions.
type Rule struct {
	Name               string  `json:"name"`
	Allowed            int64   `json:"allowed"`
	Denied             int64   `json:"denied"`
	DecisionsPerSecond float64 `json:"decisions_per_second"`
	DeniedPerSecond    float64 `json:"denied_per_second"`
}

// Consumer is one identity and its count.
type Consumer struct {
	Key    string `json:"key"`
	Hits   int64  `json:"hits,omitempty"`
	Denied int64  `json:"denied,omitempty"`
}

// Breaker is one store node's circuit breaker.
type Breaker struct {
	Node  string `json:"node"`
	State string `json:"state"`
}

// Sources say where a Sampler reads from. Empty URLs are not read.
type Sources struct {
	// Sup is the project's supervisor (status only).
	Sup *supervisor.Supervisor
	// KVURL is the KV server's HTTP base URL (http://127.0.0.1:4000).
	KVURL, KVToken string
	// GatewayURL is the gateway's admin base URL (http://127.0.0.1:8081).
	GatewayURL, GatewayToken string
	// Client makes the requests; nil is a client with a short timeout.
	Client *http.Client
}

// Sampler takes snapshots and keeps the previous reading to turn counters
// into rates. It is safe for one caller at a time.
type Sampler struct {
	src Sources
	// status reads the supervisor's status, looking for each tree's
	// descendants every few seconds rather than every tick.
	status    *supervisor.StatusReader
	prev      *reading
	kvMetrics scraper // the KV server's /metrics
	gwMetrics scraper // the gateway's /metrics
	// noTopDenied is set once the gateway answered /top?by=denied with
	// hits only: a gateway without the ranking, not asked again.
	noTopDenied bool
}

// reading is the raw counters of one Sample.
type reading struct {
	at      time.Time
	cpu     map[string]float64 // process name + pid -> CPU seconds
	kv      families
	gateway families
}

// NewSampler returns a Sampler over src.
func NewSampler(src Sources) *Sampler {
	if src.Client == nil {
		src.Client = &http.Client{Timeout: 2 * time.Second}
	}
	var status *supervisor.StatusReader
	if src.Sup != nil {
		status = src.Sup.NewStatusReader(0)
	}
	return &Sampler{
		src:    src,
		status: status,
		kvMetrics: scraper{families: setOf(
			"devkit_kv_keys", "devkit_kv_data_bytes", "devkit_kv_log_bytes", "devkit_kv_log_segments",
			"devkit_kv_open_connections", "devkit_kv_read_only", "process_resident_memory_bytes",
			"devkit_kv_requests_total", "devkit_kv_fsyncs_total", "devkit_kv_request_duration_seconds"),
			ops: kvOps},
		gwMetrics: scraper{families: setOf("ratelimit_allowed_total", "ratelimit_denied_total")},
	}
}

func setOf(names ...string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// Sample reads everything once. What cannot be read is reported in the
// snapshot (a down server is Up: false with the error), never as an error:
// a view shows a half-broken stack, which is when it is needed most.
func (s *Sampler) Sample(ctx context.Context) Snapshot {
	now := time.Now()
	snap := Snapshot{Schema: Schema, Time: now.UTC()}
	cur := &reading{at: now, cpu: map[string]float64{}}
	var wg sync.WaitGroup
	if s.src.KVURL != "" {
		wg.Go(func() { cur.kv, snap.KV = s.readKV(ctx) })
	}
	if s.src.GatewayURL != "" {
		wg.Go(func() { cur.gateway, snap.Gateway = s.readGateway(ctx) })
	}
	if s.src.Sup != nil {
		snap.Project = s.src.Sup.Project()
		sts, err := s.status.Status(ctx, nil)
		if err != nil {
			snap.StatusError = err.Error()
		}
		for _, st := range sts {
			p := Process{ProcessStatus: st}
			key := fmt.Sprintf("%s/%d", st.Name, st.PID)
			if st.UsageSource != "" {
				cur.cpu[key] = st.CPUSeconds
			}
			if s.prev != nil {
				if before, ok := s.prev.cpu[key]; ok && st.UsageSource != "" {
					pct := max(0, 100*(st.CPUSeconds-before)/now.Sub(s.prev.at).Seconds())
					p.CPUPercent = &pct
				}
			}
			snap.Processes = append(snap.Processes, p)
		}
	}
	wg.Wait()
	if s.prev != nil {
		dt := now.Sub(s.prev.at).Seconds()
		snap.IntervalSeconds = dt
		if snap.KV != nil && snap.KV.Up && s.prev.kv != nil {
			kvRates(snap.KV, s.prev.kv, cur.kv, dt)
		}
		if snap.Gateway != nil && snap.Gateway.Up && s.prev.gateway != nil {
			gatewayRates(snap.Gateway, s.prev.gateway, cur.gateway, dt)
		}
	}
	s.prev = cur
	return snap
}

// kvOps are the operations a KV reading counts: not the view's own
// scrapes (stats) nor health probes (ping).
var kvOps = map[string]bool{"get": true, "set": true, "delete": true, "scan": true, "other": true}

func kvOp(m *dto.Metric) bool { return kvOps[label(m, "op")] }

func (s *Sampler) readKV(ctx context.Context) (families, *KV) {
	kv := &KV{URL: s.src.KVURL}
	f, err := s.kvMetrics.scrape(ctx, s.src.Client, s.src.KVURL+"/metrics", s.src.KVToken)
	if err != nil {
		kv.Error = err.Error()
		return nil, kv
	}
	kv.Up = true
	kv.Keys = int64(f.sum("devkit_kv_keys", nil))
	kv.DataBytes = int64(f.sum("devkit_kv_data_bytes", nil))
	kv.WALBytes = int64(f.sum("devkit_kv_log_bytes", nil))
	kv.WALSegments = int64(f.sum("devkit_kv_log_segments", nil))
	kv.Connections = int64(f.sum("devkit_kv_open_connections", nil))
	kv.ReadOnly = f.sum("devkit_kv_read_only", nil) > 0
	kv.RSSBytes = int64(f.sum("process_resident_memory_bytes", nil))
	return f, kv
}

// kvRates fills kv's rates from two scrapes dt seconds apart. A counter
// that went down (the server restarted) gives no rate rather than a
// negative one.
func kvRates(kv *KV, prev, cur families, dt float64) {
	before, now := prev.by("devkit_kv_requests_total", "op"), cur.by("devkit_kv_requests_total", "op")
	kv.OpsPerSecond = map[string]float64{}
	for op, n := range now {
		if !kvOps[op] {
			continue
		}
		if d := n - before[op]; d >= 0 {
			kv.OpsPerSecond[op] = d / dt
			kv.TotalOpsPerSecond += d / dt
		}
	}
	if d := cur.sum("devkit_kv_fsyncs_total", nil) - prev.sum("devkit_kv_fsyncs_total", nil); d >= 0 {
		kv.FsyncsPerSecond = d / dt
	}
	const hist = "devkit_kv_request_duration_seconds"
	if p99, ok := cur.histogram(hist, kvOp).quantileSince(prev.histogram(hist, kvOp), 0.99); ok {
		kv.P99Seconds = &p99
	}
}

func (s *Sampler) readGateway(ctx context.Context) (families, *Gateway) {
	g := &Gateway{URL: s.src.GatewayURL, Rules: []Rule{}, Top: []Consumer{}}
	f, err := s.gwMetrics.scrape(ctx, s.src.Client, s.src.GatewayURL+"/metrics", s.src.GatewayToken)
	if err != nil {
		g.Error = err.Error()
		return nil, g
	}
	g.Up = true
	allowed, denied := f.by("ratelimit_allowed_total", "rule"), f.by("ratelimit_denied_total", "rule")
	for name := range allowed {
		g.Rules = append(g.Rules, Rule{Name: name, Allowed: int64(allowed[name]), Denied: int64(denied[name])})
	}
	sort.Slice(g.Rules, func(i, j int) bool { return g.Rules[i].Name < g.Rules[j].Name })
	var health struct {
		OK             bool      `json:"ok"`
		LatencySeconds float64   `json:"latency_seconds"`
		Error          string    `json:"error"`
		Breakers       []Breaker `json:"breakers"`
	}
	if err := s.getJSON(ctx, "/health", &health); err != nil && health.Error == "" {
		health.Error = err.Error()
	}
	g.StoreOK, g.StoreLatencySeconds, g.StoreError, g.Breakers = health.OK, health.LatencySeconds, health.Error, health.Breakers
	if err := s.getJSON(ctx, "/top?n=5", &g.Top); err != nil {
		g.Error = "top: " + err.Error()
	}
	if !s.noTopDenied {
		var denied5 []Consumer
		if s.getJSON(ctx, "/top?n=5&by=denied", &denied5) == nil && len(denied5) > 0 {
			if denied5[0].Denied > 0 {
				g.TopDenied = denied5
			} else if denied5[0].Hits > 0 {
				s.noTopDenied = true // it ignored by=denied
			}
		}
	}
	return f, g
}

// gatewayRates fills g's per-rule rates from two scrapes dt seconds apart.
func gatewayRates(g *Gateway, prev, cur families, dt float64) {
	pa, pd := prev.by("ratelimit_allowed_total", "rule"), prev.by("ratelimit_denied_total", "rule")
	for i := range g.Rules {
		r := &g.Rules[i]
		da, dd := float64(r.Allowed)-pa[r.Name], float64(r.Denied)-pd[r.Name]
		if da < 0 || dd < 0 {
			continue // the gateway restarted: no rate this tick
		}
		r.DecisionsPerSecond, r.DeniedPerSecond = (da+dd)/dt, dd/dt
		g.DecisionsPerSecond += r.DecisionsPerSecond
		g.DeniedPerSecond += r.DeniedPerSecond
	}
}

// getJSON GETs the gateway admin path and decodes its JSON into v; a non-2xx
// answer with a JSON body is decoded too (/health answers 503 with one).
func (s *Sampler) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.src.GatewayURL+path, nil)
	if err != nil {
		return err
	}
	if s.src.GatewayToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.src.GatewayToken)
	}
	resp, err := s.src.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(io.LimitReader(resp.Body, maxScrape)).Decode(v)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return err
}
