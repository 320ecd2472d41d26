// Package connserver runs a request/reply protocol over stream connections:
// the accept loop, the connection limit, idle deadlines and graceful
// shutdown, shared by the TCP JSON and RESP servers.
//
// Invariant: once Shutdown has begun, no connection starts reading a new
// request — a request already read is answered, then the connection closes —
// so every reply a client received was produced before the engine closes.
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
	// MaxConns bounds open connections; a connection over the limit gets
	// Reject's message and is closed.
	MaxConns int
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
	draining  bool
	wg        sync.WaitGroup
	count     atomic.Int64
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("server closed")

// New returns a Server running handler on every connection.
func New(opts Options, handler Handler) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Server{opts: opts, handler: handler, listeners: map[net.Listener]struct{}{}, conns: map[*Conn]struct{}{}}
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

func (s *Server) start(nc net.Conn) {
	if s.opts.MaxConns > 0 && s.count.Load() >= int64(s.opts.MaxConns) {
		s.opts.Metrics.ConnRejected(s.opts.Transport)
		s.opts.Logger.Warn("connection limit reached; closing new connection",
			"transport", s.opts.Transport.String(), "remote", nc.RemoteAddr().String(), "max_conns", s.opts.MaxConns)
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write(s.opts.Reject) // best effort: the connection is refused either way
		nc.Close()
		return
	}
	c := &Conn{Conn: nc, srv: s}
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.count.Add(1)
	s.mu.Unlock()
	s.opts.Metrics.ConnOpened(s.opts.Transport)

	go func() {
		defer s.finish(c)
		defer func() {
			if p := recover(); p != nil {
				s.opts.Logger.Error("connection handler panicked; connection closed",
					"transport", s.opts.Transport.String(), "remote", nc.RemoteAddr().String(), "panic", fmt.Sprint(p))
			}
		}()
		s.handler(c)
	}()
}

func (s *Server) finish(c *Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.count.Add(-1)
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
			c.Close()
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

	mu       sync.Mutex
	draining bool
}

// Draining reports whether the server is shutting down: the handler must
// not start another request.
func (c *Conn) Draining() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.draining
}

// AwaitRequest arms the idle deadline before a read that waits for the next
// request. It returns false when the server is draining.
func (c *Conn) AwaitRequest() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		return false
	}
	if d := c.srv.opts.IdleTimeout; d > 0 {
		c.Conn.SetReadDeadline(time.Now().Add(d))
	} else {
		c.Conn.SetReadDeadline(time.Time{})
	}
	return true
}

// ArmWrite sets the write deadline before a flush.
func (c *Conn) ArmWrite() {
	if d := c.srv.opts.WriteTimeout; d > 0 {
		c.Conn.SetWriteDeadline(time.Now().Add(d))
	}
}

// drain marks the connection and wakes a read blocked waiting for a request.
func (c *Conn) drain() {
	c.mu.Lock()
	c.draining = true
	c.Conn.SetReadDeadline(time.Now())
	c.mu.Unlock()
}

// Logger is the server's logger.
func (c *Conn) Logger() *slog.Logger { return c.srv.opts.Logger }
