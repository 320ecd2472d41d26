// Package gateway is the rate-limiting reverse proxy: a Server that checks
// every request against a policy (ratelimit/middleware) and forwards what
// passes to one upstream, with an admin API on a separate, loopback-only by
// default, address.
//
// What reaches the upstream is what the gateway verified: identity headers
// (user, tenant, plan) and X-Real-IP from untrusted peers are stripped, and
// X-Forwarded-For and Forwarded (RFC 7239) are rewritten to the verified
// chain. Errors are application/problem+json (RFC 9457); a client that goes
// away is not an upstream error.
//
// Both listeners are net/http.Servers (HTTP/2 over TLS with TLSCertFile),
// forwarding through httputil.ReverseProxy; timeouts bound the waits
// between reads and between writes, not whole requests (streams and long
// transfers last while they move). The package changes no process-wide
// setting.
//
//	srv, err := gateway.New(gateway.Config{Listen: ":8080", Upstream: "http://127.0.0.1:9000",
//		Policy: pol, Limiter: limiter})
//	if err := srv.Listen(ctx); err != nil { ... }
//	err = srv.Serve(ctx) // until ctx ends, then a graceful drain
package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/middleware"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// Defaults of Config. The idle timeouts are nginx's (proxy_read_timeout,
// send_timeout, client_body_timeout: 60 s); no request has a deadline of
// its own unless RequestTimeout gives one, so streams, long downloads and
// slow uploads last as long as they keep moving.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadIdleTimeout   = 60 * time.Second
	DefaultWriteIdleTimeout  = 60 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownTimeout   = 5 * time.Second
	// DefaultMaxIdleConnsPerHost sizes the upstream keep-alive pool to the
	// concurrency a gateway serves: every client connection in flight can
	// keep its upstream connection instead of churning sockets.
	DefaultMaxIdleConnsPerHost = 1024
	DefaultWatchInterval       = policy.DefaultWatchInterval
)

// Config configures a Server. Listen, Policy, Limiter and Upstream or
// AuthPath are required.
type Config struct {
	// Listen is the clients' address (":8080"). Admin is the admin API's;
	// empty turns it off, and a port alone (":9090") binds loopback only.
	Listen, Admin string
	// AdminToken, when set, is the bearer token of the admin API.
	AdminToken string
	// TLSCertFile and TLSKeyFile, when set, make the client listener
	// serve TLS (PEM files, the certificate chain first), with HTTP/2
	// offered by ALPN beside HTTP/1.1.
	TLSCertFile, TLSKeyFile string
	// Upstream is the http:// or https:// URL requests are forwarded to.
	// Empty makes a server with no upstream: it answers AuthPath (which
	// is then required) and 404 to anything else (devkit ratelimit serve).
	Upstream string
	// AuthPath, when set, is the path of the auth endpoint on the client
	// listener (middleware.AuthHandler): nginx's auth_request and other
	// proxies ask it whether a request they received may pass, and it
	// answers trusted proxies only.
	AuthPath string
	// Policy is the policy in force at start; SetPolicy replaces it.
	Policy  *policy.Policy
	Limiter *ratelimit.Limiter
	// Fail, when set, overrides the failure policy of every policy loaded.
	Fail ratelimit.FailurePolicy
	// PolicyFile, when set, is watched (policy.Watch) and replaces the
	// policy when its writer is done with it and it parses (and it is
	// re-read on each receive from Reload); an invalid file is logged and
	// the old policy stays. WatchInterval is the polling period where no
	// file events can be had.
	PolicyFile    string
	WatchInterval time.Duration
	// WatchSettle is how long a change of PolicyFile must be followed by
	// no other before it is applied, on systems that do not report a
	// writer closing the file (Linux does: there a change is applied when
	// its writer closes the file or renames it into place).
	WatchSettle time.Duration
	Reload      <-chan struct{}
	// Transport replaces the tuned upstream transport (tests, TLS setups);
	// the idle timeouts on upstream reads and writes are then its own
	// business (NewTransport sets them).
	Transport http.RoundTripper
	// MaxIdleConnsPerHost bounds the upstream keep-alive pool.
	MaxIdleConnsPerHost int
	// ReadHeaderTimeout bounds the reading of a request head (slowloris).
	ReadHeaderTimeout time.Duration
	// ReadIdleTimeout is the longest wait for the next bytes of what the
	// gateway reads: the client's request body (nginx's
	// client_body_timeout) and the upstream's response, headers and body
	// (proxy_read_timeout). An upstream silent that long before its
	// headers is answered 504; in its body, the response is cut.
	ReadIdleTimeout time.Duration
	// WriteIdleTimeout is the longest a write may wait: to the client
	// (nginx's send_timeout) and to the upstream (proxy_send_timeout).
	WriteIdleTimeout time.Duration
	// IdleTimeout is how long a kept-alive client connection may wait
	// for its next request.
	IdleTimeout time.Duration
	// RequestTimeout, when set, bounds a whole request, answer included;
	// zero (the default) sets no such bound.
	RequestTimeout time.Duration
	// ResponseHeaderTimeout, when set, bounds the wait for the upstream's
	// response headers after the request was sent, however the upstream
	// trickles; zero leaves it to ReadIdleTimeout.
	ResponseHeaderTimeout time.Duration
	ShutdownTimeout       time.Duration
	Logger                *slog.Logger
}

// Server is the gateway: a client listener and, optionally, an admin one,
// each a net/http.Server.
type Server struct {
	cfg      Config
	upstream *url.URL
	mw       *middleware.Middleware
	metrics  *upstreamMetrics
	handler  http.Handler
	// auth answers Config.AuthPath, nil when it is off.
	auth http.Handler
	log  *slog.Logger

	clientSrv, adminSrv *http.Server
	ln, adminLn         net.Listener
	// inFlight counts the client requests being served: a drain that
	// runs out of time tells cut-off requests from silent connections
	// (connected, nothing sent, or half a head), which are no error.
	inFlight atomic.Int64
	reloads  reloadLog

	stopOnce sync.Once
}

// New checks cfg and prepares the server; Listen binds it.
func New(cfg Config) (*Server, error) {
	var u *url.URL
	switch {
	case cfg.Upstream != "":
		var err error
		if u, err = ParseUpstream(cfg.Upstream); err != nil {
			return nil, err
		}
	case cfg.AuthPath == "":
		return nil, errors.New("gateway: an upstream or an auth path is required")
	}
	if cfg.AuthPath != "" && !strings.HasPrefix(cfg.AuthPath, "/") {
		return nil, fmt.Errorf("gateway: auth path %q: want an absolute path, such as /ratelimit/auth", cfg.AuthPath)
	}
	if cfg.Policy == nil || cfg.Limiter == nil {
		return nil, errors.New("gateway: a policy and a limiter are required")
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return nil, errors.New("gateway: TLS needs both a certificate and a key file")
	}
	defaults(&cfg)
	s := &Server{cfg: cfg, upstream: u, log: cfg.Logger, metrics: newUpstreamMetrics()}
	s.mw = middleware.New(cfg.Limiter, s.override(cfg.Policy), middleware.Options{Logger: cfg.Logger})
	transport := cfg.Transport
	if transport == nil {
		transport = NewTransport(TransportOptions{MaxIdleConnsPerHost: cfg.MaxIdleConnsPerHost,
			ReadIdleTimeout: cfg.ReadIdleTimeout, WriteIdleTimeout: cfg.WriteIdleTimeout,
			ResponseHeaderTimeout: cfg.ResponseHeaderTimeout})
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:      s.rewrite,
		Transport:    &measuredTransport{next: transport, m: s.metrics},
		ErrorHandler: s.upstreamError,
		ErrorLog:     slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		BufferPool:   bufferPool{},
	}
	if u != nil {
		s.handler = s.guard(s.mw.Handler(proxy))
	} else {
		s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			middleware.WriteError(w, r, http.StatusNotFound, "This server has no upstream; it answers "+cfg.AuthPath+" only.")
		})
	}
	if cfg.AuthPath != "" {
		s.auth = s.mw.AuthHandler()
	}
	errorLog := slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug)
	s.clientSrv = &http.Server{
		Handler: http.HandlerFunc(s.serveClient),
		// No ReadTimeout or WriteTimeout: they bound the whole request.
		// The idle timeouts are set per read and per write (serveClient).
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errorLog,
		ConnContext:       withLingerConn,
	}
	if cfg.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("gateway: TLS certificate: %w", err)
		}
		// HTTP/2 is net/http's own, offered over TLS by ALPN.
		s.clientSrv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"},
			MinVersion: tls.VersionTLS12}
	}
	if cfg.Admin != "" {
		admin := middleware.NewAdmin(cfg.Limiter, middleware.AdminOptions{Token: cfg.AdminToken, Metrics: s.metrics.registry,
			Policy: s.policyStatus})
		s.adminSrv = &http.Server{
			Handler:           admin,
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			ReadTimeout:       cfg.ReadHeaderTimeout + time.Minute,
			WriteTimeout:      time.Minute,
			IdleTimeout:       cfg.IdleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          errorLog,
		}
	}
	return s, nil
}

// maxHeaderBytes bounds a request head; a longer one is answered 431.
const maxHeaderBytes = 64 << 10

// serveClient serves one client request, counted while it runs.
func (s *Server) serveClient(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	if s.cfg.RequestTimeout > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
	}
	iw := newIdleWriter(w, s.cfg.WriteIdleTimeout)
	var body *idleBody
	if r.Body != nil && r.Body != http.NoBody {
		body = &idleBody{ReadCloser: r.Body, rc: iw.rc}
		body.read.d = s.cfg.ReadIdleTimeout
		r.Body = body
	}
	defer iw.done()
	defer func() {
		if v := recover(); v != nil {
			// The request ended without an answer because its client left
			// (the proxy saw it, or the middleware's check was cut short).
			if err, _ := v.(error); errors.Is(err, http.ErrAbortHandler) && (iw.gone || r.Context().Err() != nil) {
				s.metrics.clientGone.Add(1)
			}
			panic(v)
		}
	}()
	if r.Close {
		defer func() {
			// The client said this is its last request: once all of it is
			// read, nothing more is coming to be reset by a plain close.
			if body == nil || body.eof.Load() {
				noLinger(r.Context())
			}
		}()
	}
	if s.auth != nil && r.URL.Path == s.cfg.AuthPath {
		s.auth.ServeHTTP(iw, r)
		return
	}
	s.handler.ServeHTTP(iw, r)
}

// ParseUpstream checks an upstream URL: http:// or https:// with a host.
func ParseUpstream(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream %q: want an http:// or https:// URL", raw)
	}
	return u, nil
}

func defaults(cfg *Config) {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	set(&cfg.ReadIdleTimeout, DefaultReadIdleTimeout)
	set(&cfg.WriteIdleTimeout, DefaultWriteIdleTimeout)
	set(&cfg.IdleTimeout, DefaultIdleTimeout)
	set(&cfg.ShutdownTimeout, DefaultShutdownTimeout)
	set(&cfg.WatchInterval, DefaultWatchInterval)
	if cfg.MaxIdleConnsPerHost <= 0 {
		cfg.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
}

// TransportOptions configure NewTransport; zero values are Config's
// defaults.
type TransportOptions struct {
	MaxIdleConnsPerHost               int
	ReadIdleTimeout, WriteIdleTimeout time.Duration
	ResponseHeaderTimeout             time.Duration
}

// NewTransport is the tuned upstream transport: a keep-alive pool of
// MaxIdleConnsPerHost connections to the one upstream (the standard
// library's 2 churns a socket per request under load), dial and TLS
// timeouts, and the idle timeouts on every read and write of an upstream
// connection (idleConn).
func NewTransport(o TransportOptions) *http.Transport {
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
	if o.ReadIdleTimeout <= 0 {
		o.ReadIdleTimeout = DefaultReadIdleTimeout
	}
	if o.WriteIdleTimeout <= 0 {
		o.WriteIdleTimeout = DefaultWriteIdleTimeout
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: nil, // the upstream is addressed directly, never through $HTTP_PROXY
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return newIdleConn(c, o.ReadIdleTimeout, o.WriteIdleTimeout), nil
		},
		MaxIdleConns:          o.MaxIdleConnsPerHost,
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
}

// override applies Config.Fail to a policy.
func (s *Server) override(p *policy.Policy) *policy.Policy {
	if s.cfg.Fail != ratelimit.FailDefault {
		p.Fail = s.cfg.Fail
	}
	return p
}

// SetPolicy replaces the policy; requests in flight finish under the old one.
func (s *Server) SetPolicy(p *policy.Policy) { s.mw.SetPolicy(s.override(p)) }

// Policy returns the policy in force.
func (s *Server) Policy() *policy.Policy { return s.mw.Policy() }

// Handler is the client-side handler (limit, then forward), for tests and
// benchmarks that serve it themselves.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(s.upstream)
	proto := "http"
	if pr.In.TLS != nil {
		proto = "https"
	}
	// Only what was verified goes upstream (ReverseProxy has already
	// removed the inbound X-Forwarded-* and Forwarded from pr.Out).
	s.mw.Policy().Identity.SetUpstreamHeaders(pr.In, pr.Out.Header, proto)
	pr.Out.Header.Set("X-Forwarded-Host", pr.In.Host)
	pr.Out.Header.Set("X-Forwarded-Proto", proto)
}

// clientGone ends a request whose client left: no answer (net/http would
// send an empty 200 for none), the connection closed, and the request
// counted as gone (serveClient).
func clientGone(w http.ResponseWriter) {
	if iw, ok := w.(*idleWriter); ok {
		iw.gone = true
	}
	panic(http.ErrAbortHandler)
}

func (s *Server) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if b, ok := r.Body.(*idleBody); ok {
		if status, failed := b.bodyFailure(); failed {
			// The request's body failed, not the upstream: the client is
			// told (and the connection ends, its framing being lost), or,
			// gone, told nothing.
			if status == 0 {
				clientGone(w)
			}
			w.Header().Set("Connection", "close")
			detail := "The request body is malformed."
			if status == http.StatusRequestTimeout {
				detail = "The request body did not arrive in time."
			}
			middleware.WriteError(w, r, status, detail)
			return
		}
	}
	if r.Context().Err() != nil {
		// The client went away (or half-closed, which net/http takes for
		// gone): nothing the upstream did, and no made-up answer either,
		// which net/http would send as an empty 200.
		clientGone(w)
	}
	status, detail := http.StatusBadGateway, "The upstream API did not answer; retry shortly."
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		status, detail = http.StatusGatewayTimeout, "The upstream API did not answer in time; retry shortly."
	}
	s.log.Warn("upstream failed", "err", err, "path", r.URL.Path, "status", status)
	middleware.WriteError(w, r, status, detail)
}

// adminAddr binds a port without a host to loopback: the admin API resets
// limits, so it is not reachable from the network unless asked for.
func adminAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen binds the client and admin addresses, then warms the store for
// the policy's limits (up to 5 s); on failure nothing stays bound.
func (s *Server) Listen(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", s.cfg.Listen, err)
	}
	if s.adminSrv != nil {
		addr := adminAddr(s.cfg.Admin)
		aln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("gateway: listen %s (admin): %w", addr, err)
		}
		if !isLoopback(aln.Addr().String()) && s.cfg.AdminToken == "" {
			s.log.Warn("the admin API is reachable from the network without a token: anyone there can reset limits; set --admin-token",
				"admin", aln.Addr().String())
		}
		s.adminLn = aln
	}
	s.ln = ln
	s.warm(ctx, s.Policy())
	return nil
}

// warmTimeout bounds the store's warm-up at start and after a reload.
const warmTimeout = 5 * time.Second

// warm prepares the store for p's limits (connections, scripts, limit
// registrations: Limiter.Warm) before requests come, so that the first
// burst is decided within the budget, not by the failure policy. A store
// that cannot be warmed is logged; requests then set up what is missing.
func (s *Server) warm(ctx context.Context, p *policy.Policy) {
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	if err := s.cfg.Limiter.Warm(ctx, p.Limits()); err != nil {
		s.log.Warn("store not warmed: the first requests set up their connections themselves", "err", err)
	}
}

// Addr is the bound client address; AdminAddr the admin one ("" when off).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// AdminAddr is the bound admin address, "" when the admin API is off.
func (s *Server) AdminAddr() string {
	if s.adminLn == nil {
		return ""
	}
	return s.adminLn.Addr().String()
}

// reloaded puts a policy read from the file in force, and says what it
// removed: a rule or a limit gone is a limit no longer enforced.
func (s *Server) reloaded(old, p *policy.Policy) {
	s.SetPolicy(p)
	go s.warm(context.Background(), p) // the new limits' registrations
	removed := policy.Removed(old, p)
	s.reloads.done(p, removed)
	if len(removed) > 0 {
		s.log.Warn("policy reloaded; it removes rules or limits", "file", s.cfg.PolicyFile, "rules", len(p.Rules), "removed", removed)
	} else {
		s.log.Info("policy reloaded", "file", s.cfg.PolicyFile, "rules", len(p.Rules))
	}
	for _, w := range p.Warnings {
		s.log.Warn("policy: " + w)
	}
}

func (s *Server) notReloaded(err error) {
	s.reloads.failed(err)
	s.log.Error("policy not reloaded; the previous one stays", "err", err)
}

// Serve serves on the bound listeners, follows policy edits and fleet-wide
// resets, until ctx ends; then it drains within ShutdownTimeout. It returns
// nil after a clean drain.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.cfg.PolicyFile != "" {
		go policy.Watch(ctx, s.cfg.PolicyFile, s.Policy(), policy.WatchOptions{
			Interval: s.cfg.WatchInterval, Settle: s.cfg.WatchSettle, Reload: s.cfg.Reload,
			OnChange: s.reloaded, OnError: s.notReloaded,
		})
	}
	go func() {
		if err := s.cfg.Limiter.FollowResets(ctx); err != nil {
			s.log.Warn("not following resets: a reset elsewhere reaches this proxy's blocked cache only at expiry", "err", err)
		}
	}()
	errc := make(chan error, 2)
	serve := func(srv *http.Server, ln net.Listener) {
		var err error
		if srv.TLSConfig != nil {
			err = srv.ServeTLS(ln, "", "") // the certificate is in TLSConfig
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
			cancel()
		}
	}
	go serve(s.clientSrv, lingerListener{s.ln})
	if s.adminSrv != nil {
		go serve(s.adminSrv, s.adminLn)
	}
	upstream := "none"
	if s.upstream != nil {
		upstream = s.upstream.String()
	}
	s.log.Info("proxy listening", "listen", s.Addr(), "upstream", upstream, "auth", s.cfg.AuthPath, "admin", s.AdminAddr(),
		"policy", s.Policy().Source, "rules", len(s.Policy().Rules))
	<-ctx.Done()
	err := s.Shutdown(context.Background())
	select {
	case serveErr := <-errc:
		return errors.Join(serveErr, err)
	default:
	}
	return err
}

// Shutdown stops the listeners and drains in-flight requests, bounded by
// ShutdownTimeout and ctx. Connections with no request in flight (idle,
// silent, or half a head sent) are closed at once and are no error.
func (s *Server) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	var err error
	s.stopOnce.Do(func() {
		var wg sync.WaitGroup
		if s.adminSrv != nil {
			wg.Go(func() {
				if aerr := s.adminSrv.Shutdown(ctx); aerr != nil {
					s.adminSrv.Close()
				}
			})
		}
		err = s.drain(ctx)
		wg.Wait()
		if err != nil {
			err = fmt.Errorf("gateway: requests still in flight after %v were cut off: %w", s.cfg.ShutdownTimeout, err)
		}
	})
	return err
}

// drain shuts the client server down. net/http waits up to 5 s for a
// connection that has not finished its first head, so the drain closes
// everything as soon as no request is in flight.
func (s *Server) drain(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.clientSrv.Shutdown(ctx) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				s.clientSrv.Close()
				if s.inFlight.Load() == 0 {
					return nil
				}
			}
			return err
		case <-tick.C:
			if s.inFlight.Load() == 0 {
				s.clientSrv.Close()
				<-done //nolint:errcheck // after Close, Shutdown's answer changes nothing
				return nil
			}
		}
	}
}

// bufferPool recycles the 32 KB copy buffers of response bodies.
type bufferPool struct{}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *copyBuffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { copyBuffers.Put(&b) }
