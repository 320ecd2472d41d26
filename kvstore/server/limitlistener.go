package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// limitListener bounds the HTTP listener's open connections so that slow or
// idle clients cannot lock it out: one source address holds at most perIP
// connections, and at the limit a new connection is admitted by closing the
// connection idle the longest — one that waits for its next request or is
// still sending its headers; a connection whose request is in a handler is
// never closed. Only when every connection is busy is the new one refused
// with a 503, at once, rather than queueing unseen in the accept backlog.
type limitListener struct {
	net.Listener
	max, perIP int
	metrics    *metrics.Metrics
	log        *slog.Logger

	mu    sync.Mutex
	conns map[*limitConn]struct{}
	byIP  map[string]int
}

func newLimitListener(ln net.Listener, max, perIP int, m *metrics.Metrics, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, max: max, perIP: perIP, metrics: m, log: log,
		conns: map[*limitConn]struct{}{}, byIP: map[string]int{}}
}

const tooManyConnsReply = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 63\r\n\r\n" +
	`{"error":"too many connections","code":"too_many_connections"}` + "\n"

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// admit registers c, or refuses it (and returns nil).
func (l *limitListener) admit(c net.Conn) *limitConn {
	now := time.Now()
	lc := &limitConn{Conn: c, l: l, ip: remoteIP(c)}
	lc.idleSince.Store(now.UnixNano())
	l.mu.Lock()
	refuse := ""
	switch {
	case l.perIP > 0 && l.byIP[lc.ip] >= l.perIP:
		refuse = fmt.Sprintf("%d connections from %s (the per-address limit)", l.perIP, lc.ip)
	case len(l.conns) >= l.max:
		victim := l.longestIdleLocked()
		if victim == nil {
			refuse = fmt.Sprintf("%d connections, every one busy (the limit)", l.max)
			break
		}
		l.removeLocked(victim)
		victim.Conn.Close()
		l.metrics.ConnEvicted(metrics.HTTP)
		l.log.Info("connection limit reached: closed the connection idle the longest", "transport", "http",
			"evicted", victim.RemoteAddr().String(), "max_conns", l.max)
	}
	if refuse != "" {
		l.mu.Unlock()
		l.metrics.ConnRejected(metrics.HTTP)
		l.log.Warn("connection refused", "transport", "http", "remote", c.RemoteAddr().String(), "reason", refuse)
		go func() {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte(tooManyConnsReply)) // best effort: refused either way
			c.Close()
		}()
		return nil
	}
	l.conns[lc] = struct{}{}
	l.byIP[lc.ip]++
	l.mu.Unlock()
	l.metrics.ConnOpened(metrics.HTTP)
	return lc
}

func (l *limitListener) longestIdleLocked() *limitConn {
	var victim *limitConn
	oldest := int64(0)
	for c := range l.conns {
		if since := c.idleSince.Load(); since != 0 && (victim == nil || since < oldest) {
			victim, oldest = c, since
		}
	}
	return victim
}

func (l *limitListener) removeLocked(c *limitConn) bool {
	if _, ok := l.conns[c]; !ok {
		return false
	}
	delete(l.conns, c)
	if l.byIP[c.ip]--; l.byIP[c.ip] <= 0 {
		delete(l.byIP, c.ip)
	}
	return true
}

// remoteIP is the source address of a connection without its port.
func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

type limitConn struct {
	net.Conn
	l  *limitListener
	ip string
	// idleSince is when the connection began waiting (unix nanos); 0 while
	// a handler serves one of its requests.
	idleSince atomic.Int64
	once      sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.removeLocked(c)
		c.l.mu.Unlock()
		c.l.metrics.ConnClosed(metrics.HTTP)
	})
	return err
}

type connKey struct{}

// withConn puts the connection in each request's context (http.Server.ConnContext).
func withConn(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	return context.WithValue(ctx, connKey{}, c)
}

// markBusy wraps h so that a connection is busy while a handler serves it.
func markBusy(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lc, ok := r.Context().Value(connKey{}).(*limitConn); ok {
			lc.idleSince.Store(0)
			defer lc.idleSince.Store(time.Now().UnixNano())
		}
		h.ServeHTTP(w, r)
	})
}
