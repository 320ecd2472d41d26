package main

import (
	"strings"
	"testing"
	"time"
)

const sample = `goos: linux
pkg: github.com/devkit-go/devkit/kvstore
cpu: AMD EPYC
BenchmarkFsyncBaseline-2   	    9379	    250000 ns/op	      4000 ops/s	       0 B/op	       0 allocs/op
BenchmarkSetAlwaysConcurrent/writers=1-2         	   10051	    260000 ns/op	      3846 ops/s	         1.000 records/fsync
BenchmarkSetAlwaysConcurrent/writers=64-2        	  136938	     15000 ns/op	     66666 ops/s	        32.14 records/fsync
BenchmarkGet-2   	16383735	       158.9 ns/op	       0 B/op	       0 allocs/op
PASS
`

func TestRender_TargetsAreRatiosAgainstTheBaseline(t *testing.T) {
	run, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Results) != 4 || run.CPU != "AMD EPYC" {
		t.Fatalf("parsed %d results, cpu %q", len(run.Results), run.CPU)
	}
	var b strings.Builder
	if err := Render(&b, run, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"**250 µs**",
		"| `always`, 1 writer, vs 1/fsync latency | 3846 ops/s = 0.96× | ≥ 0.8× | yes |",
		"| `always`, 64 writers, vs 1 writer | 66666 ops/s = 17.3× | ≥ 15× | yes |",
		"| Get latency and allocations | 159 ns, 0 allocs | ≤ 100 ns, 0 allocs | no |",
		"| SetAlwaysConcurrent/writers=64 | 15000 | 66666 |  |  | 32.14 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
