package gateway

// The idle timeouts bound the wait of each read and each write, never a
// whole request: a deadline is set before every read or write (moved on
// only when it would move by more than a sixteenth of the timeout), so a
// transfer that keeps moving lasts as long as it needs, and one that
// stalls for the timeout is cut (nginx's proxy_read_timeout, send_timeout).

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// deadline is a moving deadline: next returns the time to set, or the
// zero time when the one already set is recent enough. The transport
// reads and writes a connection from two goroutines, hence the atomic.
type deadline struct {
	d   time.Duration
	set atomic.Int64 // the deadline last set, in Unix nanoseconds
}

func (dl *deadline) next() time.Time {
	t := time.Now().Add(dl.d)
	if time.Duration(t.UnixNano()-dl.set.Load()) < dl.d/16 {
		return time.Time{}
	}
	dl.set.Store(t.UnixNano())
	return t
}

// idleConn is an upstream connection with the idle timeouts on its reads
// and writes. An idle pooled connection is read too (the transport
// watches it for a close): it is dropped after the read idle timeout.
type idleConn struct {
	net.Conn
	read, write deadline
}

func newIdleConn(c net.Conn, read, write time.Duration) *idleConn {
	ic := &idleConn{Conn: c}
	ic.read.d, ic.write.d = read, write
	return ic
}

func (c *idleConn) Read(p []byte) (int, error) {
	if t := c.read.next(); !t.IsZero() {
		c.Conn.SetReadDeadline(t)
	}
	return c.Conn.Read(p)
}

// Write also moves the read deadline on: the transport reads all along,
// and an upstream still being sent a slow upload is not late to answer.
func (c *idleConn) Write(p []byte) (int, error) {
	if t := c.write.next(); !t.IsZero() {
		c.Conn.SetWriteDeadline(t)
	}
	n, err := c.Conn.Write(p)
	if t := c.read.next(); !t.IsZero() {
		c.Conn.SetReadDeadline(t)
	}
	return n, err
}

// idleWriter is a client's ResponseWriter with the write idle timeout on
// every write and flush. http.ResponseController finds the rest (Hijack,
// EnableFullDuplex) through Unwrap.
type idleWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	write deadline
	// ctl is what rc points to: in the same allocation.
	ctl http.ResponseController
	// gone is set when the request ends because its client left.
	gone bool
}

func newIdleWriter(w http.ResponseWriter, d time.Duration) *idleWriter {
	iw := &idleWriter{ResponseWriter: w, ctl: *http.NewResponseController(w)}
	iw.rc = &iw.ctl
	iw.write.d = d
	// The head, and a 100 Continue sent when the body is first read, are
	// written under this one.
	iw.extend()
	return iw
}

func (w *idleWriter) extend() {
	if t := w.write.next(); !t.IsZero() {
		_ = w.rc.SetWriteDeadline(t) // a writer without deadlines (a test's) has none to move
	}
}

func (w *idleWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

// FlushError flushes under a fresh deadline (ReverseProxy flushes streams).
func (w *idleWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

// Unwrap is the underlying writer, for http.ResponseController.
func (w *idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// done leaves the deadline fresh for what net/http still writes when the
// handler returns (the buffered end of the answer): within a sixteenth of
// the timeout, like every other write, so a handler that answered at once
// (a denial) moves no deadline twice.
func (w *idleWriter) done() { w.extend() }

// idleBody is a client's request body with the read idle timeout on
// every read. Once the body has ended whole the deadline is cleared:
// net/http then reads behind the handler to learn of the client leaving,
// and that read must not time out while a long answer streams.
type idleBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	read  deadline
	ended bool
	// eof is set once the whole body was read without error.
	eof atomic.Bool
	// failed is how the body's reading failed, for the answer to the
	// client (the transport reads the body on a goroutine of its own).
	failed atomic.Pointer[error]
	// reading is set while a read waits: net/http cancels the request's
	// context when that read times out, which the error handler may see
	// before the read returns its error.
	reading atomic.Bool
}

// bodyFailure is the status a request whose body failed deserves: 400 for
// a body that breaks its framing (a malformed chunk), 408 for a client too
// slow to send it, 0 when the client went away (nothing to answer) or the
// body did not fail.
func (b *idleBody) bodyFailure() (status int, failed bool) {
	p := b.failed.Load()
	if p == nil {
		if b.reading.Load() && time.Now().UnixNano() >= b.read.set.Load() {
			return http.StatusRequestTimeout, true // the read waiting is past its deadline
		}
		return 0, false
	}
	err := *p
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return http.StatusRequestTimeout, true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne), errors.Is(err, net.ErrClosed),
		errors.Is(err, http.ErrBodyReadAfterClose):
		return 0, true
	}
	// net/http's chunked reader's own errors (a size that is not hex, a
	// bare LF, a chunk longer than its size) are not exported.
	return http.StatusBadRequest, true
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.ended {
		return b.ReadCloser.Read(p)
	}
	if t := b.read.next(); !t.IsZero() {
		_ = b.rc.SetReadDeadline(t)
	}
	b.reading.Store(true)
	n, err := b.ReadCloser.Read(p)
	b.reading.Store(false)
	switch {
	case err == io.EOF:
		b.ended = true
		b.eof.Store(true)
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil:
		// The deadline stays: net/http drains what is left of a failed
		// body when it is closed, which must not wait for ever.
		b.failed.Store(&err)
		b.ended = true
	}
	return n, err
}
