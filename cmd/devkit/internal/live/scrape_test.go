package live

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// goRuntime is a family a KV server exposes and a snapshot never reads.
const goRuntime = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 42
# HELP go_gc_duration_seconds A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0"} 1.2e-05
go_gc_duration_seconds_sum 0.01
go_gc_duration_seconds_count 7
`

// A scrape parses the families a snapshot reads and, for the request
// counters and histogram, only the ops it counts; the rates and the p99 come
// out as from the whole exposition.
func TestScraper_ParsesOnlyWhatASnapshotUses(t *testing.T) {
	for _, c := range []struct {
		name      string
		prev, cur [3]int
		prevSets  int
	}{
		{"every bucket counted", [3]int{100, 100, 100}, [3]int{100, 298, 300}, 100},
		// A bucket at 0 in the first scrape and not in the second: both
		// scrapes keep it, or the p99 would not be over the interval.
		{"a bucket filling up", [3]int{0, 50, 50}, [3]int{10, 248, 250}, 50},
		{"a series still at zero", [3]int{0, 0, 0}, [3]int{100, 298, 300}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			scrapeTwice(t, goRuntime+kvText(c.prevSets, 10, 50, c.prev), kvText(c.prevSets+200, 1000, 150, c.cur)+goRuntime)
		})
	}
}

func scrapeTwice(t *testing.T, bodies ...string) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(bodies[n]))
		n++
	}))
	defer srv.Close()
	s := NewSampler(Sources{}).kvMetrics
	var scrapes []families
	for range bodies {
		f, err := s.scrape(context.Background(), srv.Client(), srv.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		scrapes = append(scrapes, f)
	}
	cur := scrapes[1]
	if _, ok := cur["go_goroutines"]; ok {
		t.Error("go_goroutines parsed: a snapshot never reads it")
	}
	if _, ok := cur["go_gc_duration_seconds"]; ok {
		t.Error("go_gc_duration_seconds parsed")
	}
	for _, fam := range []string{"devkit_kv_requests_total", "devkit_kv_request_duration_seconds"} {
		for _, m := range cur[fam].GetMetric() {
			if op := label(m, "op"); !kvOps[op] {
				t.Errorf("%s{op=%q} parsed: the snapshot leaves that op out", fam, op)
			}
		}
	}
	var got, want KV
	kvRates(&got, scrapes[0], scrapes[1], 2)
	kvRates(&want, parse(t, bodies[0]), parse(t, bodies[1]), 2)
	if got.TotalOpsPerSecond != want.TotalOpsPerSecond || got.FsyncsPerSecond != want.FsyncsPerSecond ||
		got.P99Seconds == nil || want.P99Seconds == nil || *got.P99Seconds != *want.P99Seconds {
		t.Fatalf("rates from the kept families %+v, from the whole exposition %+v", got, want)
	}
}
