// Package connserver runs a request/reply protocol over stream connections:
// the accept loop, the connection limits, deadlines and graceful shutdown,
// shared by the TCP JSON and RESP servers.
//
// Invariant: once Shutdown has begun, no connection starts reading a new
// request — a request already read is answered, then the connection closes —
// so every reply a client received was produced before the engine closes.
//
// Slow or idle clients cannot lock the transport out: one source address
// holds at most MaxConnsPerIP connections; a new connection must complete
// its first request within HandshakeTimeout; and at MaxConns a new
// connection is admitted by closing the connection that has waited longest
// for (or in the middle of) its next request — never one whose request is
// being served.
package connserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// Options configure a Server.
type Options struct {
	// MaxConns bounds open connections. At the limit the connection idle
	// the longest is closed to admit the new one; when every connection is
	// busy, the new one gets Reject's message and is closed.
	MaxConns int
	// MaxConnsPerIP bounds the connections of one source address (0: no
	// bound); a connection over it gets Reject's message and is closed.
	MaxConnsPerIP int
	// HandshakeTimeout bounds the time from accept to the first complete
	// request (0: only IdleTimeout).
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection that sends no request for this long.
	IdleTimeout time.Duration
	// WriteTimeout bounds one flush of replies to a slow reader.
	WriteTimeout time.Duration
	// Reject is written to a connection turned away at MaxConns.
	Reject []byte
	// Transport and Metrics count connections.
	Transport metrics.Transport
	Metrics   *metrics.Metrics
	Logger    *slog.Logger
}

// Handler serves one connection until it returns; the Server closes the
// connection afterwards.
type Handler func(c *Conn)

// Server accepts connections and hands each to a Handler.
type Server struct {
	opts    Options
	handler Handler

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*Conn]struct{}
	perIP     map[string]int
	draining  bool
	wg        sync.WaitGroup
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("server closed")

// New returns a Server running handler on every connection.
func New(opts Options, handler Handler) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Server{opts: opts, handler: handler, listeners: map[net.Listener]struct{}{}, conns: map[*Conn]struct{}{}, perIP: map[string]int{}}
}

// Serve accepts connections on ln until Shutdown; it returns ErrServerClosed then.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isDraining() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.opts.Logger.Warn("accept failed; retrying", "transport", s.opts.Transport.String(), "err", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		backoff = 0
		s.start(nc)
	}
}

// isTemporary reports accept errors worth retrying, such as EMFILE.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (s *Server) reject(nc net.Conn, why string) {
	s.opts.Metrics.ConnRejected(s.opts.Transport)
	s.opts.Logger.Warn("connection refused", "transport", s.opts.Transport.String(), "remote", nc.RemoteAddr().String(), "reason", why)
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(s.opts.Reject) // best effort: the connection is refused either way
	nc.Close()
}

// remoteIP is the source address of a connection without its port.
func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

func (s *Server) start(nc net.Conn) {
	now := time.Now()
	c := &Conn{Conn: nc, srv: s, ip: remoteIP(nc), accepted: now}
	c.idleSince.Store(now.UnixNano())
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if max := s.opts.MaxConnsPerIP; max > 0 && s.perIP[c.ip] >= max {
		s.mu.Unlock()
		s.reject(nc, fmt.Sprintf("%d connections from %s (the per-address limit)", max, c.ip))
		return
	}
	if max := s.opts.MaxConns; max > 0 && len(s.conns) >= max {
		victim := s.longestIdleLocked()
		if victim == nil {
			s.mu.Unlock()
			s.reject(nc, fmt.Sprintf("%d connections, every one busy (the limit)", max))
			return
		}
		s.removeLocked(victim)
		victim.forceClose() // its handler's read fails and it returns
		s.opts.Metrics.ConnEvicted(s.opts.Transport)
		s.opts.Logger.Info("connection limit reached: closed the connection idle the longest",
			"transport", s.opts.Transport.String(), "evicted", victim.RemoteAddr().String(),
			"idle", now.Sub(time.Unix(0, victim.idleSince.Load())).Round(time.Millisecond).String(), "max_conns", max)
	}
	s.conns[c] = struct{}{}
	s.perIP[c.ip]++
	s.wg.Add(1)
	s.mu.Unlock()
	s.opts.Metrics.ConnOpened(s.opts.Transport)

	go func() {
		defer func() {
			if !c.detached {
				s.finish(c)
			}
		}()
		defer func() {
			if p := recover(); p != nil {
				s.opts.Logger.Error("connection handler panicked; connection closed",
					"transport", s.opts.Transport.String(), "remote", nc.RemoteAddr().String(), "panic", fmt.Sprint(p))
			}
		}()
		s.handler(c)
	}()
}

// longestIdleLocked is the connection waiting longest for its next request
// (a partial request counts as waiting), or nil when every one is busy.
func (s *Server) longestIdleLocked() *Conn {
	var victim *Conn
	oldest := int64(0)
	for c := range s.conns {
		if since := c.idleSince.Load(); since != 0 && (victim == nil || since < oldest) {
			victim, oldest = c, since
		}
	}
	return victim
}

func (s *Server) removeLocked(c *Conn) {
	if _, ok := s.conns[c]; !ok {
		return
	}
	delete(s.conns, c)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
}

func (s *Server) finish(c *Conn) {
	c.Close()
	s.mu.Lock()
	s.removeLocked(c)
	s.mu.Unlock()
	s.opts.Metrics.ConnClosed(s.opts.Transport)
	s.wg.Done()
}

func (s *Server) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// Shutdown stops accepting, lets every connection finish the request it is
// serving, and waits for them until ctx is done; then it closes what is
// left and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.drain()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.forceClose()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

// Conn is a served connection.
type Conn struct {
	net.Conn
	srv *Server

	ip       string
	accepted time.Time
	// idleSince is when the connection began waiting for its next request
	// (unix nanos), 0 while a request is being served.
	idleSince atomic.Int64
	served    bool // a first request was read (owned by the handler)
	// idleExempt: no idle timeout while set (owned by the handler).
	idleExempt bool

	// The deadlines are re-armed lazily: a timer update per request is a
	// measurable share of a small request's cost, so a deadline is moved
	// only once an eighth of its timeout has passed since it was set (a
	// connection is closed after 7/8 to 8/8 of the timeout).
	readArmed  int64 // unix nanos the read deadline was last set; 0: not set for the idle timeout
	writeArmed int64

	mu       sync.Mutex // orders drain against re-arming the read deadline
	draining atomic.Bool

	// A detached connection is served by an event loop instead of its
	// handler's goroutine: hooks close and drain it there, and the loop
	// calls Finish once it has closed it.
	detached bool
	hooks    atomic.Pointer[Hooks]
	finished atomic.Bool
}

// Hooks are how the Server reaches a detached connection: Close must make
// it close soon (from any goroutine); Drain tells it the server is draining.
type Hooks struct {
	Close func()
	Drain func()
}

// Detach hands the connection to an event loop: when the handler returns,
// the Server neither closes nor forgets the connection; the loop closes it
// and calls Finish. hooks take over closing (eviction, a Shutdown past its
// deadline) and waking the connection when the server drains. Call it from
// the handler, before the handler returns.
func (c *Conn) Detach(hooks Hooks) {
	c.detached = true
	c.hooks.Store(&hooks)
	if c.draining.Load() && hooks.Drain != nil {
		hooks.Drain() // drain began before the hooks were in place
	}
}

// Finish releases a detached connection's place (its limits, metrics and
// Shutdown's wait) once the event loop has closed it. Later calls do nothing.
func (c *Conn) Finish() {
	if c.finished.CompareAndSwap(false, true) {
		c.srv.finish(c)
	}
}

// forceClose closes the connection now, or has its event loop close it.
func (c *Conn) forceClose() {
	if h := c.hooks.Load(); h != nil {
		h.Close()
		return
	}
	c.Conn.Close()
}

// MarkIdle records that the connection waits for its next request from now
// on (the connection limit may close it): the event loop's AwaitRequest.
func (c *Conn) MarkIdle(now time.Time) { c.idleSince.Store(now.UnixNano()) }

// IdleSince is when the connection began waiting for its next request
// (unix nanos), 0 while a request is being served.
func (c *Conn) IdleSince() int64 { return c.idleSince.Load() }

// Served reports whether a whole first request was read.
func (c *Conn) Served() bool { return c.served }

// Accepted is when the connection was accepted.
func (c *Conn) Accepted() time.Time { return c.accepted }

// Options are the server's options (the limits and timeouts an event loop
// enforces itself).
func (c *Conn) Options() *Options { return &c.srv.opts }

// Draining reports whether the server is shutting down: the handler must
// not start another request.
func (c *Conn) Draining() bool { return c.draining.Load() }

// ExemptFromIdleTimeout lifts the idle timeout (on) or puts it back for
// the next AwaitRequest: a pub/sub subscriber waits for messages, not
// requests.
func (c *Conn) ExemptFromIdleTimeout(on bool) { c.idleExempt = on }

// AwaitRequest arms the idle deadline before a read that waits for the next
// request. It returns false when the server is draining.
func (c *Conn) AwaitRequest() bool {
	if c.draining.Load() {
		return false
	}
	now := time.Now()
	nanos := now.UnixNano()
	c.idleSince.Store(nanos)
	opts := &c.srv.opts
	if !c.served && opts.HandshakeTimeout > 0 {
		return c.armRead(c.accepted.Add(opts.HandshakeTimeout), 0, now)
	}
	if opts.IdleTimeout <= 0 || c.idleExempt {
		if c.readArmed != -1 {
			return c.armRead(time.Time{}, -1, now)
		}
		return true
	}
	if c.readArmed > 0 && nanos-c.readArmed < int64(opts.IdleTimeout/8) {
		return true // the deadline set a moment ago still holds
	}
	return c.armRead(now.Add(opts.IdleTimeout), nanos, now)
}

// armRead sets the read deadline unless the server began draining (whose
// deadline in the past must not be overwritten).
func (c *Conn) armRead(deadline time.Time, armed int64, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining.Load() {
		return false
	}
	if d := c.srv.opts.IdleTimeout; d > 0 && !deadline.IsZero() && armed == 0 {
		// The handshake bound: never later than the idle timeout either.
		deadline = minTime(deadline, now.Add(d))
	}
	c.Conn.SetReadDeadline(deadline)
	c.readArmed = armed
	return true
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// RequestRead marks the connection busy: a whole request was read and is
// being served, so the connection limit does not close it.
func (c *Conn) RequestRead() {
	if !c.served {
		c.served = true
		c.readArmed = 0 // the handshake deadline gives way to the idle timeout
	}
	c.idleSince.Store(0)
}

// ArmWrite sets the write deadline before a flush.
func (c *Conn) ArmWrite() {
	d := c.srv.opts.WriteTimeout
	if d <= 0 {
		return
	}
	now := time.Now()
	if nanos := now.UnixNano(); c.writeArmed == 0 || nanos-c.writeArmed >= int64(d/8) {
		c.Conn.SetWriteDeadline(now.Add(d))
		c.writeArmed = nanos
	}
}

// drain marks the connection and wakes a read blocked waiting for a request.
func (c *Conn) drain() {
	c.mu.Lock()
	c.draining.Store(true)
	h := c.hooks.Load()
	if h == nil {
		c.Conn.SetReadDeadline(time.Now())
	}
	c.mu.Unlock()
	if h != nil && h.Drain != nil {
		h.Drain()
	}
}

// Logger is the server's logger.
func (c *Conn) Logger() *slog.Logger { return c.srv.opts.Logger }
