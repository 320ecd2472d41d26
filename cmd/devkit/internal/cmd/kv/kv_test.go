package kv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil/cmdtest"
	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server"
)

// startServer runs a real server (TCP listener only) on a fresh engine and
// returns its address and the engine.
func startServer(t *testing.T) (string, *kvstore.DB) {
	t.Helper()
	return startServerWith(t, kvstore.Options{})
}

// startServerWith is startServer with engine options (Sync is always none).
func startServerWith(t *testing.T, o kvstore.Options) (string, *kvstore.DB) {
	t.Helper()
	srv, db := startListeners(t, o, server.Config{TCPAddr: "127.0.0.1:0"})
	return srv.Addrs().TCP, db
}

// startListeners serves a fresh engine (Sync none) on the listeners cfg
// names until the test ends.
func startListeners(t *testing.T, o kvstore.Options, cfg server.Config) (*server.Server, *kvstore.DB) {
	t.Helper()
	o.Sync, o.Logger = kvstore.SyncNone, quietLogger()
	db, err := kvstore.Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = quietLogger()
	srv := server.New(db, cfg)
	if err := srv.Listen(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		db.Close()
	})
	return srv, db
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// streams returns IO streams over buffers, with stdin reading in.
func streams(in string) (*cmdutil.IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &cmdutil.IOStreams{In: strings.NewReader(in), Out: out, ErrOut: errOut}, out, errOut
}

// run executes `devkit kv args...` in-process, as main would.
func run(t *testing.T, env map[string]string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ios, out, errOut := streams(stdin)
	f := cmdutil.NewFactory(ios)
	f.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cmd := NewCmd(f)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	err := cmd.Execute()
	if err != nil {
		fmt.Fprintf(errOut, "devkit: %v\n", err)
	}
	cmdtest.CheckJSONOutput(t, args, out.String())
	return out.String(), errOut.String(), cmdutil.ExitCode(err)
}

func TestClientCommands_AgainstARealServer(t *testing.T) {
	addr, db := startServer(t)
	env := map[string]string{}
	a := "--addr=" + addr

	if out, errOut, code := run(t, env, "", "ping", a); code != 0 || out != "PONG\n" {
		t.Fatalf("ping: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := run(t, env, "", "set", a, "user:1", "alice"); code != 0 {
		t.Fatalf("set: %d %q", code, errOut)
	}
	if v, _ := db.Get([]byte("user:1")); string(v) != "alice" {
		t.Fatalf("engine has %q", v)
	}
	binary := "line1\nline2\x00\xff"
	if _, errOut, code := run(t, env, binary, "set", a, "blob", "-"); code != 0 {
		t.Fatalf("set from stdin: %d %q", code, errOut)
	}
	if out, _, code := run(t, env, "", "get", a, "blob"); code != 0 || out != binary {
		t.Fatalf("get blob: %d %q, want the stdin bytes exactly", code, out)
	}
	if out, errOut, code := run(t, env, "", "get", a, "nope"); code != cmdutil.ExitNegative || out != "" || !strings.Contains(errOut, `key "nope" not found`) {
		t.Fatalf("get missing: %d %q %q, want exit 3", code, out, errOut)
	}
	for i := range 5 {
		run(t, env, "", "set", a, fmt.Sprintf("order:%d", i), "x")
	}
	if out, _, code := run(t, env, "", "keys", a, "--prefix", "order:"); code != 0 || out != "order:0\norder:1\norder:2\norder:3\norder:4\n" {
		t.Fatalf("keys --prefix: %d %q", code, out)
	}
	if out, _, _ := run(t, env, "", "keys", a, "--limit", "2"); out != "blob\norder:0\n" {
		t.Fatalf("keys --limit 2: %q", out)
	}
	var keys []string
	out, _, _ := run(t, env, "", "keys", a, "--json", "--prefix", "user:")
	if err := json.Unmarshal([]byte(out), &keys); err != nil || len(keys) != 1 || keys[0] != "user:1" {
		t.Fatalf("keys --json: %q %v", out, err)
	}
	if out, _, _ := run(t, env, "", "keys", a, "--json", "--prefix", "none:"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("empty keys --json: %q", out)
	}
	// Binary keys: --json refuses to change them, --base64 carries them.
	db.Set([]byte("bin:\xff\x00\n"), []byte("v"))
	if out, errOut, code := run(t, env, "", "keys", a, "--json", "--prefix", "bin:"); code != 1 || out != "" || !strings.Contains(errOut, "--base64") {
		t.Fatalf("keys --json with a binary key: %d %q %q", code, out, errOut)
	}
	out, _, _ = run(t, env, "", "keys", a, "--json", "--base64", "--prefix", "bin:")
	if err := json.Unmarshal([]byte(out), &keys); err != nil || len(keys) != 1 || keys[0] != base64.StdEncoding.EncodeToString([]byte("bin:\xff\x00\n")) {
		t.Fatalf("keys --json --base64: %q %v", out, err)
	}
	if out, _, _ := run(t, env, "", "keys", a, "--base64", "--prefix", "bin:"); out != base64.StdEncoding.EncodeToString([]byte("bin:\xff\x00\n"))+"\n" {
		t.Fatalf("keys --base64: %q", out)
	}
	db.Delete([]byte("bin:\xff\x00\n"))
	if out, errOut, code := run(t, env, "", "del", a, "order:0", "order:1", "ghost"); code != cmdutil.ExitNegative || out != "2\n" || !strings.Contains(errOut, `"ghost"`) {
		t.Fatalf("del with a missing key: %d %q %q", code, out, errOut)
	}
	if out, _, code := run(t, env, "", "del", a, "order:2"); code != 0 || out != "1\n" {
		t.Fatalf("del: %d %q", code, out)
	}
	if db.Len() != 4 {
		t.Fatalf("engine has %d keys, want 4", db.Len())
	}
	out, _, code := run(t, env, "", "stats", a, "--json")
	var st kvstore.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 || st.Keys != 4 || st.Deletes != 4 { // 3 by del, 1 by the binary-key check
		t.Fatalf("stats --json: %d %q %v", code, out, err)
	}
	if out, _, code := run(t, env, "", "stats", a); code != 0 || !strings.Contains(out, "keys") || !strings.Contains(out, "sync policy         none") {
		t.Fatalf("stats: %d\n%s", code, out)
	}
}

func TestClientCommands_AddrFromEnvironment(t *testing.T) {
	addr, _ := startServer(t)
	if out, errOut, code := run(t, map[string]string{AddrEnv: addr}, "", "ping"); code != 0 || out != "PONG\n" {
		t.Fatalf("ping with %s: %d %q %q", AddrEnv, code, out, errOut)
	}
	// --addr wins over the environment.
	if _, errOut, code := run(t, map[string]string{AddrEnv: "127.0.0.1:1"}, "", "ping", "--addr", addr); code != 0 {
		t.Fatalf("--addr did not win: %d %q", code, errOut)
	}
}

func TestClientCommands_UnreachableServerExits1WithAHint(t *testing.T) {
	_, errOut, code := run(t, nil, "", "get", "--addr", "127.0.0.1:1", "k")
	if code != cmdutil.ExitFailure || !strings.Contains(errOut, "is `devkit kv serve` running?") {
		t.Fatalf("%d %q", code, errOut)
	}
}

func TestClientCommands_UsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{{"get"}, {"get", "a", "b"}, {"set", "k"}, {"del"}, {"ping", "x"}, {"keys", "--limit", "-1"}} {
		if _, errOut, code := run(t, nil, "", args...); code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d (%q), want 2", args, code, errOut)
		}
	}
}

func TestServe_InProcessDrainsAndKeepsWrites(t *testing.T) {
	dir := t.TempDir()
	ios, _, errOut := streams("")
	ready := make(chan server.Addrs, 1)
	opts := serveDefaults(ios, dir)
	opts.Ready = func(a server.Addrs) { ready <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveRun(ctx, opts) }()
	var addrs server.Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("serve ended early: %v\n%s", err, errOut)
	}
	env := map[string]string{AddrEnv: addrs.TCP}
	if _, e, code := run(t, env, "", "set", "k", "v"); code != 0 {
		t.Fatalf("set: %q", e)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve = %v, want nil after a drain\n%s", err, errOut)
	}
	for _, want := range []string{"msg=listening transport=tcp", "msg=\"stopped cleanly; engine closed\""} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, errOut)
		}
	}
	db, err := kvstore.Open(dir, kvstore.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("after serve: %q %v", v, err)
	}
}

// lockedDataDir is a data directory an engine holds until the test ends.
func lockedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	holder, err := kvstore.Open(dir, kvstore.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close() })
	return dir
}

func TestServe_LockedDataDirectoryFailsNonZero(t *testing.T) {
	dir := lockedDataDir(t)
	ios, _, _ := streams("")
	err := serveRun(context.Background(), serveDefaults(ios, dir))
	if !errors.Is(err, kvstore.ErrLocked) || cmdutil.ExitCode(err) == 0 || !strings.Contains(err.Error(), "cannot open the engine") {
		t.Fatalf("serve on a locked directory = %v (exit %d)", err, cmdutil.ExitCode(err))
	}
}

func TestServe_BadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--sync", "sometimes"},
		{"serve", "--http", "", "--tcp", ""},
		{"serve", "--log-format", "xml"},
		{"serve", "--tls-cert", "cert.pem"},
	} {
		args = append(args, "--data", t.TempDir())
		if _, errOut, code := run(t, nil, "", args...); code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d %q, want 2", args, code, errOut)
		}
	}
}

// serveDefaults are the flag defaults with every listener on port 0.
func serveDefaults(ios *cmdutil.IOStreams, dir string) *ServeOptions {
	return &ServeOptions{
		IO: ios, DataDir: dir, HTTPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0",
		Sync: "none", MaxKeySize: kvstore.DefaultMaxKeySize, MaxValueSize: kvstore.DefaultMaxValueSize,
		ShutdownTimeout: 5 * time.Second, IdleTimeout: time.Minute, LogFormat: "text", LogLevel: "info",
	}
}

func TestBench_SummaryTableAndJSON(t *testing.T) {
	addr, db := startServer(t)
	out, errOut, code := run(t, nil, "", "bench", "--addr", addr, "--clients", "4", "--duration", "300ms", "--keys", "50", "--value-size", "10")
	if code != 0 {
		t.Fatalf("bench: %d %q", code, errOut)
	}
	for _, want := range []string{"OPS/S", "P50", "P99", "ERRORS", "set", "get", "total"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errOut, "[") {
		t.Errorf("progress bar drawn on a non-terminal: %q", errOut)
	}
	if db.Len() == 0 || db.Len() > 50 {
		t.Fatalf("bench wrote %d keys, want 1..50", db.Len())
	}
	out, _, code = run(t, nil, "", "bench", "--addr", addr, "--clients", "2", "--duration", "200ms", "--write-percent", "100", "--json")
	var res BenchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("bench --json: %d %q %v", code, out, err)
	}
	if len(res.Rows) != 2 || res.Rows[0].Op != "set" || res.Rows[0].Requests == 0 || res.Rows[0].Errors != 0 || res.Rows[0].P99Seconds < res.Rows[0].P50Seconds {
		t.Fatalf("bench --json rows %+v", res.Rows)
	}
}

func TestBench_ProgressBarWhenForced(t *testing.T) {
	addr, _ := startServer(t)
	ios, _, errOut := streams("")
	on := true
	opts := &BenchOptions{ClientOptions: ClientOptions{IO: ios, Addr: addr, Timeout: time.Second}, Clients: 1, Duration: 500 * time.Millisecond, Keys: 10, WritePercent: 50, Progress: &on}
	if err := benchRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "ops/s") || !strings.Contains(errOut.String(), "[=") {
		t.Fatalf("no progress bar: %q", errOut)
	}
}

func TestBench_ValueTooLargeCountsErrorsAndFailsWhenAllFail(t *testing.T) {
	addr, _ := startServerWith(t, kvstore.Options{MaxValueSize: 1024})
	_, errOut, code := run(t, nil, "", "bench", "--addr", addr, "--clients", "1", "--duration", "200ms", "--write-percent", "100", "--value-size", "1025")
	if code != cmdutil.ExitFailure || !strings.Contains(errOut, "every request failed") || !strings.Contains(errOut, "value too large") {
		t.Fatalf("%d %q", code, errOut)
	}
}

func TestServe_APortConflictIsReportedBeforeTheEngineOpens(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := lockedDataDir(t)
	ios, _, _ := streams("")
	opts := serveDefaults(ios, dir)
	opts.TCPAddr = busy.Addr().String()
	// The directory is locked too: the port must be what is reported,
	// because it is checked first.
	err = serveRun(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "listen tcp on "+busy.Addr().String()) || errors.Is(err, kvstore.ErrLocked) {
		t.Fatalf("serve on a busy port = %v, want the listen error before the engine opens", err)
	}
}

// TestBench_JSONDurationsInSeconds: bench --json gives its durations as
// float seconds in *_seconds fields and nowhere else (run checks the schema
// rule on every --json: the duration_s and p50_us/p99_us of old break it).
func TestBench_JSONDurationsInSeconds(t *testing.T) {
	addr, _ := startServer(t)
	out, errOut, code := run(t, nil, "", "bench", "--addr", addr, "--clients", "1", "--duration", "200ms", "--keys", "5", "--json")
	if code != 0 {
		t.Fatalf("bench --json: %d %q", code, errOut)
	}
	var doc struct {
		DurationSeconds *float64 `json:"duration_seconds"`
		Rows            []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("bench --json %q: %v", out, err)
	}
	if doc.DurationSeconds == nil || *doc.DurationSeconds < 0.2 {
		t.Fatalf("duration_seconds %v", doc.DurationSeconds)
	}
	for _, r := range doc.Rows {
		for _, q := range []string{"p50_seconds", "p99_seconds"} {
			if secs, ok := r[q].(float64); !ok || secs <= 0 || secs > 1 {
				t.Errorf("row %v: %s %v, want a latency in seconds", r, q, r[q])
			}
		}
	}
}

// TestClientCommands_WrongListenerSaysWhichPortAndFlag points --addr at the
// server's HTTP and RESP listeners, a newcomer's first guesses: the error
// names the listener it reached and the flag and address to use instead,
// not "invalid character 'H' looking for beginning of value".
func TestClientCommands_WrongListenerSaysWhichPortAndFlag(t *testing.T) {
	srv, _ := startListeners(t, kvstore.Options{}, server.Config{HTTPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0"})
	addrs := srv.Addrs()
	for _, tc := range []struct{ addr, protocol, flag string }{
		{addrs.HTTP, "HTTP", "--http"},
		{addrs.RESP, "RESP", "--resp"},
	} {
		for _, args := range [][]string{{"get", "k"}, {"set", "k", "v"}, {"keys"}} {
			_, stderr, code := run(t, nil, "", append(args, "--addr", tc.addr)...)
			want := fmt.Sprintf("devkit: %s answered in %s: it is `devkit kv serve`'s %s listener", tc.addr, tc.protocol, tc.flag)
			if code != cmdutil.ExitFailure || !strings.HasPrefix(stderr, want) ||
				!strings.Contains(stderr, "its --tcp listener (default "+server.DefaultTCPAddr+"): pass that address with --addr or $"+AddrEnv) {
				t.Errorf("kv %v --addr %s (%s): exit %d, stderr %q; want exit 1 and %q, naming --tcp and --addr", args, tc.addr, tc.protocol, code, stderr, want)
			}
		}
	}
	// The TCP listener itself still works.
	if _, stderr, code := run(t, nil, "", "set", "k", "v", "--addr", addrs.TCP); code != 0 {
		t.Fatalf("set against the TCP listener: exit %d, %s", code, stderr)
	}
}

// TestIsTerminal_DevNullIsNotATerminal: /dev/null is a character device,
// which the old mode check took for a terminal (and so added a newline
// after a value and drew progress bars into it).
func TestIsTerminal_DevNullIsNotATerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Errorf("isTerminal(%s) = true", os.DevNull)
	}
	if showProgress(f, nil) {
		t.Errorf("a progress bar would be drawn into %s", os.DevNull)
	}
}
