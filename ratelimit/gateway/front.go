package gateway

// front is the gateway's HTTP/1.1 server: what a flood of denied requests
// costs is mostly the server's own work, so it does the least it can on top
// of the standard library's parser.
//
// On Linux a client connection starts in an event loop (loop_linux.go),
// which answers denials itself and hands the connection here, with what it
// read and had not sent, when it needs more (serveResumed).
//
// Invariants:
//   - Requests are parsed by http.ReadRequest from one bufio.Reader per
//     connection, and answered in order: a connection is one goroutine, and
//     pipelined requests are answered one after the other, their answers
//     batched into one write while more requests are already buffered.
//   - The request head is checked before it is believed: a head with a bare
//     LF, an obs-fold line, both Content-Length and Transfer-Encoding, or a
//     field name that is not a token is answered 400 and the connection
//     closed (the standard parser accepts them, so a peer parsing them
//     otherwise could be smuggled a request; it refuses two different
//     Content-Lengths and two Hosts itself); a head over maxHeaderBytes is
//     answered 431; a head not complete within ReadHeaderTimeout closes the
//     connection (slowloris).
//   - No goroutine reads behind a handler's back, except while a handler
//     waits on CloseNotify (httputil.ReverseProxy does, to cancel the
//     upstream request of a client that left): that read is stopped, and
//     what it read kept, before the next request or a Hijack.
//   - A request's body not read by its handler is drained (at most
//     maxDrainBytes) or the connection closed, so the next request starts
//     where this one ended; after 100-continue was not sent, it is closed.
//   - Status line and fields go straight into the connection's
//     bufio.Writer; a body of unknown length is chunked (HTTP/1.1), or ends
//     the connection (HTTP/1.0); HEAD and 1xx/204/304 carry none.
//   - Requests carry no context (context.Background, never cancelled,
//     nothing allocated per request; the gateway finds a request's
//     connection by its remote address, connOf): a handler learns of a
//     client gone through CloseNotify, which httputil.ReverseProxy asks
//     for exactly when the context cannot tell it.
//   - Shutdown closes the listeners and idle connections (and those
//     still reading a head) at once, lets
//     requests in flight finish (then closes their connections), and
//     reports an error only if requests were still in flight when ctx ended.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/devkit-go/devkit/ratelimit/middleware"
)

const (
	// maxDrainBytes is how much of an unread request body is read to keep
	// the connection (net/http's figure); a longer body closes it.
	maxDrainBytes = 256 << 10
	// bufferBeforeChunking is how much of a body of unknown length is
	// held, hoping the handler ends and the length becomes known.
	bufferBeforeChunking = 2048
	// deadlineSlack lets a write deadline stand when it would move by less:
	// a deadline is a timer operation, and a flood is answered here.
	deadlineSlack = time.Second
)

// errFrontClosed is what Serve returns after Shutdown or Close.
var errFrontClosed = http.ErrServerClosed

// aLongTimeAgo is a deadline that has passed: it wakes a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

type front struct {
	handler http.Handler
	// resume is what a request an event loop limited goes on with (the
	// handler past the limit); loops are the event loops, nil when off.
	resume                                                    http.Handler
	loops                                                     *eventLoops
	readHeaderTimeout, readTimeout, writeTimeout, idleTimeout time.Duration
	maxHeaderBytes                                            int
	log                                                       *slog.Logger

	closing atomic.Bool

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*frontConn]struct{}
	byRemote  sync.Map // remote address → *frontConn, for connOf
	date      atomic.Pointer[dateValue]
}

type dateValue struct {
	sec   int64
	field []byte // "Date: …\r\n"
}

func newFront(h http.Handler, cfg Config, log *slog.Logger) *front {
	return &front{handler: h, readHeaderTimeout: cfg.ReadHeaderTimeout, readTimeout: cfg.ReadTimeout,
		writeTimeout: cfg.WriteTimeout, idleTimeout: cfg.IdleTimeout, maxHeaderBytes: maxHeaderBytes, log: log,
		listeners: map[net.Listener]struct{}{}, conns: map[*frontConn]struct{}{}}
}

// Serve accepts connections on ln until Shutdown or Close; it then
// returns http.ErrServerClosed.
func (f *front) Serve(ln net.Listener) error {
	f.mu.Lock()
	if f.closing.Load() {
		f.mu.Unlock()
		ln.Close()
		return errFrontClosed
	}
	f.listeners[ln] = struct{}{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.listeners, ln)
		f.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if f.closing.Load() {
				return errFrontClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors or another transient failure: wait, do not spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			f.log.Warn("gateway: accept failed; retrying", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if f.loops != nil && f.loops.adopt(nc) {
			continue
		}
		c := f.newConn(nc)
		if c == nil {
			nc.Close()
			continue
		}
		go c.serve()
	}
}

func (f *front) newConn(nc net.Conn) *frontConn {
	c := f.initConn(nc, nc.RemoteAddr().String())
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing.Load() {
		return nil
	}
	f.conns[c] = struct{}{}
	f.byRemote.Store(c.remoteAddr, c)
	return c
}

// initConn is a connection on nc, not yet registered.
func (f *front) initConn(nc net.Conn, remoteAddr string) *frontConn {
	c := &frontConn{f: f, nc: nc, remoteAddr: remoteAddr}
	if ap, err := netip.ParseAddrPort(c.remoteAddr); err == nil {
		c.peer = ap.Addr().Unmap().WithZone("")
	}
	c.cr.c, c.cr.limit = c, -1
	c.br = bufio.NewReaderSize(&c.cr, 4096)
	c.bw = bufio.NewWriterSize(checkedWriter{c}, 4096)
	return c
}

func (f *front) forget(c *frontConn) {
	f.byRemote.CompareAndDelete(c.remoteAddr, c)
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// Shutdown stops accepting, closes idle connections, and waits for the
// others to finish their request; when ctx ends first it closes every
// connection and returns an error if requests were still in flight.
func (f *front) Shutdown(ctx context.Context) error {
	f.closing.Store(true)
	f.mu.Lock()
	for ln := range f.listeners {
		ln.Close()
	}
	f.mu.Unlock()
	if f.loops != nil {
		f.loops.drain()
		defer f.loops.stop()
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		// The loops' count first: a connection they hand over is in
		// f.conns before it leaves their count.
		n := 0
		if f.loops != nil {
			n = f.loops.count()
		}
		f.mu.Lock()
		n += len(f.conns)
		for c := range f.conns {
			// A connection waiting for a request, or for the rest of a
			// head, has no request in flight: it is claimed (the claim
			// and the connection's own start of a request exclude each
			// other) and its read woken, again on every tick (it may have
			// set a deadline of its own just before the claim).
			if c.state.CompareAndSwap(connIdle, connCut) || c.state.CompareAndSwap(connHead, connCut) ||
				c.state.Load() == connCut {
				c.nc.SetReadDeadline(aLongTimeAgo)
			}
		}
		f.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			inFlight := f.inFlight()
			f.Close()
			if inFlight > 0 {
				return fmt.Errorf("%d requests in flight: %w", inFlight, ctx.Err())
			}
			return nil
		case <-tick.C:
		}
	}
}

// inFlight counts connections with a request in progress (its head
// read, its answer not yet complete).
func (f *front) inFlight() int {
	n := 0
	if f.loops != nil {
		n = f.loops.inFlight()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		if c.state.Load() == connActive {
			n++
		}
	}
	return n
}

// Close closes the listeners and every connection at once.
func (f *front) Close() {
	f.closing.Store(true)
	f.mu.Lock()
	defer f.mu.Unlock()
	for ln := range f.listeners {
		ln.Close()
	}
	for c := range f.conns {
		c.nc.Close()
	}
	if f.loops != nil {
		f.loops.closeAll()
	}
}

// dateField is the Date field at now, rendered once a second.
func (f *front) dateField(now time.Time) *dateValue {
	sec := now.Unix()
	if d := f.date.Load(); d != nil && d.sec == sec {
		return d
	}
	v := now.UTC().Format(http.TimeFormat)
	d := &dateValue{sec: sec, field: []byte("Date: " + v + "\r\n")}
	f.date.Store(d)
	return d
}

// connOf is the connection of f that r is being served on, nil when r did
// not come through f (a handler called directly). Requests carry no
// context of their own (see the invariants): the connection is found by
// its remote address, which is unique among f's open connections, and
// must be serving r itself.
func (f *front) connOf(r *http.Request) *frontConn {
	v, ok := f.byRemote.Load(r.RemoteAddr)
	if !ok {
		return nil
	}
	if c := v.(*frontConn); c.res.req == r {
		return c
	}
	return nil
}

const (
	connIdle int32 = iota
	connActive
	// connHead: reading a request head; no request in flight yet.
	connHead
	// connCut: claimed by Shutdown while idle or reading a head; it
	// serves no more.
	connCut
	connHijacked
)

type frontConn struct {
	f          *front
	nc         net.Conn
	remoteAddr string
	peer       netip.Addr // the remote address, parsed once
	cr         connReader
	br         *bufio.Reader
	bw         *bufio.Writer
	state      atomic.Int32
	res        response // reused: one request at a time
	// writeDeadline is the write deadline last set.
	writeDeadline time.Time
	// readDeadline is the read deadline last set; readIdle says it is
	// the wait for a next request's.
	readDeadline time.Time
	readIdle     bool
	// now is when the request in progress began.
	now time.Time
	// broken: a write failed; nothing more goes out.
	broken bool
	num    [20]byte
	// scratch is per-request state of the gateway's handler (the verified
	// client chain), valid while that request is served.
	scratch requestScratch

	// wmu orders a 100 Continue, written from the goroutine reading the
	// body, with the final answer's head.
	wmu  sync.Mutex
	bgMu sync.Mutex
	// body is the request body in progress, nil without one; written
	// under bgMu (a body's end, seen from another goroutine, checks it).
	body      *requestBody
	bgRunning bool
	bgDone    chan struct{}
	bgGone    chan bool // CloseNotify's channel, for the request in progress
	// clientGone: a background read saw the connection end (written by
	// it, read after stopBackgroundRead).
	clientGone bool
	// headStart, when set, is when the head now being read began in an
	// event loop (the header timeout runs from then).
	headStart time.Time
	// inLoop: an event loop serves the connection; forward then marks
	// handoff instead of forwarding (the loop hands the request over).
	inLoop, handoff bool
}

// connReader is the bufio.Reader's source: it bounds the bytes of a request
// head, checks the head as it passes (headScan), and returns first the byte
// a background read got.
type connReader struct {
	c       *frontConn
	limit   int64 // bytes left before the head is too large; <0: unlimited
	hitMax  bool
	scan    *headScan // nil when not reading a head
	hasByte bool
	byte    byte
	err     error // a background read's error, returned once
	// pending are bytes an event loop read and handed over with the
	// connection: read before the socket.
	pending []byte
}

func (r *connReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.limit >= 0 {
		if r.limit == 0 {
			r.hitMax = true
			return 0, io.EOF
		}
		if int64(len(p)) > r.limit {
			p = p[:r.limit]
		}
	}
	var n int
	var err error
	if r.hasByte {
		p[0], r.hasByte, n = r.byte, false, 1
	} else if len(r.pending) > 0 {
		n = copy(p, r.pending)
		if r.pending = r.pending[n:]; len(r.pending) == 0 {
			r.pending = nil
		}
	} else if r.err != nil {
		err, r.err = r.err, nil
		return 0, err
	} else {
		n, err = r.c.nc.Read(p)
	}
	if r.limit >= 0 {
		r.limit -= int64(n)
	}
	if r.scan != nil {
		r.scan.feed(p[:n])
	}
	return n, err
}

// checkedWriter marks the connection broken on a failed write.
type checkedWriter struct{ c *frontConn }

func (w checkedWriter) Write(p []byte) (int, error) {
	n, err := w.c.nc.Write(p)
	if err != nil {
		w.c.broken = true
	}
	return n, err
}

// headScan checks a request head byte by byte as it arrives, for what the
// standard parser accepts and a peer might read otherwise.
type headScan struct {
	done, firstLine bool
	prevCR          bool
	lineLen         int
	name            [len("transfer-encoding:")]byte // the line's start, lower case
	bareLF, obsFold bool
	sawCL, sawTE    bool
	// The Host field's value is checked as it passes: ReadRequest drops
	// the field when the target is absolute-form (its host wins), and a
	// peer may route by the field.
	inHost, hostChars, hostSpace, hostBad bool
}

func (s *headScan) reset() { *s = headScan{firstLine: true} }

// feed checks p, the head's next bytes, and returns how many of them are
// the head's: all of p, or up to and including the LF of the blank line
// that ends it.
func (s *headScan) feed(p []byte) int {
	for i := 0; i < len(p) && !s.done; i++ {
		b := p[i]
		if b != '\n' {
			if s.lineLen == 0 && !s.firstLine && (b == ' ' || b == '\t') {
				s.obsFold = true
			}
			if s.lineLen < len(s.name) {
				if 'A' <= b && b <= 'Z' {
					b += 'a' - 'A'
				}
				s.name[s.lineLen] = b
			}
			s.lineLen++
			s.prevCR = p[i] == '\r'
			if s.inHost {
				s.hostByte(p[i])
			} else if s.lineLen == len("host:") && !s.firstLine && string(s.name[:len("host:")]) == "host:" {
				s.inHost = true
			}
			if s.lineLen >= len(s.name) && !s.inHost {
				// Past the field name, only the line's end matters: skip to it.
				j := bytes.IndexByte(p[i+1:], '\n')
				if j < 0 {
					if rest := p[i+1:]; len(rest) > 0 {
						s.lineLen += len(rest)
						s.prevCR = rest[len(rest)-1] == '\r'
					}
					return len(p)
				}
				if j > 0 {
					s.lineLen += j
					s.prevCR = p[i+j] == '\r'
					i += j
				}
			}
			continue
		}
		if !s.prevCR {
			s.bareLF = true
		}
		n := s.lineLen
		if s.prevCR {
			n--
		}
		if n == 0 {
			s.done = true // the blank line ending the head
			return i + 1
		}
		if !s.firstLine {
			const cl, te = "content-length:", "transfer-encoding:"
			s.sawCL = s.sawCL || n >= len(cl) && string(s.name[:len(cl)]) == cl
			s.sawTE = s.sawTE || n >= len(te) && string(s.name[:len(te)]) == te
		}
		s.firstLine, s.lineLen, s.prevCR = false, 0, false
		s.inHost, s.hostChars, s.hostSpace = false, false, false
	}
	return len(p)
}

// hostByte checks a byte of the Host field's value: host bytes, with
// optional whitespace around them (the line's CR is the line's).
func (s *headScan) hostByte(c byte) {
	switch {
	case c == '\r':
	case c == ' ' || c == '\t':
		s.hostSpace = s.hostChars
	case s.hostSpace || !validHostByte(c):
		s.hostBad = true
	default:
		s.hostChars = true
	}
}

// verdict is the status a checked head is refused with, 0 when it passes.
func (s *headScan) verdict() (int, string) {
	switch {
	case s.bareLF:
		return http.StatusBadRequest, "bare LF in request head"
	case s.obsFold:
		return http.StatusBadRequest, "obsolete line folding in request head"
	case s.sawCL && s.sawTE:
		return http.StatusBadRequest, "both Content-Length and Transfer-Encoding"
	case s.hostBad:
		return http.StatusBadRequest, "malformed Host header"
	}
	return 0, ""
}

func (c *frontConn) setState(to int32) { c.state.Store(to) }

// setReadDeadline sets the read deadline, and remembers it is not the
// idle one.
func (c *frontConn) setReadDeadline(t time.Time) {
	c.nc.SetReadDeadline(t)
	c.readDeadline, c.readIdle = t, false
}

func (c *frontConn) serve() {
	defer c.end()
	c.serveRequests()
}

// end closes the connection (unless hijacked) and forgets it.
func (c *frontConn) end() {
	if c.state.Load() != connHijacked {
		c.setState(connIdle)
		c.nc.Close()
	}
	c.f.forget(c)
}

// serveResumed goes on, on a goroutine of its own, with a connection an
// event loop served until now (see loop_linux.go): it writes what the loop
// answered and had not sent yet, serves req when there is one (its limit
// already checked by the loop: it goes to the resume handler, with the
// fields the limit set on the response), then the connection's next
// requests, starting with the bytes the loop read (cr.pending).
func (c *frontConn) serveResumed(unsent []byte, req *http.Request, start time.Time) {
	defer c.end()
	if len(unsent) > 0 {
		c.writeDeadline = time.Now().Add(c.f.writeTimeout)
		c.nc.SetWriteDeadline(c.writeDeadline)
		if _, err := c.nc.Write(unsent); err != nil {
			return
		}
	}
	if req != nil {
		// The loop set connActive before Shutdown could see the connection.
		if !c.serveOne(req, start, true) {
			return
		}
		if c.br.Buffered() == 0 && len(c.cr.pending) == 0 && c.bw.Flush() != nil {
			return
		}
		c.setState(connIdle)
	}
	c.serveRequests()
}

// serveRequests serves requests until the connection ends.
func (c *frontConn) serveRequests() {
	var scan headScan
	for {
		// Wait for a request's first byte under the idle timeout (a
		// deadline set less than deadlineSlack ago stands: setting one is a
		// timer operation, and a flood is answered here).
		if c.br.Buffered() == 0 {
			if c.f.closing.Load() {
				return
			}
			if now := time.Now(); !c.readIdle || c.readDeadline.Sub(now) < c.f.idleTimeout-deadlineSlack {
				c.setReadDeadline(now.Add(c.f.idleTimeout))
				c.readIdle = true
			}
			if _, err := c.br.Peek(1); err != nil {
				return
			}
		}
		if !c.state.CompareAndSwap(connIdle, connHead) {
			c.bw.Flush() // claimed by Shutdown: what was answered goes out
			return
		}
		now := time.Now()
		if !c.headStart.IsZero() {
			// The head began in an event loop: its time runs from then.
			now, c.headStart = c.headStart, time.Time{}
		}
		c.now = now
		c.cr.limit = int64(c.f.maxHeaderBytes) + 4096
		c.cr.hitMax = false
		scan.reset()
		if buffered, _ := c.br.Peek(c.br.Buffered()); len(buffered) > 0 {
			scan.feed(buffered)
		}
		if !scan.done {
			// The head is not all here: it must be within ReadHeaderTimeout
			// (slowloris). A head all buffered reads nothing more.
			c.setReadDeadline(now.Add(c.f.readHeaderTimeout))
			// The answers held back for a batch go out before the wait:
			// the rest of this head may never come.
			if c.bw.Buffered() > 0 && c.bw.Flush() != nil {
				return
			}
		}
		c.cr.scan = &scan
		req, err := http.ReadRequest(c.br)
		c.cr.scan = nil
		c.cr.limit = -1
		if err != nil {
			if c.state.Load() == connCut {
				// Shutdown woke the read: the head is cut, not malformed.
				c.writeError(http.StatusServiceUnavailable, "shutting down")
				return
			}
			c.refuse(err, c.cr.hitMax)
			return
		}
		if status, why := c.check(req, &scan); status != 0 {
			c.writeError(status, why)
			return
		}
		if !c.state.CompareAndSwap(connHead, connActive) {
			// Claimed by Shutdown: not served, and the client told so (it
			// may send it elsewhere: nothing of it was done).
			c.writeError(http.StatusServiceUnavailable, "shutting down")
			return
		}
		if !c.serveOne(req, now, false) {
			return
		}
		if c.br.Buffered() == 0 {
			// Nothing pipelined behind: what was answered goes out now.
			if c.bw.Flush() != nil {
				return
			}
		}
		c.setState(connIdle)
	}
}

// refuse answers a head that did not parse.
func (c *frontConn) refuse(err error, tooLarge bool) {
	// A read error is the connection's (*net.OpError); a parse error may
	// be a net.Error too (*url.Error of a bad target) and is answered.
	var oe *net.OpError
	switch {
	case tooLarge:
		c.writeError(http.StatusRequestHeaderFieldsTooLarge, "request head too large")
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &oe):
		// The client left, or was too slow (slowloris): nothing to say.
	case strings.Contains(err.Error(), "unsupported transfer encoding") || strings.Contains(err.Error(), "too many transfer encodings"):
		c.writeError(http.StatusNotImplemented, "unsupported transfer encoding")
	default:
		c.writeError(http.StatusBadRequest, "malformed request")
	}
}

// check applies the server's rules to a parsed request.
func (c *frontConn) check(req *http.Request, scan *headScan) (int, string) {
	if status, why := scan.verdict(); status != 0 {
		return status, why
	}
	if req.ProtoMajor != 1 {
		return http.StatusHTTPVersionNotSupported, "unsupported protocol version"
	}
	if scan.sawTE && !req.ProtoAtLeast(1, 1) {
		// The parser ignores Transfer-Encoding on HTTP/1.0 and reads no
		// body: what the client sent as one would be the next request
		// (RFC 9112 §6.1: the framing is faulty).
		return http.StatusBadRequest, "Transfer-Encoding in an HTTP/1.0 request"
	}
	if req.RequestURI == "*" && req.Method != http.MethodOptions {
		return http.StatusBadRequest, "request target * is for OPTIONS only"
	}
	for k := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			// "Content-Length : 5" is no Content-Length to the parser, and
			// may be one to a peer.
			return http.StatusBadRequest, "invalid header field name"
		}
	}
	// More than one Host is refused by the parser, which removes the field.
	switch {
	case req.Host == "" && req.ProtoAtLeast(1, 1) && req.Method != http.MethodConnect:
		return http.StatusBadRequest, "missing required Host header"
	case !httpguts.ValidHostHeader(req.Host):
		return http.StatusBadRequest, "malformed Host header"
	}
	if e := req.Header["Expect"]; len(e) > 0 && !(len(e) == 1 && strings.EqualFold(e[0], "100-continue") && req.ProtoAtLeast(1, 1)) {
		return http.StatusExpectationFailed, "unsupported Expect"
	}
	return 0, ""
}

// writeError answers a request the front refuses, and the connection ends.
func (c *frontConn) writeError(status int, why string) {
	body := why + "\n"
	fmt.Fprintf(c.bw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
	c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.bw.Flush()
}

// serveOne runs the handler for req and completes its answer; false means
// the connection ends (or was hijacked). resumed: req was limited by an
// event loop, which prepared c.res; it goes on with the resume handler.
func (c *frontConn) serveOne(req *http.Request, start time.Time, resumed bool) (keep bool) {
	req.RemoteAddr = c.remoteAddr
	w := &c.res
	h := c.f.handler
	if resumed {
		h = c.f.resume
	} else {
		w.reset(c, req)
	}
	if req.Body != http.NoBody && req.Body != nil {
		if req.ContentLength != 0 {
			c.setReadDeadline(start.Add(c.f.readTimeout))
		}
		w.expectContinue = req.Header["Expect"] != nil // only 100-continue passes check
		// A body of its own per request: the upstream transport may still
		// hold the last one (it reads from another goroutine).
		b := &requestBody{src: req.Body, w: w, expect: w.expectContinue}
		req.Body = b
		c.bgMu.Lock()
		c.body = b
		c.bgMu.Unlock()
		if c.bw.Buffered() > 0 && (req.ContentLength < 0 || int64(c.br.Buffered()) < req.ContentLength) {
			// Reading the body may wait on the client, which may wait
			// for the answers held back for a batch: they go out first.
			c.bw.Flush()
		}
	}
	if d := start.Add(c.f.writeTimeout); d.Sub(c.writeDeadline) > deadlineSlack || d.Before(c.writeDeadline) {
		c.nc.SetWriteDeadline(d)
		c.writeDeadline = d
	}
	if !c.runHandler(w, req, h) {
		c.stopBackgroundRead()
		return false
	}
	c.stopBackgroundRead()
	if c.state.Load() == connHijacked {
		return false
	}
	if c.clientGone && !w.wroteHdr {
		// The handler was told the client left (the upstream request was
		// cancelled) and answered nothing: no made-up 200 goes out (a
		// client that only half-closed would take it for the answer).
		return false
	}
	w.finish()
	if c.broken || w.closeAfter {
		c.bw.Flush()
		return false
	}
	if c.body != nil {
		ok := c.body.drain()
		// From here on a late end of this body (seen by another
		// goroutine) leaves the connection alone.
		c.bgMu.Lock()
		c.body = nil
		c.bgMu.Unlock()
		if !ok {
			c.bw.Flush()
			return false
		}
	}
	if c.f.closing.Load() {
		c.bw.Flush()
		return false
	}
	return true
}

// runHandler calls the handler; a panic ends the connection (logged unless
// it is http.ErrAbortHandler, ReverseProxy's way to abort a response).
func (c *frontConn) runHandler(w *response, req *http.Request, h http.Handler) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
			if p != http.ErrAbortHandler { //nolint:errorlint // the sentinel is panicked as is
				buf := make([]byte, 16<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.f.log.Error("gateway: handler panicked", "panic", p, "path", req.URL.Path, "stack", string(buf))
			}
			if c.state.Load() != connHijacked && !w.headerSent {
				w.header = http.Header{}
				w.closeAfter = true
				w.WriteHeader(http.StatusInternalServerError)
				w.finish()
				c.bw.Flush()
			}
		}
	}()
	if req.RequestURI == "*" {
		// OPTIONS * asks about the server, not a resource: answered here
		// (as net/http does), never forwarded as a path.
		serverOptions(w, req)
		return true
	}
	h.ServeHTTP(w, req)
	return true
}

// serverOptions answers OPTIONS *: 200 and no body; a body over 4 KiB is
// not read (the front's drain then closes the connection).
func serverOptions(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Length", "0")
	if req.ContentLength != 0 {
		_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, 4<<10)) // a failed read ends the connection in the drain
	}
}

// CloseNotify support: a read behind the handler that learns of the client
// leaving. It is started on demand (ReverseProxy asks for it) once the
// request body is read, and stopped before anything else reads.

func (c *frontConn) closeNotify() <-chan bool {
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if c.bgGone == nil {
		c.bgGone = make(chan bool, 1)
		if c.body == nil || c.body.eof() {
			c.startBackgroundReadLocked()
		}
	}
	return c.bgGone
}

// bodyDone is called when the request body b reached its end.
func (c *frontConn) bodyDone(b *requestBody) {
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if c.body == b && c.bgGone != nil && !c.bgRunning {
		c.startBackgroundReadLocked()
	}
}

func (c *frontConn) startBackgroundReadLocked() {
	if c.br.Buffered() > 0 || c.cr.hasByte || c.cr.err != nil || len(c.cr.pending) > 0 {
		return // the client already sent more: it is there
	}
	c.bgRunning = true
	c.bgDone = make(chan struct{})
	gone := c.bgGone
	c.setReadDeadline(time.Time{})
	go func() {
		defer close(c.bgDone)
		var b [1]byte
		n, err := c.nc.Read(b[:])
		if n == 1 {
			c.cr.byte, c.cr.hasByte = b[0], true
		}
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			c.cr.err, c.clientGone = err, true
			gone <- true
		}
	}()
}

func (c *frontConn) stopBackgroundRead() {
	c.bgMu.Lock()
	running, done := c.bgRunning, c.bgDone
	c.bgRunning, c.bgGone = false, nil
	c.bgMu.Unlock()
	if !running {
		return
	}
	c.nc.SetReadDeadline(aLongTimeAgo)
	<-done
	c.setReadDeadline(time.Time{})
}

func (c *frontConn) hijack() (net.Conn, *bufio.ReadWriter, error) {
	if c.state.Load() == connHijacked {
		return nil, nil, http.ErrHijacked
	}
	c.stopBackgroundRead()
	if err := c.bw.Flush(); err != nil {
		return nil, nil, err
	}
	c.setState(connHijacked)
	c.nc.SetDeadline(time.Time{})
	// What the background read got, or what is buffered, is the caller's.
	br := c.br
	if c.cr.hasByte {
		br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader([]byte{c.cr.byte}), c.br), 4096)
		c.cr.hasByte = false
	}
	return c.nc, bufio.NewReadWriter(br, bufio.NewWriter(c.nc)), nil
}

// requestBody wraps a request body: Close does not drain it (the front
// does, bounded, after the handler), the first Read sends 100 Continue
// when asked for, and its end starts a waiting CloseNotify read. It may be
// read from another goroutine than the handler's (the upstream
// transport's), even after the handler returned: mu orders those reads
// with the front's own.
type requestBody struct {
	mu     sync.Mutex
	src    io.ReadCloser
	w      *response
	expect bool // 100-continue asked for, not yet sent
	sawEOF bool
	closed bool // by the handler, or by the front once the handler returned
}

func (b *requestBody) Read(p []byte) (int, error) {
	n, ended, err := b.read(p)
	if ended {
		b.w.c.bodyDone(b) // outside mu: bodyDone takes bgMu, which is taken before mu
	}
	return n, err
}

func (b *requestBody) read(p []byte) (n int, ended bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, false, http.ErrBodyReadAfterClose
	}
	if b.sawEOF {
		return 0, false, io.EOF
	}
	if b.expect {
		b.expect = false
		if err := b.w.sendContinue(); err != nil {
			return 0, false, err
		}
	}
	n, err = b.src.Read(p)
	if errors.Is(err, io.EOF) {
		b.sawEOF = true
		return n, true, err
	}
	return n, false, err
}

func (b *requestBody) eof() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sawEOF
}

func (b *requestBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// drain reads what the handler left of the body, after it returned; false
// when the connection cannot go on (too much left, 100-continue never sent,
// a read failed).
func (b *requestBody) drain() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.sawEOF {
		return true
	}
	if b.expect { // the client waits for a 100 Continue that will not come
		return false
	}
	n, err := io.CopyN(io.Discard, b.src, maxDrainBytes+1)
	return errors.Is(err, io.EOF) && n <= maxDrainBytes
}

// response is the front's http.ResponseWriter: the status line and fields
// are rendered into the connection's buffered writer when the first body
// byte, a Flush or the end of the handler needs them.
type response struct {
	c          *frontConn
	req        *http.Request
	header     http.Header
	status     int
	wroteHdr   bool // WriteHeader called (final status)
	headerSent bool // status line and fields are in c.bw
	// sentContinue: a 100 Continue went out (one is enough);
	// expectContinue: the request asked for one.
	sentContinue, expectContinue bool
	done                         bool // the handler returned
	closeAfter                   bool
	head                         bool
	noBody                       bool  // the status or method carries none
	length                       int64 // declared Content-Length, -1 unknown
	written                      int64
	chunked                      bool
	chunkW                       io.WriteCloser
	pending                      []byte // body held before the length is known (its capacity is kept)
}

func (w *response) reset(c *frontConn, req *http.Request) {
	h := w.header
	if h == nil {
		h = make(http.Header, 8)
	} else {
		clear(h)
	}
	*w = response{c: c, req: req, header: h, length: -1, head: req.Method == http.MethodHead,
		closeAfter: req.Close || c.f.closing.Load(), pending: w.pending[:0]}
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.wroteHdr || w.c.state.Load() == connHijacked {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code <= 199 && code != http.StatusSwitchingProtocols { // code >= 100: checked above
		w.writeInformational(code)
		return
	}
	w.wroteHdr, w.status = true, code
	if cl := w.header["Content-Length"]; len(cl) == 1 {
		if n, err := strconv.ParseInt(cl[0], 10, 64); err == nil && n >= 0 {
			w.length = n
		} else {
			delete(w.header, "Content-Length")
		}
	}
	w.noBody = w.head || code == http.StatusNoContent || code == http.StatusNotModified
}

// sendContinue answers 100 Continue, unless the final answer has started.
func (w *response) sendContinue() error {
	c := w.c
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if w.headerSent || w.sentContinue {
		return nil
	}
	w.sentContinue = true
	c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
	return c.bw.Flush()
}

func (w *response) writeInformational(code int) {
	w.c.wmu.Lock()
	defer w.c.wmu.Unlock()
	if w.headerSent || (code == http.StatusContinue && w.sentContinue) || !w.req.ProtoAtLeast(1, 1) {
		return // an HTTP/1.0 client is sent no 1xx (RFC 9110 §15.2)
	}
	w.sentContinue = w.sentContinue || code == http.StatusContinue
	bw := w.c.bw
	bw.WriteString(statusLine(code))
	writeFields(bw, w.header)
	bw.WriteString("\r\n")
	bw.Flush()
}

func (w *response) Write(p []byte) (int, error) {
	if w.c.state.Load() == connHijacked {
		return 0, http.ErrHijacked
	}
	if w.done {
		return 0, errors.New("gateway: write after the handler returned")
	}
	if !w.wroteHdr {
		w.WriteHeader(http.StatusOK)
	}
	if w.noBody {
		if w.head {
			w.written += int64(len(p))
			return len(p), nil // HEAD: counted for Content-Length, not sent
		}
		return 0, http.ErrBodyNotAllowed
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	if !w.headerSent {
		if w.length < 0 && w.written+int64(len(p)) <= bufferBeforeChunking {
			w.pending = append(w.pending, p...)
			w.written += int64(len(p))
			return len(p), nil
		}
		w.sendHeader(false)
	}
	w.written += int64(len(p))
	if w.c.broken {
		return 0, io.ErrClosedPipe
	}
	if w.chunked {
		return w.chunkW.Write(p)
	}
	return w.c.bw.Write(p)
}

// WriteString avoids a copy of string bodies.
func (w *response) WriteString(s string) (int, error) {
	if w.headerSent && !w.chunked && w.length >= 0 && !w.noBody && w.written+int64(len(s)) <= w.length && !w.done {
		w.written += int64(len(s))
		return w.c.bw.WriteString(s)
	}
	return w.Write([]byte(s))
}

// sendHeader renders the status line and fields. final: the handler has
// returned, so a body of unknown length is what was held.
func (w *response) sendHeader(final bool) { w.sendHeaderRaw(final, nil) }

// WriteRaw answers with fields already rendered (middleware.RawWriter):
// the status line, the fields set on Header(), fields, Content-Length and
// body.
func (w *response) WriteRaw(status int, fields, body []byte) error {
	if w.wroteHdr || w.c.state.Load() == connHijacked {
		return errors.New("gateway: WriteRaw after the response started")
	}
	w.wroteHdr, w.status, w.length = true, status, int64(len(body))
	w.noBody = w.head || status == http.StatusNoContent || status == http.StatusNotModified
	delete(w.header, "Content-Length")
	w.sendHeaderRaw(true, fields)
	if w.noBody {
		return nil
	}
	w.written = w.length
	_, err := w.c.bw.Write(body)
	return err
}

func (w *response) sendHeaderRaw(final bool, raw []byte) {
	if w.headerSent {
		return
	}
	w.c.wmu.Lock()
	defer w.c.wmu.Unlock()
	w.headerSent = true
	h := w.header
	req := w.req
	// The front frames the body itself: a Transfer-Encoding the handler set
	// would stand beside the Content-Length or announce chunks never sent
	// (a client would read the body as chunk sizes); a 1xx or 204 answer
	// carries no Content-Length (RFC 9110 §8.6).
	delete(h, "Transfer-Encoding")
	if w.status < 200 || w.status == http.StatusNoContent {
		delete(h, "Content-Length")
	}
	if !w.noBody || w.head {
		switch {
		case w.length >= 0:
		case final && (!w.head || w.written > 0):
			w.length = w.written
			h["Content-Length"] = []string{strconv.FormatInt(w.written, 10)}
		case w.head:
			// HEAD of unknown length: no field.
		case req.ProtoAtLeast(1, 1):
			w.chunked = true
			delete(h, "Content-Length")
			h["Transfer-Encoding"] = chunkedValue
		default:
			w.closeAfter = true // HTTP/1.0: the end of the connection ends the body
		}
	}
	if w.c.f.closing.Load() {
		w.closeAfter = true // stopping: this answer is the connection's last
	}
	if w.expectContinue && !w.sentContinue {
		// The client holds its body back for a 100 that will not come:
		// what it sends next cannot be told from a request.
		w.closeAfter = true
	}
	if w.status == http.StatusSwitchingProtocols {
		w.closeAfter = false
	}
	_, hasDate := h["Date"]
	if cv := h["Connection"]; len(cv) > 0 && httpguts.HeaderValuesContainsToken(cv, "close") {
		w.closeAfter = true
	}
	if w.closeAfter {
		h["Connection"] = closeValue
	} else if !req.ProtoAtLeast(1, 1) && httpguts.HeaderValuesContainsToken(req.Header["Connection"], "keep-alive") {
		h["Connection"] = keepAliveValue
	}
	bw := w.c.bw
	bw.WriteString(statusLine(w.status))
	writeFields(bw, h)
	if raw != nil {
		bw.Write(raw)
		if !w.noBody || w.head {
			bw.WriteString("Content-Length: ")
			bw.Write(strconv.AppendInt(w.c.num[:0], w.length, 10))
			bw.WriteString("\r\n")
		}
	}
	if !hasDate {
		bw.Write(w.c.f.dateField(w.c.now).field)
	}
	bw.WriteString("\r\n")
	if w.chunked {
		w.chunkW = httputil.NewChunkedWriter(bw)
	}
	if len(w.pending) > 0 {
		if w.chunked {
			_, _ = w.chunkW.Write(w.pending) // a failed write marks the connection broken
		} else if !w.head {
			bw.Write(w.pending)
		}
		w.pending = w.pending[:0]
	}
}

var (
	chunkedValue   = []string{"chunked"}
	closeValue     = []string{"close"}
	keepAliveValue = []string{"keep-alive"}
)

// finish completes the answer after the handler returned.
func (w *response) finish() {
	if !w.wroteHdr {
		w.WriteHeader(http.StatusOK)
	}
	w.sendHeader(true)
	w.done = true
	if w.chunked {
		w.chunkW.Close() // the last chunk, "0\r\n"
		writeTrailers(w.c.bw, w.header)
		w.c.bw.WriteString("\r\n")
	}
	if w.length >= 0 && w.written != w.length && !w.noBody {
		// A short body: the client cannot tell where the next answer starts.
		w.closeAfter = true
	}
}

// Flush sends what is buffered, the header included.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush with its error (http.ResponseController).
func (w *response) FlushError() error {
	if w.c.state.Load() == connHijacked {
		return http.ErrHijacked
	}
	if !w.wroteHdr {
		w.WriteHeader(http.StatusOK)
	}
	w.sendHeader(false)
	return w.c.bw.Flush()
}

// Hijack hands the connection over (Upgrade, WebSocket).
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.headerSent {
		return nil, nil, errors.New("gateway: hijack after the response started")
	}
	return w.c.hijack()
}

// CloseNotify reports the client leaving (ReverseProxy cancels the
// upstream request then).
func (w *response) CloseNotify() <-chan bool { return w.c.closeNotify() }

// SetReadDeadline and SetWriteDeadline serve http.ResponseController.
func (w *response) SetReadDeadline(t time.Time) error {
	w.c.readDeadline, w.c.readIdle = t, false
	return w.c.nc.SetReadDeadline(t)
}

// SetWriteDeadline sets the connection's write deadline.
func (w *response) SetWriteDeadline(t time.Time) error {
	w.c.writeDeadline = t
	return w.c.nc.SetWriteDeadline(t)
}

// EnableFullDuplex: this server lets a handler read the body while it
// writes, always.
func (w *response) EnableFullDuplex() error { return nil }

var (
	_ http.Flusher         = (*response)(nil)
	_ http.Hijacker        = (*response)(nil)
	_ http.CloseNotifier   = (*response)(nil) //nolint:staticcheck // ReverseProxy consults it when the context cannot be cancelled
	_ io.StringWriter      = (*response)(nil)
	_ middleware.RawWriter = (*response)(nil)
)

// statusLines are the status lines of the codes with a text, rendered
// once. Read only.
var statusLines = func() (t [600]string) {
	for code := 100; code < len(t); code++ {
		if text := http.StatusText(code); text != "" {
			t[code] = "HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\n"
		}
	}
	return t
}()

func statusLine(code int) string {
	if code >= 0 && code < len(statusLines) && statusLines[code] != "" {
		return statusLines[code]
	}
	return "HTTP/1.1 " + strconv.Itoa(code) + " status code " + strconv.Itoa(code) + "\r\n"
}

// writeFields writes h as header fields, skipping invalid names and the
// trailers' announcements' values, and turning CR or LF in a value into a
// space (no field is ever split by a value).
func writeFields(bw *bufio.Writer, h http.Header) {
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) || strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		writeField(bw, k, vv)
	}
}

// writeField writes a field line "name: value" for each of vv.
func writeField(bw *bufio.Writer, name string, vv []string) {
	for _, v := range vv {
		bw.WriteString(name)
		bw.WriteString(": ")
		writeValue(bw, v)
		bw.WriteString("\r\n")
	}
}

func writeValue(bw *bufio.Writer, v string) {
	if len(v) > 0 && (v[0] <= ' ' || v[len(v)-1] <= ' ') {
		v = strings.TrimSpace(v)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && (c == '\r' || c == '\n' || c == 0) {
			b := []byte(v)
			for j := i; j < len(b); j++ {
				if b[j] == '\r' || b[j] == '\n' || b[j] == 0 {
					b[j] = ' '
				}
			}
			bw.Write(b)
			return
		}
	}
	bw.WriteString(v)
}

// writeTrailers writes the trailer fields of a chunked answer: the names
// announced in the Trailer field, and those set with http.TrailerPrefix.
func writeTrailers(bw *bufio.Writer, h http.Header) {
	for _, announced := range h["Trailer"] {
		for k := range strings.SplitSeq(announced, ",") {
			k = http.CanonicalHeaderKey(strings.TrimSpace(k))
			if !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidTrailerHeader(k) {
				continue
			}
			writeField(bw, k, h[k])
		}
	}
	for k, vv := range h {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok && httpguts.ValidHeaderFieldName(name) && httpguts.ValidTrailerHeader(name) {
			writeField(bw, name, vv)
		}
	}
}

// validHostByte: a byte of a uri-host with an optional port (RFC 3986
// reg-name, IP literal), nothing that could mean something else; the set
// httpguts.ValidHostHeader checks a whole value against.
func validHostByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	default:
		return strings.IndexByte("-._~!$&'()*+,;=:[]%", c) >= 0
	}
}

// maxHeaderBytes bounds a request head (request line and fields).
const maxHeaderBytes = 64 << 10
