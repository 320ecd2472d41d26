package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/devkit-go/devkit/kvstore
cpu: AMD EPYC
BenchmarkFsyncBaseline-2   	    9379	    250000 ns/op	      4000 ops/s	       0 B/op	       0 allocs/op
BenchmarkSetAlwaysConcurrent/writers=1-2         	   10051	    260000 ns/op	      3846 ops/s	         1.000 records/fsync
BenchmarkSetAlwaysConcurrent/writers=64-2        	  136938	     15000 ns/op	     66666 ops/s	        32.14 records/fsync
BenchmarkGet-2   	16383735	       158.9 ns/op	       0 B/op	       0 allocs/op
--- some test log line: with a colon
PASS
ok  	github.com/devkit-go/devkit/kvstore	12.3s
pkg: github.com/devkit-go/devkit/ratelimit/gateway
BenchmarkFront_DenialInMemory-2	1000	2904 ns/op	1008 B/op	11 allocs/op
BenchmarkGateway_PassThrough-2	1	1443758292 ns/op	15324 gateway-req/s	1.30 gateway/reverseproxy	11762 reverseproxy-req/s
`

func parseSample(t *testing.T) Run {
	t.Helper()
	run, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	run.Cores, run.GoVersion, run.Date = 2, "go1.27.3", "2026-12-02"
	return run
}

// The raw file holds every figure of every benchmark and the machine, and
// reads back as the same run: the page can be rendered again from it.
func TestWriteRaw_ReadsBackAsTheSameRun(t *testing.T) {
	run := parseSample(t)
	if len(run.Results) != 6 || run.CPU != "AMD EPYC" || run.GOOS != "linux" {
		t.Fatalf("parsed %d results, cpu %q, goos %q", len(run.Results), run.CPU, run.GOOS)
	}
	var raw strings.Builder
	if err := WriteRaw(&raw, run); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(strings.NewReader(raw.String()))
	if err != nil {
		t.Fatal(err)
	}
	var page1, page2 strings.Builder
	if err := Render(&page1, run); err != nil {
		t.Fatal(err)
	}
	if err := Render(&page2, again); err != nil {
		t.Fatal(err)
	}
	if page1.String() != page2.String() {
		t.Fatalf("the page from the raw file differs:\n%s\n---\n%s", page1.String(), page2.String())
	}
	for _, want := range []string{"cores: 2\n", "go: go1.27.3\n", "date: 2026-12-02\n",
		"BenchmarkSetAlwaysConcurrent/writers=64-2\t136938\t15000 ns/op\t66666 ops/s\t32.14 records/fsync\n",
		"BenchmarkFront_DenialInMemory-2\t1000\t2904 ns/op"} {
		if !strings.Contains(raw.String(), want) {
			t.Errorf("raw file lacks %q:\n%s", want, raw.String())
		}
	}
}

// Each row is a workload: devkit's figure in a readable unit, the peer's,
// the ratio (the benchmark's own where it reports one) and the command that
// measures both; the machine heads each table.
func TestRender_OneTablePerModuleWithPeerRatioAndCommand(t *testing.T) {
	var b strings.Builder
	if err := Render(&b, parseSample(t)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"## kvstore\n\nMachine: AMD EPYC, 2 cores, linux/amd64, go1.27.3, 2026-12-02.\n",
		"| durable SET (`always`), 1 writer; goal ≥ 0.8× one fsync | 3,846 ops/s | one 100-byte write + fdatasync: 4,000 ops/s | 0.96× | `cd kvstore && go test -run '^$' -bench '^Benchmark(SetAlwaysConcurrent\\|FsyncBaseline)$' -benchmem .` |",
		"| durable SET (`always`), 64 writers sharing fsyncs; goal ≥ 15× one writer | 66,666 ops/s | devkit, 1 writer: 3,846 ops/s | 17.33× |",
		"| Get (returns a copy); goal ≤ 100 ns, 0 allocs | 159 ns | a map lookup under a RWMutex: not measured in this run | — |",
		"| gateway: allowed requests proxied to one upstream | 15,324 req/s | httputil.ReverseProxy: 11,762 req/s | 1.30× | `cd ratelimit && go test -run '^$' -bench '^BenchmarkGateway_PassThrough$' -benchmem ./gateway` |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q:\n%s", want, out)
		}
	}
	// Benchmarks that are not a workload of the page (Front_, gone with the
	// hand-written front) and workloads the run lacks leave no row; a
	// module without any (supervisor here) leaves no table.
	for _, absent := range []string{"Front_", "GetAppend", "## supervisor", "redis-benchmark"} {
		if strings.Contains(out, absent) {
			t.Errorf("page has %q:\n%s", absent, out)
		}
	}
}

var unescapedPipe = regexp.MustCompile(`(^|[^\\])\|`)

// renderRawFile renders the page from the committed raw data.
func renderRawFile(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks-raw.txt"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := Parse(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := Render(&page, run); err != nil {
		t.Fatal(err)
	}
	return page.String()
}

// Every table row has five cells, whatever a command's pattern holds.
func TestRender_EveryRowHasFiveCells(t *testing.T) {
	for _, line := range strings.Split(renderRawFile(t), "\n") {
		if strings.HasPrefix(line, "|") {
			if n := len(unescapedPipe.FindAllString(line, -1)); n != 6 {
				t.Errorf("%d cell borders, want 6: %s", n, line)
			}
		}
	}
}

// TestPage_IsWhatTheRawFileGives: docs/benchmarks.md is rendered from
// docs/benchmarks-raw.txt (make bench writes both); an edit by hand or a
// change of the workloads without rendering again fails here.
func TestPage_IsWhatTheRawFileGives(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if renderRawFile(t) != string(page) {
		t.Error("docs/benchmarks.md is not what docs/benchmarks-raw.txt renders: go run ./tools/benchdoc -in docs/benchmarks-raw.txt -out docs/benchmarks.md")
	}
}

// The pass-through comparison's Connection: close points (a sub-benchmark
// two levels deep, close/conns=N) render beside nginx, Caddy and the bare
// ReverseProxy with the benchmark's own median ratios, and the rejection
// flood at 1,000 connections beside nginx limit_req.
func TestRender_PassThroughBesideCaddyAndRejectionsAtOperatingPoints(t *testing.T) {
	const lines = `pkg: github.com/devkit-go/devkit/ratelimit/gateway
BenchmarkGateway_PassThroughVsNginxAndReverseProxy/conns=200-2	1	23556998587 ns/op	3713 caddy-req/s	4997 gateway-req/s	1.541 gateway/caddy	0.7268 gateway/nginx	8120 nginx-req/s
BenchmarkGateway_PassThroughVsNginxAndReverseProxy/close/conns=200-2	1	25758002715 ns/op	1700 caddy-req/s	1326 gateway-req/s	0.8274 gateway/caddy	0.4981 gateway/nginx	0.9404 gateway/reverseproxy	2662 nginx-req/s	1456 reverseproxy-req/s
BenchmarkGateway_RejectionVsNginxWrkConns/conns=1000-2	4	2670068027 ns/op	4690 gateway-req/s	0.7756 gateway/nginx	10707 nginx-req/s
`
	run, err := Parse(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Render(&b, run); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	cmd := "`cd ratelimit && go test -run '^$' -bench '^BenchmarkGateway_PassThroughVsNginxAndReverseProxy$' -benchmem ./gateway` |"
	for _, want := range []string{
		"| gateway (memory store): requests proxied, 200 connections; goal ≥ 1.0× | 4,997 req/s | Caddy reverse_proxy: 3,713 req/s | 1.54× | " + cmd,
		"| gateway (memory store): requests proxied, 200 connections, Connection: close; goal ≥ 0.5× | 1,326 req/s | nginx limit_req + proxy_pass: 2,662 req/s | 0.50× | " + cmd,
		"| gateway (memory store): requests proxied, 200 connections, Connection: close; goal ≥ 1.0× | 1,326 req/s | Caddy reverse_proxy: 1,700 req/s | 0.83× | " + cmd,
		"| gateway (memory store): requests proxied, 200 connections, Connection: close | 1,326 req/s | httputil.ReverseProxy: 1,456 req/s | 0.94× | " + cmd,
		"| gateway: 429s to a flood (wrk, 2 threads, 1000 connections); goal ≥ 0.8× | 4,690 req/s | nginx limit_req: 10,707 req/s | 0.78× | `cd ratelimit && go test -run '^$' -bench '^BenchmarkGateway_RejectionVsNginxWrkConns$' -benchmem ./gateway` |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "1000 connections, Connection: close") {
		t.Errorf("a point the run lacks has a row:\n%s", out)
	}
}
