package server

import (
	"net"
	"sync"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// limitListener bounds the HTTP listener's open connections: over the limit
// a connection gets a 503 and is closed at once, rather than queueing
// unseen in the accept backlog.
type limitListener struct {
	net.Listener
	sem     chan struct{}
	metrics *metrics.Metrics
}

func newLimitListener(ln net.Listener, n int, m *metrics.Metrics) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), metrics: m}
}

const tooManyConnsReply = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 63\r\n\r\n" +
	`{"error":"too many connections","code":"too_many_connections"}` + "\n"

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			l.metrics.ConnOpened(metrics.HTTP)
			return &limitConn{Conn: c, release: func() { <-l.sem; l.metrics.ConnClosed(metrics.HTTP) }}, nil
		default:
			l.metrics.ConnRejected(metrics.HTTP)
			go func() {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = c.Write([]byte(tooManyConnsReply)) // best effort: refused either way
				c.Close()
			}()
		}
	}
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
