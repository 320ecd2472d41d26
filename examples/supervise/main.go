// Command supervise uses the supervisor module as a library, without the
// devkit binary: it declares two processes in YAML (a "db" and an "api" that
// depends on it, both this same program in its "worker" role, each serving
// /health), starts them in dependency order waiting for their ready probes,
// prints their status, stops them (dependents first) and checks that both
// are gone.
//
//	go run ./examples/supervise [-home DIR] [-keep]
//
// The per-process monitor is this same binary re-executed (Options.
// MonitorCommand left empty): main calls supervisor.MonitorMain first, which
// runs the monitor and exits in that child, and returns at once otherwise.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/devkit-go/devkit/supervisor"
)

// opsYAML is the configuration; %[1]s is this program, %[2]d and %[3]d the ports.
const opsYAML = `
processes:
  db:
    command: %[1]q
    args: [worker, --listen, "127.0.0.1:%[2]d"]
    ready: {http: "http://127.0.0.1:%[2]d/health", timeout: 10s}
  api:
    command: %[1]q
    args: [worker, --listen, "127.0.0.1:%[3]d"]
    depends_on: [db]
    ready: {http: "http://127.0.0.1:%[3]d/health", timeout: 10s}
`

func main() {
	supervisor.MonitorMain()
	if code, ok := dispatch(os.Args[1:]); ok {
		os.Exit(code)
	}
	home := flag.String("home", "", "supervisor home (default: a temporary directory, removed at the end)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *home); err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", err)
		os.Exit(1)
	}
}

// dispatch runs the role this program plays for the supervisor, the worker.
// It reports false for the main role.
func dispatch(args []string) (int, bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "worker":
		if err := worker(args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// worker serves /health on --listen until SIGTERM.
func worker(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return srv.Close()
	}
}

// run starts the two processes, shows their status, stops them and checks
// nothing is left running.
func run(ctx context.Context, out io.Writer, home string) error {
	if home == "" {
		dir, err := os.MkdirTemp("", "supervise-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		home = dir
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(home, "ops.yaml")
	cfg, err := supervisor.ParseConfig(cfgPath, fmt.Appendf(nil, opsYAML, exe, ports[0], ports[1]), os.LookupEnv)
	if err != nil {
		return err
	}
	sup, err := supervisor.New(filepath.Join(home, "sup"), cfg, supervisor.Options{
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	// Whatever happens below, leave nothing running.
	defer func() { _, _ = sup.Stop(context.WithoutCancel(ctx), cfg.Order, supervisor.StopOptions{Force: true}) }()

	started, err := sup.Start(ctx, cfg.Order)
	if err != nil {
		return err
	}
	for _, r := range started {
		fmt.Fprintf(out, "started %-3s pid %d, ready after %.2fs\n", r.Name, r.PID, r.ReadySeconds)
	}
	if err := printStatus(ctx, out, sup, supervisor.StateRunning); err != nil {
		return err
	}
	stopped, err := sup.Stop(ctx, cfg.Order, supervisor.StopOptions{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	for _, r := range stopped {
		fmt.Fprintf(out, "stopped %-3s pid %d: %s\n", r.Name, r.PID, r.Outcome)
	}
	return printStatus(ctx, out, sup, supervisor.StateStopped)
}

// printStatus prints every process's state and fails unless each is want.
func printStatus(ctx context.Context, out io.Writer, sup *supervisor.Supervisor, want supervisor.State) error {
	statuses, err := sup.Status(ctx, nil)
	if err != nil {
		return err
	}
	var wrong []string
	for _, st := range statuses {
		fmt.Fprintf(out, "  status %-3s %s\n", st.Name, st.State)
		if st.State != want {
			wrong = append(wrong, fmt.Sprintf("%s is %s", st.Name, st.State))
		}
	}
	if len(statuses) == 0 || len(wrong) > 0 {
		return fmt.Errorf("want every process %s: %s", want, strings.Join(wrong, ", "))
	}
	return nil
}

// freePorts returns n TCP ports on 127.0.0.1 that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
