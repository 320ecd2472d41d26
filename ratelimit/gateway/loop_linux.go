package gateway

// The epoll event loops of the client front (Linux; the default,
// Config.GoroutinePerConn turns them off). A flood of denied requests costs
// the goroutine front a read, a write, a read that finds nothing, a park and
// a netpoll wake per request; a loop serves every ready connection of an
// epoll_wait in one pass, reading once and writing once per burst.
//
// Invariants:
//   - A loop answers only the simple, common request itself: a head its
//     scan (headScan, the front's) and parser accept (quickParse, which
//     builds what http.ReadRequest builds, or http.ReadRequest itself) and
//     the front's check passes, HTTP/1.x, no body (no Content-Length > 0, no
//     Transfer-Encoding), no Upgrade or Expect, not OPTIONS * or CONNECT.
//     It runs the front's own handler on the front's own response type
//     (frontConn, response): the same bytes, fields, HEAD rule, Date,
//     Connection handling and counters as the goroutine front.
//   - Everything else is handed over to the goroutine front for the rest
//     of the connection's life, the bytes read and not yet served first
//     (connReader.pending), the answers not yet sent written before
//     anything else: a head the loop is unsure of (the front answers or
//     refuses it exactly as it would have), a head over loopMaxHead still
//     incomplete (the front answers 431 or reads on), and a request the
//     limit let through (forward marks it: the request goes on with the
//     front's resume handler, the limit's fields already on its response,
//     and is not checked twice).
//   - Answers leave in the order requests arrived; a connection's requests
//     are served one at a time (a check that may wait on the store runs on
//     a goroutine of its own, and the connection does nothing until the
//     loop takes the result back).
//   - The header, idle and write timeouts close a connection as the
//     front's deadlines do (checked every tick, an eighth of the shortest);
//     a head begun in the loop and handed over keeps its start time.
//   - Shutdown: no request starts, answers given are written, a connection
//     cut in the middle of a head is told 503 (as the front does), then
//     every connection is closed; handed-over ones are the front's. A stop
//     that races the first connection leaves no loop running (stopping).
//   - No connection has its loop to itself: it reads at most once per pass
//     while it stays readable (loop.again), and the peer's end seen in an
//     edge is read even after a short read (peerDone).
//   - A handoff out of descriptors still happens: each loop holds one in
//     reserve for net.FileConn's duplicate.
//
// One loop per P by default (Config.Loops), as nginx has a worker per
// core: a flood of denials from elsewhere has every core. While loops run
// the runtime has a spare P (spareP) for everything else. EPOLLOUT is
// watched only while a write waits for room. A denial answered here leaves
// its request (quickParse's box) to be reused by the connection's next one.
//
// A loop owns its connections: only its goroutine reads, writes, serves or
// closes them; other goroutines post work under its mutex and wake it with
// an eventfd. While the runtime keeps an idle P the loop blocks in
// epoll_wait itself; otherwise its epoll descriptor is in Go's poller and
// an idle loop parks (direct).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devkit-go/devkit/ratelimit/internal/epollwait"
)

const (
	// loopReadSize is the free space a read asks for at least.
	loopReadSize = 4 << 10
	// loopMaxHead is the longest incomplete head a loop holds: a longer
	// one is the front's (its limit answers 431).
	loopMaxHead = 16 << 10
	// loopFlushAt bounds the answers a connection collects before they
	// are written.
	loopFlushAt = 64 << 10
	// loopPassBytes bounds what a connection has read in one pass of its
	// loop: more waits for the next pass (loop.again), after the other
	// connections' turn, so a client that keeps its socket full does not
	// have the loop to itself.
	loopPassBytes = loopReadSize
)

// eventLoops are a front's loops, started with its first connection.
type eventLoops struct {
	f *front
	// local: the handler's decisions never wait on a store (an in-process
	// one): they run on the loop.
	local bool
	n     int

	once  sync.Once
	err   error
	loops []*loop
	next  atomic.Uint64
	mu    sync.Mutex // stopped
	// stopped: no connection is adopted any more.
	stopped bool
	// live counts the connections the loops serve; checking those whose
	// check runs on a goroutine (a request in flight).
	live, checking atomic.Int64
	wg             sync.WaitGroup
	// spare: the loops started and hold spareP (stop gives it back).
	spare bool
}

// newEventLoops prepares n loops (0: one per P, counted when they start).
func newEventLoops(f *front, local bool, n int) *eventLoops {
	return &eventLoops{f: f, local: local, n: n}
}

// spareP is the P the runtime gets on top of GOMAXPROCS while any
// gateway's loops run: the loops keep one P each (blocked in epoll_wait on
// it when idle, as nginx's workers are), and the goroutines (requests let
// through, checks on a remote store, the goroutine front) keep a P of
// their own while every loop is busy with a flood. Without it the
// goroutines ran only when a loop yielded, and their sockets were polled
// by sysmon every 10 ms: an allowed request under a flood waited 11–18 ms
// at p99 (BenchmarkGateway_AllowedLatencyUnderFlood, commit cb3e704).
var spareP struct {
	sync.Mutex
	users int
	base  int // GOMAXPROCS before the first user raised it
}

// acquireSpareP raises GOMAXPROCS by one for the first of its users and
// returns the Ps there were before: the loops' count by default.
func acquireSpareP() (base int) {
	spareP.Lock()
	defer spareP.Unlock()
	if spareP.users == 0 {
		spareP.base = runtime.GOMAXPROCS(0)
		runtime.GOMAXPROCS(spareP.base + 1)
	}
	spareP.users++
	return spareP.base
}

// releaseSpareP gives the spare P back when its last user stops.
func releaseSpareP() {
	spareP.Lock()
	defer spareP.Unlock()
	if spareP.users--; spareP.users == 0 {
		runtime.GOMAXPROCS(spareP.base)
	}
}

type loop struct {
	ls     *eventLoops
	f      *front
	epfd   int
	wakefd int
	// reserve is a descriptor held for a handoff out of descriptors
	// (net.FileConn needs one for a moment); -1 when none is held.
	reserve int
	conns   map[int]*evConn
	tick    time.Duration

	mu       sync.Mutex
	incoming []*evConn
	finished []*evConn // their check on another goroutine is done
	drainReq bool
	closeReq bool
	quit     bool
	woken    bool
	ended    bool
	tickDue  bool

	draining bool
	// again are the connections a pass left readable (loopPassBytes):
	// served in the next pass, which does not wait for an event.
	again       []*evConn
	timeoutsDue bool
	// hr and br parse one head at a time.
	hr bytes.Reader
	br *bufio.Reader
}

// evConn is a connection served by a loop.
type evConn struct {
	l  *loop
	fd int
	c  *frontConn // the front's connection: its response, scratch, peer
	nc evNetConn
	in []byte // bytes read; in[rpos:] not served yet
	// rpos is where the next head starts; scanned how much of it the scan
	// has seen (scanning: a head is under way, since headSince).
	rpos, scanned int
	scanning      bool
	scan          headScan
	headSince     int64 // unix nanos
	idleSince     int64
	out           []byte // answers not written yet
	wblocked      int64  // unix nanos a write began waiting for room; 0: none

	readable, eof, closing, closed bool
	// peerDone: epoll reported the peer's end (RDHUP, HUP, ERR); again:
	// it is in loop.again.
	peerDone, again bool
	// busy: its check runs on another goroutine, which owns c and out
	// until the loop takes the result (async*) back.
	busy     bool
	asyncReq *http.Request
	// box is the request quickParse fills, reused once a request answered
	// here is done with (a request handed over, or checked on a goroutine,
	// keeps its box).
	box                     *parsedRequest
	asyncStart              time.Time
	asyncHandoff, asyncKeep bool
}

// evNetConn is the front connection's net.Conn while a loop serves it:
// what the response writes is collected in out; nothing else is done.
type evNetConn struct {
	lc         *evConn
	local, rem net.Addr
}

var errLoopRead = errors.New("gateway: read on a connection an event loop serves")

// errLoopsStopped: the front stopped before its first connection started
// the loops; none start any more.
var errLoopsStopped = errors.New("gateway: event loops stopped")

func (n *evNetConn) Read([]byte) (int, error) { return 0, errLoopRead }
func (n *evNetConn) Write(p []byte) (int, error) {
	n.lc.out = append(n.lc.out, p...)
	return len(p), nil
}
func (n *evNetConn) Close() error                     { return nil }
func (n *evNetConn) LocalAddr() net.Addr              { return n.local }
func (n *evNetConn) RemoteAddr() net.Addr             { return n.rem }
func (n *evNetConn) SetDeadline(time.Time) error      { return nil }
func (n *evNetConn) SetReadDeadline(time.Time) error  { return nil }
func (n *evNetConn) SetWriteDeadline(time.Time) error { return nil }

func (ls *eventLoops) start() error {
	ls.once.Do(func() {
		base := acquireSpareP()
		if ls.n == 0 {
			ls.n = base
		}
		for range ls.n {
			l, err := ls.newLoop()
			if err != nil {
				ls.err = err
				for _, l := range ls.loops {
					unix.Close(l.epfd)
					unix.Close(l.wakefd)
					unix.Close(l.reserve)
				}
				ls.loops = nil
				releaseSpareP()
				return
			}
			ls.loops = append(ls.loops, l)
		}
		ls.spare = true
		ls.wg.Add(len(ls.loops))
		for _, l := range ls.loops {
			go l.run()
		}
	})
	return ls.err
}

func (ls *eventLoops) newLoop() (*loop, error) {
	epfd, wakefd, err := epollwait.Open()
	if err != nil {
		return nil, err
	}
	f := ls.f
	tick := time.Second
	for _, d := range []time.Duration{f.readHeaderTimeout, f.idleTimeout, f.writeTimeout} {
		if d > 0 {
			tick = min(tick, d/8)
		}
	}
	l := &loop{ls: ls, f: f, epfd: epfd, wakefd: wakefd, reserve: reserveFD(), conns: map[int]*evConn{}, tick: max(tick, 5*time.Millisecond)}
	l.br = bufio.NewReaderSize(&l.hr, loopMaxHead)
	return l, nil
}

// adopt moves an accepted connection to a loop; false leaves it to the
// goroutine front (not a TCP socket, the loops failed, or stopping).
func (ls *eventLoops) adopt(nc net.Conn) bool {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return false
	}
	if err := ls.start(); errors.Is(err, errLoopsStopped) {
		return false
	} else if err != nil {
		ls.f.log.Warn("gateway: event loop unavailable; serving connections from goroutines", "err", err)
		return false
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(s uintptr) { fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || dupErr != nil {
		return false
	}
	f := ls.f
	lc := &evConn{fd: fd, readable: true, idleSince: time.Now().UnixNano()}
	lc.nc = evNetConn{lc: lc, local: nc.LocalAddr(), rem: nc.RemoteAddr()}
	c := f.initConn(&lc.nc, lc.nc.rem.String())
	c.inLoop = true
	lc.c = c
	ls.mu.Lock()
	defer ls.mu.Unlock()
	f.mu.Lock()
	stop := ls.stopped || f.closing.Load()
	if !stop {
		f.byRemote.Store(c.remoteAddr, c)
	}
	f.mu.Unlock()
	if stop {
		unix.Close(fd)
		return false
	}
	// The duplicate shares the socket (and its O_NONBLOCK); closing Go's
	// descriptor takes it out of Go's poller, so only the loop sees it.
	nc.Close()
	ls.live.Add(1)
	l := ls.loops[ls.next.Add(1)%uint64(len(ls.loops))]
	lc.l = l
	if l.post(func() { l.incoming = append(l.incoming, lc) }) {
		ls.live.Add(-1)
		f.byRemote.CompareAndDelete(c.remoteAddr, c)
		unix.Close(fd)
	}
	return true
}

// count is the connections the loops serve.
func (ls *eventLoops) count() int { return int(ls.live.Load()) }

// inFlight is the requests the loops have in flight (checks on a goroutine).
func (ls *eventLoops) inFlight() int { return int(ls.checking.Load()) }

// stopping marks the loops stopped and returns them: those a first
// connection is starting right now included (once.Do waits for it), and
// none start afterwards (a stop that looked before they were started
// left them running, and ls.loops was read as it was written).
func (ls *eventLoops) stopping() []*loop {
	ls.mu.Lock()
	ls.stopped = true
	ls.mu.Unlock()
	ls.once.Do(func() { ls.err = errLoopsStopped })
	return ls.loops
}

// stopAll marks the loops stopped and posts request to each of them.
func (ls *eventLoops) stopAll(request func(l *loop)) {
	for _, l := range ls.stopping() {
		l.post(func() { request(l) })
	}
}

// drain starts the loops' part of a graceful shutdown.
func (ls *eventLoops) drain() { ls.stopAll(func(l *loop) { l.drainReq = true }) }

// closeAll closes every connection the loops serve.
func (ls *eventLoops) closeAll() { ls.stopAll(func(l *loop) { l.closeReq = true }) }

// stop ends the loops, closing what they still serve.
func (ls *eventLoops) stop() {
	ls.stopAll(func(l *loop) { l.quit = true })
	ls.wg.Wait()
	if ls.spare {
		ls.spare = false
		releaseSpareP()
	}
}

// post changes the loop's lists under its mutex and wakes it; it reports
// whether the loop has ended (then f did not run).
func (l *loop) post(f func()) (ended bool) {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return true
	}
	f()
	wake := !l.woken
	l.woken = true
	l.mu.Unlock()
	if wake {
		epollwait.Wake(l.wakefd)
	}
	return false
}

func (l *loop) run() {
	defer l.ls.wg.Done()
	defer unix.Close(l.wakefd)
	defer func() { unix.Close(l.reserve) }()
	log := l.f.log
	direct := l.direct()
	if direct {
		batchThread(log)
	}
	wait, closeWait, err := epollwait.New(l.epfd, direct) // owns epfd, closed on an error
	if err != nil {
		log.Error("gateway: event loop: epoll descriptor", "err", err)
		l.mu.Lock()
		l.ended = true
		l.mu.Unlock()
		l.closeEverything()
		return
	}
	defer closeWait()
	defer epollwait.Tick(l.tick, func() bool { return l.post(func() { l.tickDue = true }) })()
	events := make([]unix.EpollEvent, 256)
	touched := make([]*evConn, 0, 256)
	now := time.Now() // read once per pass
	yielded := now
	for {
		if now.Sub(yielded) >= loopYieldAfter {
			yielded = now
			runtime.Gosched()
		}
		n, werr := wait(events, len(l.again) == 0)
		now = time.Now()
		if werr != nil {
			log.Error("gateway: epoll_wait failed", "err", werr)
			time.Sleep(l.tick)
			n = 0
		}
		touched = append(touched[:0], l.again...)
		for _, lc := range l.again {
			lc.again = false
		}
		l.again = l.again[:0]
		woken := false
		for _, ev := range events[:max(n, 0)] {
			fd := int(ev.Fd)
			if fd == l.wakefd {
				woken = true
				continue
			}
			lc := l.conns[fd]
			if lc == nil {
				continue
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				lc.readable = true
			}
			if ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				// The end may come with the last data, in this one edge:
				// a short read no longer says the socket is drained.
				lc.peerDone = true
			}
			touched = append(touched, lc)
		}
		if woken {
			epollwait.Drain(l.wakefd)
			if l.takeWork(&touched) {
				return
			}
		}
		for _, lc := range touched {
			l.service(lc, now)
		}
		if l.timeoutsDue {
			l.timeoutsDue = false
			l.checkTimeouts(now)
		}
	}
}

// direct tells how the loop waits for events (epollwait.New): where the
// runtime keeps a P beside the loops' (fewer loops than GOMAXPROCS: the
// default, with spareP) it blocks in epoll_wait itself, as nginx's workers
// do, and sysmon does not take its P away while it waits; otherwise (more
// loops asked for than there are Ps) its epoll descriptor is in Go's
// poller. Measured: 16–17 µs of the gateway's CPU per denial parked on the
// poller against 12–14 µs blocking (RejectionVsNginx, where the profile
// had 17 % in context switches and 9 % in sysmon). kvstore's RESP loop
// waits the same way.
func (l *loop) direct() bool { return l.ls.n < runtime.GOMAXPROCS(0) }

// batchThread gives the loop a thread of its own, scheduled SCHED_BATCH
// (sched(7): CPU-bound, "mildly disfavored" at wakeups, the same share of
// the CPU; no privilege needed): what a loop does is answer a flood, and
// a thread woken for the requests the limit lets through (the spare P's,
// an upstream's) then runs at once rather than after the loop's slice.
// Measured with two loops (AllowedLatencyUnderFlood, RejectionVsNginxWrk*,
// alternated): the allowed requests' p99 under a flood 3.2–4.1 ms against
// 7.9–8.5 ms at the normal policy (nginx 6.6–8.1 ms), and the flood's rate
// as high or higher (wrk, one thread: 1.30–1.35× nginx against 1.07–1.12×).
// The goroutine stays locked to the thread to its end, so the thread
// exits with it and the policy never reaches another goroutine. Where
// the kernel refuses (a seccomp filter), the loop runs at the normal
// policy.
func batchThread(log *slog.Logger) {
	runtime.LockOSThread()
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_BATCH}, 0); err != nil {
		log.Debug("gateway: event loop: SCHED_BATCH refused; the loop runs at the normal policy", "err", err)
	}
}

// loopYieldAfter is how long a loop runs between two yields to the
// scheduler. A loop that never yields looks stuck to sysmon: after 10 ms
// it preempts the goroutine (a signal) or, caught in epoll_wait, takes its
// P away. (A yield wakes an idle P's thread: at most 500 a second.)
const loopYieldAfter = 2 * time.Millisecond

// takeWork moves what other goroutines posted into the loop; it reports
// whether the loop must end.
func (l *loop) takeWork(touched *[]*evConn) bool {
	l.mu.Lock()
	l.woken = false
	incoming, finished := l.incoming, l.finished
	l.incoming, l.finished = nil, nil
	drain, closeAll, quit := l.drainReq, l.closeReq, l.quit
	l.drainReq, l.closeReq = false, false
	l.timeoutsDue = l.timeoutsDue || l.tickDue
	l.tickDue = false
	if quit {
		l.ended = true
	}
	l.mu.Unlock()
	for _, lc := range incoming {
		// EPOLLOUT only while a write waits for room (watchWrites): every
		// ACK of an answer would otherwise wake the loop for nothing.
		ev := unix.EpollEvent{Events: connEvents, Fd: int32(lc.fd)}
		l.conns[lc.fd] = lc
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, lc.fd, &ev); err != nil {
			l.f.log.Warn("gateway: epoll_ctl failed; closing the connection", "err", err)
			l.close(lc)
			continue
		}
		*touched = append(*touched, lc)
	}
	for _, lc := range finished {
		lc.busy = false
		l.ls.checking.Add(-1)
		req := lc.asyncReq
		lc.asyncReq = nil
		switch {
		case lc.closed:
		case lc.closing && !lc.asyncHandoff:
			l.close(lc) // closed while its check ran (Close)
		case lc.asyncHandoff:
			l.handoff(lc, req, lc.asyncStart)
		default:
			if !lc.asyncKeep {
				lc.closing = true
			}
			*touched = append(*touched, lc)
		}
	}
	if drain {
		l.draining = true
		for _, lc := range l.conns {
			*touched = append(*touched, lc)
		}
	}
	if closeAll || quit {
		l.closeEverything()
	}
	return quit
}

// closeEverything closes every connection (those busy once their check
// ends; after quit their result is dropped).
func (l *loop) closeEverything() {
	for _, lc := range l.conns {
		if lc.busy {
			lc.closing = true
			if l.ended {
				l.release(lc)
			}
			continue
		}
		l.close(lc)
	}
}

// service does what a connection can do now: write what waits, answer the
// whole heads it has, read more.
func (l *loop) service(lc *evConn, now time.Time) {
	defer func() {
		// A bug here must cost one connection, not the server.
		if p := recover(); p != nil {
			l.f.log.Error("gateway: event loop panicked serving a connection; connection closed", "panic", fmt.Sprint(p))
			l.close(lc)
		}
	}()
	taken := 0 // bytes read in this pass
	for !lc.closed && !lc.busy {
		if len(lc.out) > 0 {
			if !l.writeOut(lc, now) {
				return
			}
			continue
		}
		if lc.closing {
			l.close(lc)
			return
		}
		if l.draining {
			if lc.scanning {
				// Cut in the middle of a head: told so, as the front does.
				lc.c.writeError(http.StatusServiceUnavailable, "shutting down")
				lc.closing = true
				continue
			}
			l.close(lc)
			return
		}
		if l.serveHeads(lc, now) {
			continue
		}
		if lc.closed || lc.busy {
			return
		}
		if lc.eof {
			l.close(lc)
			return
		}
		if !lc.readable {
			return
		}
		if taken >= loopPassBytes {
			if !lc.again { // once: an event may have touched it in this pass too
				lc.again = true
				l.again = append(l.again, lc) // the others' turn first
			}
			return
		}
		taken += l.read(lc)
	}
}

// read reads once into the connection's buffer; it returns the bytes read.
func (l *loop) read(lc *evConn) int {
	if lc.rpos > 0 && (lc.rpos == len(lc.in) || cap(lc.in)-len(lc.in) < loopReadSize) {
		lc.in = lc.in[:copy(lc.in, lc.in[lc.rpos:])]
		lc.rpos = 0
	}
	if cap(lc.in)-len(lc.in) < loopReadSize {
		grown := make([]byte, len(lc.in), max(2*cap(lc.in), len(lc.in)+loopReadSize))
		copy(grown, lc.in)
		lc.in = grown
	}
	free := lc.in[len(lc.in):cap(lc.in)]
	n, err := unix.Read(lc.fd, free)
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
		lc.readable = errors.Is(err, unix.EINTR)
	case err != nil || n == 0:
		lc.eof, lc.readable = true, false
	default:
		lc.in = lc.in[:len(lc.in)+n]
		// A short read drained the socket (edge-triggered), unless the
		// peer's end is still to be read.
		lc.readable = n == len(free) || lc.peerDone
		return n
	}
	return 0
}

// serveHeads answers the whole heads buffered, in order, and reports
// whether it answered any (or handed the connection over).
func (l *loop) serveHeads(lc *evConn, now time.Time) (progress bool) {
	for lc.rpos < len(lc.in) && len(lc.out) < loopFlushAt && !lc.closing && !lc.closed && !lc.busy {
		buf := lc.in[lc.rpos:]
		if !lc.scanning {
			lc.scanning, lc.scanned, lc.headSince = true, 0, now.UnixNano()
			lc.scan.reset()
		}
		lc.scanned += lc.scan.feed(buf[lc.scanned:])
		if !lc.scan.done {
			if lc.scanned > loopMaxHead {
				l.handoff(lc, nil, time.Time{})
				return true
			}
			return progress
		}
		head := buf[:lc.scanned]
		req := l.parse(lc, head)
		if req == nil {
			// Unsure: the front reads the head again and decides.
			l.handoff(lc, nil, time.Time{})
			return true
		}
		lc.rpos += len(head)
		lc.scanning = false
		progress = true
		if !l.ls.local {
			// The check may wait on the store: not on the loop.
			lc.busy = true
			lc.box = nil // the request is the goroutine's
			l.ls.checking.Add(1)
			go func() {
				handoff, keep := l.serveRequest(lc, req, now)
				l.post(func() {
					lc.asyncReq, lc.asyncStart, lc.asyncHandoff, lc.asyncKeep = req, now, handoff, keep
					l.finished = append(l.finished, lc)
				})
			}()
			return true
		}
		handoff, keep := l.serveRequest(lc, req, now)
		if handoff {
			l.handoff(lc, req, now)
			return true
		}
		if !keep {
			lc.closing = true
		}
	}
	return progress
}

// parse parses a whole head the scan passed, nil when the loop leaves it
// to the front: the front's rules refuse it, or it is not the simple case.
func (l *loop) parse(lc *evConn, head []byte) *http.Request {
	if status, _ := lc.scan.verdict(); status != 0 {
		return nil
	}
	if lc.box == nil {
		lc.box = new(parsedRequest)
	}
	req := quickParseInto(head, lc.box)
	if req == nil {
		l.hr.Reset(head)
		l.br.Reset(&l.hr)
		var err error
		if req, err = http.ReadRequest(l.br); err != nil {
			return nil
		}
	}
	if status, _ := lc.c.check(req, &lc.scan); status != 0 {
		return nil
	}
	h := req.Header
	if req.ProtoMajor != 1 || req.Body != http.NoBody || req.ContentLength != 0 || len(req.TransferEncoding) > 0 ||
		h["Transfer-Encoding"] != nil || h["Upgrade"] != nil || h["Expect"] != nil ||
		req.RequestURI == "*" || req.Method == http.MethodConnect {
		return nil
	}
	return req
}

// serveRequest runs the front's handler for req on the connection's own
// response, its answer collected in out; handoff: the limit let it
// through (forward saw it), it goes to the front; !keep: the connection
// ends after the answer.
func (l *loop) serveRequest(lc *evConn, req *http.Request, start time.Time) (handoff, keep bool) {
	c := lc.c
	req.RemoteAddr = c.remoteAddr
	w := &c.res
	w.reset(c, req)
	c.now = start
	c.handoff = false
	if !c.runHandler(w, req, c.f.handler) {
		c.bw.Flush()
		return false, false
	}
	if c.handoff {
		return true, true
	}
	w.finish()
	c.bw.Flush()
	return false, !c.broken && !w.closeAfter
}

// handoff gives the connection to the goroutine front: req, when not nil,
// was limited here and goes on with the resume handler; the bytes not
// served yet are read first, the answers not written yet go out first.
func (l *loop) handoff(lc *evConn, req *http.Request, start time.Time) {
	f := l.f
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, lc.fd, nil)
	delete(l.conns, lc.fd)
	lc.closed = true
	file := os.NewFile(uintptr(lc.fd), "client")
	nc, err := net.FileConn(file) // a duplicate, in Go's poller
	if err != nil && l.reserve >= 0 {
		// Out of descriptors (EMFILE): the reserve makes room for the
		// duplicate, and is taken again once the original is closed.
		unix.Close(l.reserve)
		nc, err = net.FileConn(file)
		l.reserve = -1
	}
	file.Close()
	if l.reserve < 0 {
		l.reserve = reserveFD()
	}
	c := lc.c
	if err != nil {
		f.log.Warn("gateway: event loop could not hand a connection over; closed", "err", err)
		f.byRemote.CompareAndDelete(c.remoteAddr, c)
		l.ls.live.Add(-1)
		return
	}
	c.nc = nc
	c.inLoop = false
	if rest := lc.in[lc.rpos:]; len(rest) > 0 {
		c.cr.pending = rest
	}
	if lc.scanning {
		c.headStart = time.Unix(0, lc.headSince)
	}
	if req != nil {
		c.setState(connActive) // in flight: Shutdown waits for it
	}
	f.mu.Lock()
	f.conns[c] = struct{}{}
	f.mu.Unlock()
	l.ls.live.Add(-1)
	go c.serveResumed(lc.out, req, start)
}

// reserveFD opens the descriptor a loop holds for a handoff out of
// descriptors, -1 when none can be had now.
func reserveFD() int {
	fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// writeOut writes the answers collected; it reports whether they are all out.
func (l *loop) writeOut(lc *evConn, now time.Time) bool {
	for len(lc.out) > 0 {
		n, err := unix.Write(lc.fd, lc.out)
		if n > 0 {
			lc.out = lc.out[:copy(lc.out, lc.out[n:])]
		}
		if errors.Is(err, unix.EAGAIN) {
			if lc.wblocked == 0 {
				lc.wblocked = now.UnixNano()
				l.watchWrites(lc, true)
			}
			return false
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			l.close(lc) // the client left
			return false
		}
	}
	if lc.wblocked != 0 {
		lc.wblocked = 0
		l.watchWrites(lc, false)
	}
	lc.idleSince = now.UnixNano()
	if cap(lc.out) > loopFlushAt {
		lc.out = nil
	}
	return true
}

// connEvents are the events a connection is watched for (edge-triggered),
// EPOLLOUT added only while a write waits (watchWrites).
const connEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET

// watchWrites adds EPOLLOUT to the connection's events, or takes it off.
func (l *loop) watchWrites(lc *evConn, on bool) {
	ev := unix.EpollEvent{Events: connEvents, Fd: int32(lc.fd)}
	if on {
		ev.Events |= unix.EPOLLOUT
	}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, lc.fd, &ev); err != nil {
		l.close(lc)
	}
}

// checkTimeouts closes the connections past their header, idle or write
// timeout.
func (l *loop) checkTimeouts(now time.Time) {
	f := l.f
	nanos := now.UnixNano()
	for _, lc := range l.conns {
		switch {
		case lc.busy:
		case lc.wblocked != 0:
			if nanos-lc.wblocked > int64(f.writeTimeout) {
				l.close(lc)
			}
		case lc.scanning:
			if nanos-lc.headSince > int64(f.readHeaderTimeout) {
				l.close(lc) // slowloris: nothing to say
			}
		case nanos-lc.idleSince > int64(f.idleTimeout):
			l.close(lc)
		}
	}
}

// close closes the socket; a busy connection once its check ends.
func (l *loop) close(lc *evConn) {
	if lc.closed {
		return
	}
	if lc.busy {
		lc.closing = true
		return
	}
	l.release(lc)
}

func (l *loop) release(lc *evConn) {
	if lc.busy {
		lc.busy = false
		l.ls.checking.Add(-1) // its check's result will be dropped (the loop ended)
	}
	lc.closed = true
	if l.conns[lc.fd] == lc {
		delete(l.conns, lc.fd)
	}
	// Forgotten before the close: a client that saw it closed finds it gone.
	l.f.byRemote.CompareAndDelete(lc.c.remoteAddr, lc.c)
	l.ls.live.Add(-1)
	unix.Close(lc.fd)
}
