package gateway

// A client connection is closed as nginx's lingering_close does: the
// gateway stops sending, then reads and discards what the client still
// sends for a moment before it closes. Closed at once with unread bytes
// (requests pipelined behind a refused head, say), the kernel would reset
// the connection and the client would lose the answers already sent.
// As nginx's lingering_close on, it lingers only when more may come: after
// a last request the client itself marked "Connection: close" and that was
// read whole, with no byte of the client's waiting unread in the kernel,
// the connection is closed at once (RFC 9112 9.6: the client sends nothing
// after it; one that pipelines anyway still finds its bytes drained when
// they arrived before the close). The drain costs a shutdown, a goroutine, a
// deadline and a read per connection: 5-8 % of the gateway's CPU with a new
// connection per request.

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// lingerTime and lingerBytes bound what a closing connection still
	// reads (nginx: lingering_time 30s, lingering_timeout 5s).
	lingerTime  = 2 * time.Second
	lingerBytes = 1 << 20
)

// lingerListener accepts connections that linger when closed.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		return &lingerConn{TCPConn: tc}, nil
	}
	return c, nil
}

type lingerConn struct {
	*net.TCPConn
	once sync.Once
	// skip is set when nothing more can come from the client.
	skip atomic.Bool
}

type lingerKey struct{}

// withLingerConn is the client server's ConnContext: it lets a handler
// reach the connection it serves (noLinger).
func withLingerConn(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*lingerConn); ok {
		return context.WithValue(ctx, lingerKey{}, lc)
	}
	return ctx
}

// noLinger marks the connection of a request's context to be closed at
// once.
func noLinger(ctx context.Context) {
	if lc, ok := ctx.Value(lingerKey{}).(*lingerConn); ok {
		lc.skip.Store(true)
	}
}

// Close half-closes the connection and lets a goroutine read out what the
// client still sends, then close it; or, marked by noLinger, closes it.
func (c *lingerConn) Close() error {
	var err error
	c.once.Do(func() {
		if c.skip.Load() && !unreadPending(c.TCPConn) {
			err = c.TCPConn.Close()
			return
		}
		if err = c.TCPConn.CloseWrite(); err != nil {
			err = c.TCPConn.Close()
			return
		}
		go func() {
			// Best effort: the lingering drain only spares the client a reset.
			_ = c.TCPConn.SetReadDeadline(time.Now().Add(lingerTime))
			_, _ = io.CopyN(io.Discard, c.TCPConn, lingerBytes)
			_ = c.TCPConn.Close()
		}()
	})
	return err
}
