// Command benchdoc turns `go test -bench` output into the benchmark page and
// its raw data: docs/benchmarks.md holds one readable table per module
// (workload, devkit, peer, ratio, the command that reproduces it, the
// machine), and docs/benchmarks-raw.txt every figure of every benchmark in
// Go's benchmark format (benchstat reads it), from which the page can be
// rendered again without running anything.
//
//	go test -run '^$' -bench . -benchmem ./... | tee bin/bench.txt          (make bench, in each module)
//	go run ./tools/benchdoc -in bin/bench.txt -out docs/benchmarks.md -raw docs/benchmarks-raw.txt
//	go run ./tools/benchdoc -in docs/benchmarks-raw.txt -out docs/benchmarks.md   (the page again, from the data)
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	in := flag.String("in", "", "go test -bench output, or a raw file this command wrote (default stdin)")
	out := flag.String("out", "", "markdown page to write (default stdout)")
	raw := flag.String("raw", "", "raw data file to write beside the page (every benchmark's figures)")
	flag.Parse()
	r := io.Reader(os.Stdin)
	if *in != "" {
		f, err := os.Open(*in)
		if err != nil {
			fatal(err)
		}
		defer f.Close()
		r = f
	}
	run, err := Parse(r)
	if err != nil {
		fatal(err)
	}
	run.fillFromHost(time.Now())
	if *raw != "" {
		if err := writeFile(*raw, func(w io.Writer) error { return WriteRaw(w, run) }); err != nil {
			fatal(err)
		}
	}
	if err := writeFile(*out, func(w io.Writer) error { return Render(w, run) }); err != nil {
		fatal(err)
	}
}

// writeFile calls write with the file at path, or with stdout for "".
func writeFile(path string, write func(io.Writer) error) error {
	if path == "" {
		return write(os.Stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "benchdoc:", err)
	os.Exit(1)
}

// Result is one benchmark line.
type Result struct {
	Pkg     string
	Name    string // with the Benchmark prefix, without the -GOMAXPROCS suffix
	Procs   int    // the -GOMAXPROCS suffix; 0 when the line had none
	Iters   int64
	Metrics []Metric
}

// Metric is one value-unit pair of a benchmark line.
type Metric struct {
	Value float64
	Unit  string
}

// Get returns the value of unit, and whether the line has it.
func (r Result) Get(unit string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// Run is a whole `go test -bench` output, or a raw file WriteRaw wrote,
// with the machine it ran on.
type Run struct {
	GOOS, GOARCH string
	CPU          string
	Cores        int    // "cores:" of a raw file; else the host's, when the run is read fresh
	GoVersion    string // "go:" of a raw file; else the host's
	Date         string // "date:" of a raw file (2006-01-02); else today
	Results      []Result
}

// Find returns the result named name (with its Benchmark prefix) in the
// package whose import path ends in /pkg.
func (r Run) Find(pkg, name string) (Result, bool) {
	for _, res := range r.Results {
		if (res.Pkg == pkg || strings.HasSuffix(res.Pkg, "/"+pkg)) && res.Name == name {
			return res, true
		}
	}
	return Result{}, false
}

// Parse reads benchmark lines and the configuration lines (pkg:, cpu:,
// goos:, goarch:, and the cores:, go:, date: of a raw file) before them.
// Other lines (test logs, PASS, ok, # comments) are passed over.
func Parse(r io.Reader) (Run, error) {
	var run Run
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		key, value, isConfig := strings.Cut(line, ": ")
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "Benchmark"):
			if res, ok := parseLine(pkg, line); ok {
				run.Results = append(run.Results, res)
			}
		case !isConfig:
		case key == "pkg":
			pkg = value
		case key == "cpu":
			run.CPU = value
		case key == "goos":
			run.GOOS = value
		case key == "goarch":
			run.GOARCH = value
		case key == "cores":
			run.Cores, _ = strconv.Atoi(value)
		case key == "go":
			run.GoVersion = value
		case key == "date":
			run.Date = value
		}
	}
	return run, sc.Err()
}

// fillFromHost completes what a fresh `go test` output does not say: the
// cores, the Go version and the date are this host's, as `make bench` runs
// benchdoc right after the benchmarks.
func (r *Run) fillFromHost(now time.Time) {
	if r.Cores == 0 {
		r.Cores = runtime.NumCPU()
	}
	if r.GoVersion == "" {
		r.GoVersion = runtime.Version()
	}
	if r.Date == "" {
		r.Date = now.UTC().Format("2006-01-02")
	}
	if r.GOOS == "" {
		r.GOOS, r.GOARCH = runtime.GOOS, runtime.GOARCH
	}
}

func parseLine(pkg, line string) (Result, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return Result{}, false
	}
	iters, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return Result{}, false
	}
	res := Result{Pkg: pkg, Name: f[0], Iters: iters}
	if i := strings.LastIndex(res.Name, "-"); i > 0 {
		if procs, err := strconv.Atoi(res.Name[i+1:]); err == nil {
			res.Name, res.Procs = res.Name[:i], procs
		}
	}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Result{}, false
		}
		res.Metrics = append(res.Metrics, Metric{Value: v, Unit: f[i+1]})
	}
	return res, true
}

// WriteRaw writes every result in Go's benchmark format, the machine first
// as configuration lines, so that Parse reads it back whole and benchstat
// can compare two runs.
func WriteRaw(w io.Writer, run Run) error {
	b := &strings.Builder{}
	b.WriteString("# devkit benchmark figures, written by `make bench` (tools/benchdoc); docs/benchmarks.md is rendered from them.\n")
	for _, kv := range [][2]string{{"goos", run.GOOS}, {"goarch", run.GOARCH}, {"cpu", run.CPU}, {"cores", strconv.Itoa(run.Cores)}, {"go", run.GoVersion}, {"date", run.Date}} {
		if kv[1] != "" && kv[1] != "0" {
			fmt.Fprintf(b, "%s: %s\n", kv[0], kv[1])
		}
	}
	pkg := ""
	for _, r := range run.Results {
		if r.Pkg != pkg {
			pkg = r.Pkg
			fmt.Fprintf(b, "pkg: %s\n", pkg)
		}
		name := r.Name
		if r.Procs > 0 {
			name += "-" + strconv.Itoa(r.Procs)
		}
		fmt.Fprintf(b, "%s\t%d", name, r.Iters)
		for _, m := range r.Metrics {
			fmt.Fprintf(b, "\t%s %s", strconv.FormatFloat(m.Value, 'f', -1, 64), m.Unit)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
