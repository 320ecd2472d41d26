package kv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// BenchOptions are the inputs of `devkit kv bench`.
type BenchOptions struct {
	ClientOptions
	Clients      int
	Duration     time.Duration
	ValueSize    int
	Keys         int
	WritePercent int
	JSON         bool
	// Progress forces the progress bar on or off; nil: only on a terminal.
	Progress *bool
}

// NewCmdBench builds `devkit kv bench`; runF, when not nil, receives the options instead of benchRun.
func NewCmdBench(f *cmdutil.Factory, runF func(context.Context, *BenchOptions) error) *cobra.Command {
	opts := &BenchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load the server with concurrent clients and print ops/s and latency",
		Long: `Run --clients connections against the server for --duration, each sending one request
at a time: sets of --value-size bytes (--write-percent of them) and gets, over --keys keys.
A progress bar shows on a terminal; the summary table gives ops/s, p50, p99 and errors per operation.`,
		Example: `  devkit kv bench --clients 50 --duration 10s
  devkit kv bench --write-percent 100 --value-size 1024 --json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.bindClient(f, cmd)
			switch {
			case opts.Clients < 1:
				return cmdutil.UsageErrorf("--clients %d: want at least 1", opts.Clients)
			case opts.Duration <= 0:
				return cmdutil.UsageErrorf("--duration %v: want more than 0", opts.Duration)
			case opts.ValueSize < 0:
				return cmdutil.UsageErrorf("--value-size %d: want 0 or more", opts.ValueSize)
			case opts.Keys < 1:
				return cmdutil.UsageErrorf("--keys %d: want at least 1", opts.Keys)
			case opts.WritePercent < 0 || opts.WritePercent > 100:
				return cmdutil.UsageErrorf("--write-percent %d: want 0..100", opts.WritePercent)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return benchRun(cmd.Context(), opts)
		},
	}
	addClientFlags(cmd, &opts.ClientOptions)
	fs := cmd.Flags()
	fs.IntVar(&opts.Clients, "clients", 50, "concurrent connections")
	cmdutil.DurationVar(fs, &opts.Duration, "duration", 10*time.Second, "how long to run")
	fs.IntVar(&opts.ValueSize, "value-size", 100, "bytes per value")
	fs.IntVar(&opts.Keys, "keys", 10000, "size of the key space (keys bench:0 .. bench:N-1)")
	fs.IntVar(&opts.WritePercent, "write-percent", 50, "share of sets among requests, in percent")
	fs.BoolVar(&opts.JSON, "json", false, "print the summary as JSON")
	return cmd
}

// BenchRow is one line of the summary. Durations are float seconds in
// *_seconds fields, the rule of every --json (the p50_us and p99_us that
// stood beside them are gone: one rule, one name per value).
type BenchRow struct {
	Op         string  `json:"op"`
	Requests   int     `json:"requests"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	P50Seconds float64 `json:"p50_seconds"`
	P99Seconds float64 `json:"p99_seconds"`
	Errors     int     `json:"errors"`
}

// BenchResult is what `devkit kv bench --json` prints.
type BenchResult struct {
	Addr            string     `json:"addr"`
	Clients         int        `json:"clients"`
	DurationSeconds float64    `json:"duration_seconds"`
	ValueSize       int        `json:"value_size"`
	Rows            []BenchRow `json:"rows"`
}

// benchWorker is one client's tally.
type benchWorker struct {
	set, get   []time.Duration
	setErrors  int
	getErrors  int
	firstError error
}

func benchRun(ctx context.Context, opts *BenchOptions) error {
	addr := opts.Addr
	dopts, err := opts.dialOptions()
	if err != nil {
		return err
	}
	clients := make([]*tcpjson.Client, opts.Clients)
	for i := range clients {
		dctx, cancel := context.WithTimeout(ctx, max(opts.Timeout, time.Second))
		c, err := opts.dial(dctx, addr, dopts)
		cancel()
		if err != nil {
			for _, c := range clients[:i] {
				c.Close()
			}
			return fmt.Errorf("cannot reach the server at %s (is `devkit kv serve` running?): %w", addr, unwrapDial(err))
		}
		clients[i] = c
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()

	runCtx, cancel := context.WithTimeout(ctx, opts.Duration)
	defer cancel()
	var done atomic.Int64
	stopProgress := startProgress(opts, &done)
	value := []byte(strings.Repeat("x", opts.ValueSize))
	workers := make([]benchWorker, opts.Clients)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runBenchWorker(runCtx, clients[w], &workers[w], opts, value, w, &done)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()

	res := summarize(workers, elapsed, opts, addr)
	if opts.JSON {
		if err := cmdutil.WriteJSON(opts.IO.Out, res); err != nil {
			return err
		}
	} else if err := writeBenchTable(opts.IO.Out, res); err != nil {
		return err
	}
	total := res.Rows[len(res.Rows)-1]
	if total.Requests == 0 || total.Errors == total.Requests {
		for _, w := range workers {
			if w.firstError != nil {
				return fmt.Errorf("every request failed; the first: %w", w.firstError)
			}
		}
		return errors.New("no request completed")
	}
	return nil
}

func runBenchWorker(ctx context.Context, c *tcpjson.Client, w *benchWorker, opts *BenchOptions, value []byte, seed int, done *atomic.Int64) {
	// A small linear congruential sequence spreads keys without shared state.
	x := uint64(seed)*2654435761 + 1
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	// Every client sends at least one request, however short the run.
	for first := true; first || ctx.Err() == nil; first = false {
		x = x*6364136223846793005 + 1442695040888963407
		key := []byte("bench:" + strconv.Itoa(int((x>>33)%uint64(opts.Keys))))
		isSet := int((x>>13)%100) < opts.WritePercent
		// A request started before the end of the run is let finish.
		reqCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		t0 := time.Now()
		var err error
		if isSet {
			err = c.Set(reqCtx, key, value)
		} else {
			_, err = c.Get(reqCtx, key)
			if errors.Is(err, kvstore.ErrNotFound) {
				err = nil // a miss is an answer
			}
		}
		lat := time.Since(t0)
		cancel()
		done.Add(1)
		switch {
		case err != nil && isSet:
			w.setErrors++
		case err != nil:
			w.getErrors++
		case isSet:
			w.set = append(w.set, lat)
		default:
			w.get = append(w.get, lat)
		}
		if err != nil && w.firstError == nil {
			w.firstError = err
		}
		if err != nil && !isServerReply(err) {
			return // the connection is broken
		}
	}
}

// isServerReply reports whether err is an error the server answered with,
// after which the connection is still usable.
func isServerReply(err error) bool {
	var se *tcpjson.Error
	return errors.As(err, &se)
}

func summarize(workers []benchWorker, elapsed time.Duration, opts *BenchOptions, addr string) BenchResult {
	var set, get []time.Duration
	setErr, getErr := 0, 0
	for _, w := range workers {
		set = append(set, w.set...)
		get = append(get, w.get...)
		setErr += w.setErrors
		getErr += w.getErrors
	}
	secs := elapsed.Seconds()
	row := func(op string, lat []time.Duration, errs int) BenchRow {
		slices.Sort(lat)
		r := BenchRow{Op: op, Requests: len(lat) + errs, Errors: errs, OpsPerSec: float64(len(lat)) / secs}
		if len(lat) > 0 {
			p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
			r.P50Seconds, r.P99Seconds = p50.Seconds(), p99.Seconds()
		}
		return r
	}
	res := BenchResult{Addr: addr, Clients: opts.Clients, DurationSeconds: secs, ValueSize: opts.ValueSize}
	if opts.WritePercent > 0 {
		res.Rows = append(res.Rows, row("set", set, setErr))
	}
	if opts.WritePercent < 100 {
		res.Rows = append(res.Rows, row("get", get, getErr))
	}
	res.Rows = append(res.Rows, row("total", append(set, get...), setErr+getErr))
	return res
}

func writeBenchTable(w io.Writer, res BenchResult) error {
	fmt.Fprintf(w, "%s, %d clients, %.1fs, %d-byte values\n\n", res.Addr, res.Clients, res.DurationSeconds, res.ValueSize)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "OP\tREQUESTS\tOPS/S\tP50\tP99\tERRORS\t")
	for _, r := range res.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%d\t\n", r.Op, r.Requests, r.OpsPerSec,
			latency(r.P50Seconds), latency(r.P99Seconds), r.Errors)
	}
	return tw.Flush()
}

// latency prints seconds as µs below a millisecond, else as ms.
func latency(seconds float64) string {
	if seconds < 1e-3 {
		return fmt.Sprintf("%.0fµs", seconds*1e6)
	}
	return fmt.Sprintf("%.2fms", seconds*1e3)
}

// startProgress draws the run's progress on stderr (see startProgressLine)
// and returns the function that stops and clears it.
func startProgress(opts *BenchOptions, done *atomic.Int64) func() {
	return startProgressLine(opts.IO.ErrOut, opts.Progress, func(elapsed time.Duration) string {
		frac := min(elapsed.Seconds()/opts.Duration.Seconds(), 1)
		return fmt.Sprintf("%s %3.0f%%  %s  %.0f ops/s", renderBar(frac), frac*100,
			elapsed.Truncate(time.Second), float64(done.Load())/elapsed.Seconds())
	})
}
