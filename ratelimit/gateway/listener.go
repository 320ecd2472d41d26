package gateway

// A client connection is closed as nginx's lingering_close does: the
// gateway stops sending, then reads and discards what the client still
// sends for a moment before it closes. Closed at once with unread bytes
// (requests pipelined behind a refused head, say), the kernel would reset
// the connection and the client would lose the answers already sent.

import (
	"io"
	"net"
	"sync"
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
}

// Close half-closes the connection and lets a goroutine read out what the
// client still sends, then close it.
func (c *lingerConn) Close() error {
	var err error
	c.once.Do(func() {
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
