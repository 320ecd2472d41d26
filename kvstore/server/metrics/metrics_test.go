package metrics_test

import (
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

func TestMetrics_NilCountsNothingAndDoesNotPanic(t *testing.T) {
	var m *metrics.Metrics
	m.Request(metrics.TCP, metrics.OpGet, time.Now(), false)
	m.ConnOpened(metrics.RESP)
	m.ConnClosed(metrics.RESP)
	m.ConnRejected(metrics.HTTP)
}

func TestMetrics_SnapshotAndPrometheusAgree(t *testing.T) {
	db := servertest.OpenDB(t)
	db.Set([]byte("a"), []byte("1"))
	m := metrics.New(db)
	m.Request(metrics.RESP, metrics.OpSet, time.Now(), false)
	m.Request(metrics.RESP, metrics.OpSet, time.Now(), true)
	m.ConnOpened(metrics.RESP)
	m.ConnOpened(metrics.RESP)
	m.ConnClosed(metrics.RESP)
	m.ConnRejected(metrics.RESP)

	snap := m.Snapshot()
	r := snap.Transports["resp"]
	if r.Requests["set"] != 2 || r.Errors != 1 || r.OpenConnections != 1 || r.AcceptedConns != 2 || r.RejectedConns != 1 || snap.Engine.Keys != 1 {
		t.Fatalf("snapshot %+v engine keys %d", r, snap.Engine.Keys)
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			labels := ""
			for _, l := range mt.GetLabel() {
				labels += l.GetName() + "=" + l.GetValue() + ","
			}
			v := mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
			values[f.GetName()+"{"+labels+"}"] = v
		}
	}
	for name, want := range map[string]float64{
		"devkit_kv_requests_total{op=set,transport=resp,}":      2,
		"devkit_kv_request_errors_total{transport=resp,}":       1,
		"devkit_kv_open_connections{transport=resp,}":           1,
		"devkit_kv_rejected_connections_total{transport=resp,}": 1,
		"devkit_kv_keys{}": 1,
		"devkit_kv_engine_operations_total{kind=set,}":     1,
		"devkit_kv_requests_total{op=get,transport=http,}": 0,
	} {
		if got, ok := values[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}
