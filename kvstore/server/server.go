// Package server runs the engine's front doors together — HTTP (package
// httpapi), newline-delimited JSON over TCP (package tcpjson) and RESP2
// (package resp) — sharing one set of metrics, and shuts them down together.
//
// Invariant: Shutdown returns only after every listener stopped accepting and
// every request already being served was answered (or the drain bound ran
// out), so the caller may close the engine right after it.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/httpapi"
	"github.com/devkit-go/devkit/kvstore/server/metrics"
	"github.com/devkit-go/devkit/kvstore/server/resp"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// Defaults of Config.
const (
	DefaultHTTPAddr        = "127.0.0.1:4000"
	DefaultTCPAddr         = "127.0.0.1:5000"
	DefaultShutdownTimeout = 10 * time.Second
	DefaultHTTPMaxConns    = 1024
	DefaultHTTPIdleTimeout = 2 * time.Minute
	// DefaultHTTPReadHeaderTimeout bounds the wait for a request's headers.
	DefaultHTTPReadHeaderTimeout = 10 * time.Second
)

// Config says where to listen and with which limits. An empty address
// turns that listener off.
type Config struct {
	HTTPAddr string
	TCPAddr  string
	RESPAddr string

	// HTTP configures the handler; HTTPMaxConns, HTTPIdleTimeout bound the
	// HTTP listener's connections (defaults 1024 and 2m; negative: no limit).
	HTTP            httpapi.Options
	HTTPMaxConns    int
	HTTPIdleTimeout time.Duration
	// HTTPMaxConnsPerIP bounds one source address's HTTP connections
	// (HTTPMaxConns/2 when zero; negative: no bound).
	HTTPMaxConnsPerIP int
	// HTTPReadHeaderTimeout closes a connection that does not send its
	// request headers in time (a client that connects and says nothing). 10s when zero.
	HTTPReadHeaderTimeout time.Duration
	TCP                   tcpjson.Options
	RESP                  resp.Options

	// TLS, when set, makes every listener speak TLS (standard library).
	TLS *tls.Config
	// Password, when set, is required on every transport: RESP's AUTH, TCP
	// JSON's auth request, and HTTP's bearer token (unless HTTP.Token is set
	// on its own). /health stays open for load balancers.
	Password string

	// Bound, when set, holds the listeners (from Bind) instead of the
	// addresses above.
	Bound *Bound

	// ShutdownTimeout bounds the drain of in-flight requests. 10s when zero.
	ShutdownTimeout time.Duration
	Logger          *slog.Logger
}

// Server is the running set of listeners.
type Server struct {
	cfg     Config
	metrics *metrics.Metrics
	api     *httpapi.Handler
	httpSrv *http.Server
	tcpSrv  *tcpjson.Server
	respSrv *resp.Server

	httpLn, tcpLn, respLn net.Listener
}

// New prepares the listeners' servers over store; Listen binds them.
func New(store backend.Store, cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.HTTPMaxConns == 0 {
		cfg.HTTPMaxConns = DefaultHTTPMaxConns
	}
	if cfg.HTTPMaxConnsPerIP == 0 {
		cfg.HTTPMaxConnsPerIP = max(cfg.HTTPMaxConns/2, 1)
	}
	if cfg.HTTPIdleTimeout == 0 {
		cfg.HTTPIdleTimeout = DefaultHTTPIdleTimeout
	}
	if cfg.HTTPReadHeaderTimeout <= 0 {
		cfg.HTTPReadHeaderTimeout = DefaultHTTPReadHeaderTimeout
	}
	m := metrics.New(store)
	s := &Server{cfg: cfg, metrics: m}
	cfg.HTTP.Metrics, cfg.HTTP.Logger = m, cfg.Logger
	cfg.TCP.Metrics, cfg.TCP.Logger = m, cfg.Logger
	cfg.RESP.Metrics, cfg.RESP.Logger = m, cfg.Logger
	if cfg.Password != "" {
		cfg.RESP.Password, cfg.TCP.Password = cfg.Password, cfg.Password
		if cfg.HTTP.Token == "" {
			cfg.HTTP.Token = cfg.Password
		}
	}
	s.api = httpapi.New(store, cfg.HTTP)
	s.httpSrv = &http.Server{
		Handler:           markBusy(s.api),
		ConnContext:       withConn,
		ReadHeaderTimeout: cfg.HTTPReadHeaderTimeout,
		// Long enough for a maximum-size value on a slow link.
		ReadTimeout:    2 * time.Minute,
		WriteTimeout:   2 * time.Minute,
		IdleTimeout:    max(cfg.HTTPIdleTimeout, 0),
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	s.tcpSrv = tcpjson.NewServer(store, cfg.TCP)
	s.respSrv = resp.NewServer(store, cfg.RESP)
	return s
}

// Metrics are the counters every listener shares.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Bound holds listeners bound before the server exists: `devkit kv serve`
// binds (and reports a port conflict) before the engine's recovery, which
// may take seconds.
type Bound struct{ HTTP, TCP, RESP net.Listener }

// Close closes every listener that is set.
func (b *Bound) Close() {
	for _, ln := range []net.Listener{b.HTTP, b.TCP, b.RESP} {
		if ln != nil {
			ln.Close()
		}
	}
}

// Bind binds cfg's addresses; on failure nothing stays bound. Pass the
// result as Config.Bound.
func Bind(ctx context.Context, cfg Config) (*Bound, error) {
	var lc net.ListenConfig
	bind := func(name, addr string) (net.Listener, error) {
		if addr == "" {
			return nil, nil
		}
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen %s on %s: %w", name, addr, err)
		}
		return ln, nil
	}
	b := &Bound{}
	var err error
	if b.HTTP, err = bind("http", cfg.HTTPAddr); err == nil {
		if b.TCP, err = bind("tcp", cfg.TCPAddr); err == nil {
			b.RESP, err = bind("resp", cfg.RESPAddr)
		}
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Listen binds every configured address (or takes Config.Bound); on
// failure nothing stays bound.
func (s *Server) Listen(ctx context.Context) error {
	b := s.cfg.Bound
	if b == nil {
		var err error
		if b, err = Bind(ctx, s.cfg); err != nil {
			return err
		}
	}
	s.httpLn, s.tcpLn, s.respLn = b.HTTP, b.TCP, b.RESP
	if s.httpLn != nil && s.cfg.HTTPMaxConns > 0 {
		s.httpLn = newLimitListener(s.httpLn, s.cfg.HTTPMaxConns, s.cfg.HTTPMaxConnsPerIP, s.metrics, s.cfg.Logger)
	}
	if s.cfg.TLS != nil {
		// The limit listener sits under TLS, so that a connection is counted
		// (and can be closed) before its handshake.
		for _, ln := range []*net.Listener{&s.httpLn, &s.tcpLn, &s.respLn} {
			if *ln != nil {
				*ln = tls.NewListener(*ln, s.cfg.TLS)
			}
		}
	}
	return nil
}

// Addrs are the bound addresses, empty for a listener that is off.
type Addrs struct{ HTTP, TCP, RESP string }

// Addrs returns the addresses Listen bound (useful with port 0).
func (s *Server) Addrs() Addrs {
	addr := func(ln net.Listener) string {
		if ln == nil {
			return ""
		}
		return ln.Addr().String()
	}
	return Addrs{HTTP: addr(s.httpLn), TCP: addr(s.tcpLn), RESP: addr(s.respLn)}
}

// Serve serves on the bound listeners until ctx is done, then shuts down
// gracefully within ShutdownTimeout. It returns nil after a clean drain;
// an error when a listener failed or the drain ran out of time.
func (s *Server) Serve(ctx context.Context) error {
	log := s.cfg.Logger
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	run := func(name string, ln net.Listener, serve func(net.Listener) error, closed func(error) bool) {
		if ln == nil {
			return
		}
		log.Info("listening", "transport", name, "addr", ln.Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := serve(ln); err != nil && !closed(err) {
				errs <- fmt.Errorf("%s listener: %w", name, err)
				cancel()
			}
		}()
	}
	run("http", s.httpLn, s.httpSrv.Serve, func(err error) bool { return errors.Is(err, http.ErrServerClosed) })
	run("tcp", s.tcpLn, s.tcpSrv.Serve, tcpjson.IsClosed)
	run("resp", s.respLn, s.respSrv.Serve, resp.IsClosed)

	<-ctx.Done()
	log.Info("shutting down: draining in-flight requests", "timeout", s.cfg.ShutdownTimeout.String())
	err := s.Shutdown(context.Background())
	wg.Wait()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	return err
}

// Shutdown stops every listener and drains in-flight requests, bounded by
// ShutdownTimeout and ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	s.api.SetDraining(true)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var err error
	for name, shutdown := range map[string]func(context.Context) error{
		"http": s.httpSrv.Shutdown, "tcp": s.tcpSrv.Shutdown, "resp": s.respSrv.Shutdown,
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if e := shutdown(ctx); e != nil {
				mu.Lock()
				err = errors.Join(err, fmt.Errorf("drain %s: %w", name, e))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return err
}
