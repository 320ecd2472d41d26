package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	rl "github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/envoyrls"
	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// ProxyOptions are the inputs of `devkit ratelimit proxy`.
type ProxyOptions struct {
	IO    *cmdutil.IOStreams
	Store *StoreOptions

	Listen string
	// Upstream is the API requests are forwarded to; empty for serve.
	Upstream string
	// AuthPath, when set, answers nginx auth_request (and forward-auth)
	// checks on the client listener.
	AuthPath string
	// GRPCAddr, when set, serves Envoy's rate limit service API (serve).
	GRPCAddr string
	Policy   string
	Fail     string
	Admin    string
	// AdminToken is the admin API's bearer token (default $DEVKIT_RATELIMIT_ADMIN_TOKEN).
	AdminToken string

	// TLSCert and TLSKey, when set, serve clients over TLS (and HTTP/2).
	TLSCert, TLSKey string

	// Timeouts of the gateway (gateway.Config); zero is its default.
	ReadHeaderTimeout, ReadIdleTimeout, WriteIdleTimeout, IdleTimeout, RequestTimeout time.Duration

	// WaitReplicas and WaitTimeout: WAIT after every write (--wait-replicas).
	WaitReplicas int
	WaitTimeout  time.Duration

	// WatchInterval is how often the policy file is polled for changes.
	WatchInterval time.Duration
	// Ready, when set, receives the bound addresses (admin empty when off).
	Ready func(listen, admin string)
	// Reload, when set, replaces SIGHUP as the trigger of a policy re-read.
	Reload <-chan struct{}
	// GCPercent is --gc-percent: the collector's target for this process.
	GCPercent gcPercent
}

// DefaultGCPercent is the proxy's GOGC: its heap is small and its garbage
// per request, so the runtime's 100 collects very often under load
// (BenchmarkGateway_RejectionGCPercent: 8-18% less CPU per 429 at 50
// connections with 400, the same at 1,000), at the price of a heap that may
// grow to 5x what is live instead of 2x.
const DefaultGCPercent = 400

// gcPercent is the value of --gc-percent; set records that it was given.
type gcPercent struct {
	v   int
	set bool
}

func (g *gcPercent) String() string { return strconv.Itoa(g.v) }
func (g *gcPercent) Type() string   { return "int" }
func (g *gcPercent) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < -1 {
		return fmt.Errorf("%q: want a percentage, such as 100 (the Go runtime's default) or 400, or -1 (no collection)", s)
	}
	g.v, g.set = n, true
	return nil
}

// applyGCPercent sets the process's GC percent from --gc-percent, unless
// the flag was not given and $GOGC was (the runtime has read that one):
// the command owns its process, the library packages never touch this. It
// returns the percent in force and whether it set it.
func applyGCPercent(g gcPercent, getenv func(string) string) (int, bool) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if !g.set && getenv("GOGC") != "" {
		old := debug.SetGCPercent(100)
		debug.SetGCPercent(old)
		return old, false
	}
	debug.SetGCPercent(g.v)
	return g.v, true
}

// blockedCacheSize bounds the identities the proxy remembers as blocked.
const blockedCacheSize = 100_000

// NewCmdProxy builds `devkit ratelimit proxy`; runF, when not nil, receives the options instead of proxyRun.
func NewCmdProxy(f *cmdutil.Factory, runF func(context.Context, *ProxyOptions) error) *cobra.Command {
	opts := &ProxyOptions{IO: f.IOStreams, WatchInterval: 2 * time.Second, GCPercent: gcPercent{v: DefaultGCPercent}}
	cmd := &cobra.Command{
		Use:   "proxy --listen ADDR --upstream URL --policy FILE",
		Short: "Run a rate-limiting reverse proxy in front of an HTTP API",
		Long: `proxy forwards requests to --upstream after checking them against the policy.
Limited responses carry X-RateLimit-*, RateLimit-Policy and RateLimit headers;
denials are 429 application/problem+json with Retry-After.

Without --redis (or REDIS_URL) the limits live in this process's memory.
The policy is re-read when its writer is done with the file (closed after
writing, or renamed into place) and on SIGHUP; an invalid file is reported and
the old policy stays, and a reload that removes a rule or a limit is logged. --admin serves /metrics (Prometheus),
/health, /top, /info?key= and POST /reset?key= on a separate address, so
clients cannot reset their own limits; a port alone (--admin :9090) binds
127.0.0.1 only, and --admin-token (or $DEVKIT_RATELIMIT_ADMIN_TOKEN) makes
every admin request carry "Authorization: Bearer TOKEN".

Identity headers (the policy's user/tenant/plan headers) and X-Real-IP from
peers that are not trusted proxies are stripped before the upstream, and
X-Forwarded-For and Forwarded are rewritten to the verified client chain.`,
		Example: `  devkit ratelimit proxy --listen :8080 --upstream http://127.0.0.1:9000 \
      --policy examples/policies/saas.yaml --redis redis://127.0.0.1:6379 --admin 127.0.0.1:9090`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Store = storeFrom(f, cmd)
			if opts.AdminToken == "" {
				opts.AdminToken = f.Getenv(AdminTokenEnv)
			}
			if err := requireFlags(cmd, "listen", "upstream", "policy"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return proxyRun(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Listen, "listen", "", "address to serve clients on, e.g. :8080")
	fs.StringVar(&opts.Upstream, "upstream", "", "URL of the API to protect")
	fs.StringVar(&opts.Policy, "policy", "", "policy file (YAML)")
	fs.StringVar(&opts.Fail, "fail", "", "when the store is down: open or closed (default: the policy's, else open)")
	fs.StringVar(&opts.AuthPath, "auth-path", "", "also answer nginx auth_request checks on this path of --listen, e.g. /ratelimit/auth (off when empty)")
	fs.StringVar(&opts.Admin, "admin", "", "address of the admin API (metrics, health, inspection); a port alone binds 127.0.0.1; off when empty")
	fs.StringVar(&opts.AdminToken, "admin-token", "", "bearer token the admin API requires (default $"+AdminTokenEnv+")")
	fs.StringVar(&opts.TLSCert, "tls-cert", "", "certificate chain (PEM) to serve clients over TLS, with HTTP/2; needs --tls-key")
	fs.StringVar(&opts.TLSKey, "tls-key", "", "private key (PEM) of --tls-cert")
	timeoutFlags(cmd, opts)
	return cmd
}

// timeoutFlags are the gateway's timeouts and the store's replica wait,
// shared by proxy and serve.
func timeoutFlags(cmd *cobra.Command, opts *ProxyOptions) {
	fs := cmd.Flags()
	fs.IntVar(&opts.WaitReplicas, "wait-replicas", 0,
		"answer each check once this many Redis replicas hold its write (WAIT), so a failover keeps the counts; off by default")
	cmdutil.DurationVar(fs, &opts.WaitTimeout, "wait-timeout", 0, "longest wait for --wait-replicas per check (default 50ms)")
	cmdutil.DurationVar(fs, &opts.ReadHeaderTimeout, "read-header-timeout", 0, "longest a client may take to send a request head (default 10s)")
	cmdutil.DurationVar(fs, &opts.ReadIdleTimeout, "read-idle-timeout", 0,
		"longest wait for the next bytes of a request body or of the upstream's response, as nginx's proxy_read_timeout (default 1m0s)")
	cmdutil.DurationVar(fs, &opts.WriteIdleTimeout, "write-idle-timeout", 0,
		"longest a write to the client or the upstream may wait, as nginx's send_timeout (default 1m0s)")
	cmdutil.DurationVar(fs, &opts.IdleTimeout, "idle-timeout", 0, "how long a kept-alive client connection may wait for its next request (default 2m0s)")
	cmdutil.DurationVar(fs, &opts.RequestTimeout, "request-timeout", 0, "bound on a whole request, answer included (default: none)")
	fs.Var(&opts.GCPercent, "gc-percent",
		"the Go collector's GOGC for this process: 400 spends less CPU per request than the runtime's 100, for a heap up to 5x what is live; $GOGC wins when this flag is not given")
}

// AdminTokenEnv is the environment variable that gives --admin-token.
const AdminTokenEnv = "DEVKIT_RATELIMIT_ADMIN_TOKEN"

func proxyRun(ctx context.Context, opts *ProxyOptions) error {
	if opts.Upstream != "" || opts.AuthPath == "" {
		if _, err := gateway.ParseUpstream(opts.Upstream); err != nil {
			return cmdutil.UsageErrorf("--%v", err)
		}
	}
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return cmdutil.UsageErrorf("--tls-cert and --tls-key go together")
	}
	var fail rl.FailurePolicy
	if opts.Fail != "" {
		var err error
		if fail, err = rl.ParseFailurePolicy(opts.Fail); err != nil {
			return cmdutil.UsageErrorf("--fail: %v", err)
		}
	}
	pol, err := policy.Load(opts.Policy)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(opts.IO.ErrOut, nil))
	applyGCPercent(opts.GCPercent, opts.Store.Getenv)
	for _, w := range pol.Warnings {
		log.Warn("policy: " + w)
	}
	token := opts.AdminToken
	if token == "" && opts.Store.Getenv != nil {
		token = opts.Store.Getenv(AdminTokenEnv)
	}

	if opts.WaitReplicas < 0 {
		return cmdutil.UsageErrorf("--wait-replicas: want 0 (off) or more")
	}
	opts.Store.WaitReplicas, opts.Store.WaitTimeout = opts.WaitReplicas, opts.WaitTimeout
	var store rl.Store
	if raw := opts.Store.url(); raw != "" {
		rs, client, err := opts.Store.openStore(raw)
		if err != nil {
			return err
		}
		defer client.Close()
		store = rs
	} else {
		log.Warn("no --redis or REDIS_URL: limits are kept in this process's memory, not shared")
		store = memory.New(memory.Options{})
	}
	limiter := rl.New(store, rl.Options{Fail: rl.FailOpen, Budget: pol.Budget, BlockedCacheSize: blockedCacheSize, Logger: log})
	reload := opts.Reload
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if reload == nil {
		reload = notifyReload(ctx)
	}
	srv, err := gateway.New(gateway.Config{
		Listen: opts.Listen, Admin: opts.Admin, AdminToken: token, Upstream: opts.Upstream, AuthPath: opts.AuthPath,
		Policy: pol, Limiter: limiter, Fail: fail, Logger: log,
		PolicyFile: opts.Policy, WatchInterval: opts.WatchInterval, Reload: reload,
		ReadHeaderTimeout: opts.ReadHeaderTimeout, ReadIdleTimeout: opts.ReadIdleTimeout, WriteIdleTimeout: opts.WriteIdleTimeout,
		IdleTimeout: opts.IdleTimeout, RequestTimeout: opts.RequestTimeout, TLSCertFile: opts.TLSCert, TLSKeyFile: opts.TLSKey,
	})
	if err != nil {
		return cmdutil.UsageError(err)
	}
	if err := srv.Listen(ctx); err != nil {
		return err
	}
	var grpcDone chan error
	if opts.GRPCAddr != "" {
		var lc net.ListenConfig
		gln, err := lc.Listen(ctx, "tcp", opts.GRPCAddr)
		if err != nil {
			srv.Shutdown(ctx) //nolint:errcheck // nothing was served yet
			return fmt.Errorf("listen %s (grpc): %w", opts.GRPCAddr, err)
		}
		grpcDone = make(chan error, 1)
		svc := envoyrls.New(limiter, srv.Policy)
		go func() {
			err := envoyrls.Serve(ctx, gln, svc, gateway.DefaultShutdownTimeout, log)
			if err != nil {
				stop() // the gRPC server failed: the gateway stops too
			}
			grpcDone <- err
		}()
	}
	if opts.Ready != nil {
		opts.Ready(srv.Addr(), srv.AdminAddr())
	}
	err = srv.Serve(ctx)
	if grpcDone != nil {
		stop() // the gateway may have ended on its own
		err = errors.Join(err, <-grpcDone)
	}
	if err != nil {
		return err
	}
	log.Info("proxy stopped")
	return nil
}
