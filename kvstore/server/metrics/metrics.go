// Package metrics counts what the KV servers do and exposes it, with the
// engine's own counters, as Prometheus metrics and as JSON.
//
// The hot path only does atomic adds and one histogram observation; the
// Prometheus collector reads the counters when scraped, so the numbers in
// the text exposition and in the JSON view come from the same place.
package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
)

// Transport is a front door of the server.
type Transport int

// The transports.
const (
	HTTP Transport = iota
	TCP
	RESP
	numTransports
)

var transportNames = [numTransports]string{"http", "tcp", "resp"}

func (t Transport) String() string { return transportNames[t] }

// Op is the kind of request, across transports.
type Op int

// The operations counted.
const (
	OpGet Op = iota
	OpSet
	OpDelete
	OpScan
	OpPing
	OpStats
	OpOther
	numOps
)

var opNames = [numOps]string{"get", "set", "delete", "scan", "ping", "stats", "other"}

func (o Op) String() string { return opNames[o] }

// Metrics holds the server's counters. A nil *Metrics counts nothing, so
// every transport works without one.
type Metrics struct {
	store    backend.Store
	registry *prometheus.Registry

	requests [numTransports][numOps]atomic.Uint64
	errors   [numTransports]atomic.Uint64
	open     [numTransports]atomic.Int64
	accepted [numTransports]atomic.Uint64
	rejected [numTransports]atomic.Uint64
	evicted  [numTransports]atomic.Uint64
	latency  [numTransports][numOps]prometheus.Observer
}

// New returns metrics over store, registered in a registry of their own
// together with the Go runtime and process collectors.
func New(store backend.Store) *Metrics {
	m := &Metrics{store: store, registry: prometheus.NewRegistry()}
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "devkit_kv",
		Name:      "request_duration_seconds",
		Help:      "Time from a request being read to its reply being queued, by transport and operation.",
		Buckets:   []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1},
	}, []string{"transport", "op"})
	for t := range numTransports {
		for o := range numOps {
			m.latency[t][o] = hist.WithLabelValues(t.String(), o.String())
		}
	}
	m.registry.MustRegister(hist, collector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry to expose (see promhttp.HandlerFor).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Request counts one request of op on t that started at start; failed
// says it was answered with an error.
func (m *Metrics) Request(t Transport, op Op, start time.Time, failed bool) {
	if m == nil {
		return
	}
	m.requests[t][op].Add(1)
	if failed {
		m.errors[t].Add(1)
	}
	m.latency[t][op].Observe(time.Since(start).Seconds())
}

// ConnOpened counts an accepted connection.
func (m *Metrics) ConnOpened(t Transport) {
	if m == nil {
		return
	}
	m.accepted[t].Add(1)
	m.open[t].Add(1)
}

// ConnClosed counts a connection closed after ConnOpened.
func (m *Metrics) ConnClosed(t Transport) {
	if m == nil {
		return
	}
	m.open[t].Add(-1)
}

// ConnRejected counts a connection turned away because of the connection limit.
func (m *Metrics) ConnRejected(t Transport) {
	if m == nil {
		return
	}
	m.rejected[t].Add(1)
}

// ConnEvicted counts an idle connection closed to admit a new one at the
// connection limit.
func (m *Metrics) ConnEvicted(t Transport) {
	if m == nil {
		return
	}
	m.evicted[t].Add(1)
}

// TransportSnapshot is the JSON view of one transport's counters.
type TransportSnapshot struct {
	Requests        map[string]uint64 `json:"requests"`
	Errors          uint64            `json:"errors"`
	OpenConnections int64             `json:"open_connections"`
	AcceptedConns   uint64            `json:"accepted_connections"`
	RejectedConns   uint64            `json:"rejected_connections"`
	EvictedConns    uint64            `json:"evicted_connections"`
}

// Snapshot is the JSON view of the metrics: the engine's and the server's.
type Snapshot struct {
	Engine     kvstore.Stats                `json:"engine"`
	Transports map[string]TransportSnapshot `json:"transports"`
}

// Snapshot returns the current counters.
func (m *Metrics) Snapshot() Snapshot {
	s := Snapshot{Engine: m.store.Stats(), Transports: make(map[string]TransportSnapshot, numTransports)}
	for t := range numTransports {
		ts := TransportSnapshot{
			Requests:        make(map[string]uint64, numOps),
			Errors:          m.errors[t].Load(),
			OpenConnections: m.open[t].Load(),
			AcceptedConns:   m.accepted[t].Load(),
			RejectedConns:   m.rejected[t].Load(),
			EvictedConns:    m.evicted[t].Load(),
		}
		for o := range numOps {
			ts.Requests[o.String()] = m.requests[t][o].Load()
		}
		s.Transports[t.String()] = ts
	}
	return s
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("devkit_kv_"+name, help, labels, nil)
}

var (
	descRequests = desc("requests_total", "Requests answered, by transport and operation.", "transport", "op")
	descErrors   = desc("request_errors_total", "Requests answered with an error, by transport.", "transport")
	descOpen     = desc("open_connections", "Connections open now, by transport.", "transport")
	descAccepted = desc("accepted_connections_total", "Connections accepted, by transport.", "transport")
	descRejected = desc("rejected_connections_total", "Connections turned away at a connection limit, by transport.", "transport")
	descEvicted  = desc("evicted_connections_total", "Idle connections closed to admit a new one at the connection limit, by transport.", "transport")

	descKeys        = desc("keys", "Live keys in the engine.")
	descDataBytes   = desc("data_bytes", "Sum of live key and value lengths.")
	descLogBytes    = desc("log_bytes", "Bytes in live log segments.")
	descSegments    = desc("log_segments", "Live log segments.")
	descReadOnly    = desc("read_only", "1 when the engine refuses writes after a failed write or fsync.")
	descEngineOps   = desc("engine_operations_total", "Engine operations, by kind.", "kind")
	descFsyncs      = desc("fsyncs_total", "Log fsyncs.")
	descBatches     = desc("commit_batches_total", "Group-commit batches written.")
	descCompactions = desc("compactions_total", "Snapshots taken to compact the log.")
	descCompactFail = desc("compaction_failures_total", "Compactions that failed.")
	descReplayed    = desc("replayed_records", "Log records replayed at open.")
)

// collector turns the counters into Prometheus metrics at scrape time.
type collector struct{ m *Metrics }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descErrors, descOpen, descAccepted, descRejected, descEvicted,
		descKeys, descDataBytes, descLogBytes, descSegments, descReadOnly, descEngineOps, descFsyncs,
		descBatches, descCompactions, descCompactFail, descReplayed} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for t := range numTransports {
		name := t.String()
		for o := range numOps {
			counter(descRequests, m.requests[t][o].Load(), name, o.String())
		}
		counter(descErrors, m.errors[t].Load(), name)
		gauge(descOpen, float64(m.open[t].Load()), name)
		counter(descAccepted, m.accepted[t].Load(), name)
		counter(descRejected, m.rejected[t].Load(), name)
		counter(descEvicted, m.evicted[t].Load(), name)
	}
	s := m.store.Stats()
	gauge(descKeys, float64(s.Keys))
	gauge(descDataBytes, float64(s.DataBytes))
	gauge(descLogBytes, float64(s.LogBytes))
	gauge(descSegments, float64(s.LogSegments))
	readOnly := 0.0
	if s.ReadOnly {
		readOnly = 1
	}
	gauge(descReadOnly, readOnly)
	counter(descEngineOps, s.Sets, "set")
	counter(descEngineOps, s.Deletes, "delete")
	counter(descEngineOps, s.Hits, "get_hit")
	counter(descEngineOps, s.Misses, "get_miss")
	counter(descFsyncs, s.Fsyncs)
	counter(descBatches, s.Batches)
	counter(descCompactions, s.Compactions)
	counter(descCompactFail, s.CompactionFailures)
	gauge(descReplayed, float64(s.ReplayedRecords))
}
