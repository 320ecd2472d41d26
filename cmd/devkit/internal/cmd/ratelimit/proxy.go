package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	rl "github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/middleware"
	"github.com/devkit-go/devkit/ratelimit/policy"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
)

// ProxyOptions are the inputs of `devkit ratelimit proxy`.
type ProxyOptions struct {
	IO    *cmdutil.IOStreams
	Store *StoreOptions
	Ctx   context.Context

	Listen   string
	Upstream string
	Policy   string
	Fail     string
	Admin    string

	// WatchInterval is how often the policy file is polled for changes.
	WatchInterval time.Duration
	// Ready, when set, receives the bound addresses (admin empty when off).
	Ready func(listen, admin string)
	// Reload, when set, replaces SIGHUP as the trigger of a policy re-read.
	Reload <-chan struct{}
}

// proxyPipelineWorkers send concurrent checks to Redis as pipelines.
const proxyPipelineWorkers = 4

// blockedCacheSize bounds the identities the proxy remembers as blocked.
const blockedCacheSize = 100_000

func newProxyCmd(ios *cmdutil.IOStreams, so *StoreOptions) *cobra.Command {
	opts := &ProxyOptions{IO: ios, Store: so, WatchInterval: 2 * time.Second}
	cmd := &cobra.Command{
		Use:   "proxy --listen ADDR --upstream URL --policy FILE",
		Short: "Run a rate-limiting reverse proxy in front of an HTTP API",
		Long: `proxy forwards requests to --upstream after checking them against the policy.
Limited responses carry X-RateLimit-*, RateLimit-Policy and RateLimit headers;
denials are 429 application/problem+json with Retry-After.

Without --redis (or REDIS_URL) the limits live in this process's memory.
The policy is re-read when the file changes or on SIGHUP; an invalid file is
reported and the old policy stays. --admin serves /metrics (Prometheus),
/health, /top, /info?key= and POST /reset?key= on a separate address, so
clients cannot reset their own limits.`,
		Example: `  devkit ratelimit proxy --listen :8080 --upstream http://127.0.0.1:9000 \
      --policy examples/policies/saas.yaml --redis redis://127.0.0.1:6379 --admin 127.0.0.1:9090`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx = cmd.Context()
			return runProxy(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Listen, "listen", "", "address to serve clients on, e.g. :8080")
	f.StringVar(&opts.Upstream, "upstream", "", "URL of the API to protect")
	f.StringVar(&opts.Policy, "policy", "", "policy file (YAML)")
	f.StringVar(&opts.Fail, "fail", "", "when the store is down: open or closed (default: the policy's, else open)")
	f.StringVar(&opts.Admin, "admin", "", "address of the admin API (metrics, health, inspection); off when empty")
	for _, name := range []string{"listen", "upstream", "policy"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}

func runProxy(opts *ProxyOptions) error {
	upstream, err := url.Parse(opts.Upstream)
	if err != nil || (upstream.Scheme != "http" && upstream.Scheme != "https") || upstream.Host == "" {
		return cmdutil.UsageErrorf("--upstream %q: want an http:// or https:// URL", opts.Upstream)
	}
	var failOverride rl.FailurePolicy
	if opts.Fail != "" {
		if failOverride, err = rl.ParseFailurePolicy(opts.Fail); err != nil {
			return cmdutil.UsageErrorf("--fail: %v", err)
		}
	}
	applyOverrides := func(p *policy.Policy) *policy.Policy {
		if failOverride != rl.FailDefault {
			p.Fail = failOverride
		}
		return p
	}
	pol, err := policy.Load(opts.Policy)
	if err != nil {
		return err
	}
	applyOverrides(pol)
	log := slog.New(slog.NewTextHandler(opts.IO.ErrOut, nil))

	var store rl.Store
	if raw := opts.Store.url(); raw != "" {
		client, err := redisstore.NewClient(raw)
		if err != nil {
			return cmdutil.UsageError(err)
		}
		defer client.Close()
		// Concurrent checks share round trips: pipelining workers.
		rs := redisstore.New(client, redisstore.Options{Prefix: opts.Store.Prefix, Pipeline: proxyPipelineWorkers})
		defer rs.Close()
		store = rs
	} else {
		log.Warn("no --redis or REDIS_URL: limits are kept in this process's memory, not shared")
		store = memory.New(memory.Options{})
	}
	limiter := rl.New(store, rl.Options{Fail: rl.FailOpen, Budget: pol.Budget, BlockedCacheSize: blockedCacheSize, Logger: log})
	mw := middleware.New(limiter, pol, middleware.Options{Logger: log})

	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			// Pass on the X-Forwarded-For chain only from a trusted proxy;
			// what an untrusted client claims is dropped, not forwarded.
			if mw.Policy().Identity.Trusts(pr.In.RemoteAddr) {
				pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
			}
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Warn("upstream failed", "err", err, "path", r.URL.Path)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadGateway)
			_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": "Bad Gateway", "status": 502,
				"detail": "the upstream API did not answer"}) // the status is sent; a failed body write means the client left
		},
	}

	ctx := opts.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", opts.Listen, err)
	}
	servers := []*http.Server{{Handler: mw.Handler(rp), ReadHeaderTimeout: 10 * time.Second}}
	listeners := []net.Listener{ln}
	adminAddr := ""
	if opts.Admin != "" {
		aln, err := net.Listen("tcp", opts.Admin)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen %s (admin): %w", opts.Admin, err)
		}
		adminAddr = aln.Addr().String()
		servers = append(servers, &http.Server{Handler: middleware.NewAdmin(limiter), ReadHeaderTimeout: 10 * time.Second})
		listeners = append(listeners, aln)
	}

	reload := opts.Reload
	if reload == nil {
		reload = notifyReload(ctx)
	}
	go policy.Watch(ctx, opts.Policy, pol, opts.WatchInterval, reload,
		func(p *policy.Policy) {
			mw.SetPolicy(applyOverrides(p))
			log.Info("policy reloaded", "file", opts.Policy, "rules", len(p.Rules))
		},
		func(err error) { log.Error("policy not reloaded; the previous one stays", "err", err) })

	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	log.Info("proxy listening", "listen", ln.Addr().String(), "upstream", upstream.String(), "admin", adminAddr,
		"policy", opts.Policy, "rules", len(pol.Rules))
	if opts.Ready != nil {
		opts.Ready(ln.Addr().String(), adminAddr)
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var shutdownErr error
	for _, srv := range servers {
		shutdownErr = errors.Join(shutdownErr, srv.Shutdown(shutdownCtx))
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	if shutdownErr != nil {
		return fmt.Errorf("requests still in flight after 5s were cut off: %w", shutdownErr)
	}
	log.Info("proxy stopped")
	return nil
}
