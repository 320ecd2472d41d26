package resp

// The epoll event loops (the default; Options.GoroutinePerConn turns them off).
//
// Invariants, the same as a connection goroutine's:
//   - replies leave in the order commands arrived, and a write's reply only
//     once the engine acknowledged it: a connection whose burst left writes
//     pending is parked — none of its commands run and nothing is written —
//     until the loop has awaited them, oldest first, at the end of its round;
//   - every limit and error of commandReader holds (bufferParser), and the
//     handshake, idle and write timeouts close a connection as the deadlines
//     of a goroutine's connection do (checked every tick of the loop);
//   - once the server drains, no connection starts another command: the
//     replies of those already run are written, then it is closed.
//
// A loop owns its connections: only its goroutine reads, writes, runs
// commands on or closes them. Other goroutines (connserver's hooks) hand it
// work through its mutex-guarded lists and wake it with an eventfd.
//
// A round is Redis's event-loop turn: every ready connection runs its whole
// commands, their writes join one open engine group, then the loop awaits
// the group — one log write and, under SyncAlways, one fsync for every
// connection of the round — and writes each connection's replies. Sockets are edge-triggered: a read that does not fill the buffer
// drained the socket, so the next read waits for the next edge and a
// request costs one read and one write.

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devkit-go/devkit/kvstore"

	"github.com/devkit-go/devkit/kvstore/internal/epollwait"
	"github.com/devkit-go/devkit/kvstore/server/internal/connserver"
)

// eventLoops are the server's loops, started with its first connection.
type eventLoops struct {
	s       *Server
	once    sync.Once
	err     error
	loops   []*loop
	next    int
	mu      sync.Mutex // next, stopped
	stopped bool
	wg      sync.WaitGroup
	// beforeSync, when set (tests, before the first connection), runs on
	// the loop before it awaits a round's parked connections: a slow disk
	// as the loop sees it (the group is sealed by the first wait; the
	// hook's time counts as the group's wait).
	beforeSync func()
	// idlePolls counts the polls of the loops' idle polling, and polling
	// the loops polling now (Options.IdlePoll; tests read them).
	idlePolls atomic.Int64
	polling   atomic.Int32
}

func newEventLoops(s *Server) *eventLoops { return &eventLoops{s: s} }

// readSize is the free buffer space a read asks for at least.
const readSize = 16 << 10

// loop is one epoll set and the connections in it.
type loop struct {
	ls     *eventLoops
	s      *Server
	epfd   int
	wakefd int
	conns  map[int]*elConn

	mu       sync.Mutex
	incoming []*elConn
	kills    []*elConn
	resumed  []*elConn // held connections whose hold ended
	pushed   []*elConn // subscribers with messages to write (pubsub.go)
	drain    bool
	quit     bool
	woken    bool // a wake is pending (so one eventfd write serves many)
	ended    bool // the loop returned: nothing more is posted
	tickDue  bool // set by the ticker (under mu)

	timeoutsDue bool // the loop's copy of tickDue

	tick    time.Duration
	now     time.Time // read once per round, and again after waiting for the engine
	yielded time.Time // when the loop last yielded (see yieldAfter)
	// idlePoll is how long the loop polls before it sleeps (Options.IdlePoll;
	// 0 when it waits through Go's poller); served: the round read a
	// request's bytes (writability and ticks do not count).
	idlePoll time.Duration
	served   bool
	// pollWindow is how long the loop polls now, up to idlePoll (see
	// adaptPoll); idleSince is when the loop last began to wait after a
	// round that served requests, zero once a socket's event ended it.
	pollWindow time.Duration
	idleSince  time.Time
	parking    []*elConn // parked in this round, not yet awaited
	// busyServing: serveWhileBusy runs; busyWoken: it took the wake-up.
	busyServing, busyWoken bool
	spare                  []*elConn

	// Gathering a group (SyncAlways only, see shouldSettle).
	gather      bool          // the engine syncs each group: gathering pays
	gatherUntil int64         // unix nanos the current gathering ends; 0: none
	gatherTimer *time.Timer   // wakes the loop at gatherUntil
	writers     int           // connections writing lately (the last two groups)
	lastBatch   int           // connections in the last group awaited
	settles     uint64        // groups awaited so far
	syncAvg     time.Duration // how long a group's wait takes, smoothed (1/8 of each)
}

// elConn is a connection served by a loop.
type elConn struct {
	l    *loop
	fd   int
	cc   *connserver.Conn
	cl   *client
	in   []byte // bytes read; in[rpos:] not yet run
	rpos int
	p    bufferParser

	readable bool // the socket may hold unread bytes
	eof      bool // the peer closed its side, or a read failed
	parked   bool // its burst's writes are awaited before anything else
	wbuf     []byte
	wblocked int64 // unix nanos a write began waiting for room; 0: none
	closing  bool  // close once the replies are written
	holding  bool  // held after a wrong password, its timer armed (hold)
	closed   bool
	settled  uint64 // the loop's settles count when this connection's writes were last awaited
}

func (ls *eventLoops) start() error {
	ls.once.Do(func() {
		n := ls.s.opts.EventLoops
		if n <= 0 {
			n = max(1, runtime.GOMAXPROCS(0)/2)
		}
		for range n {
			l, err := ls.newLoop()
			if err != nil {
				ls.err = err
				return
			}
			ls.loops = append(ls.loops, l)
		}
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
	l := &loop{ls: ls, s: ls.s, epfd: epfd, wakefd: wakefd, conns: map[int]*elConn{}, tick: tickFor(ls.s.opts),
		gather: ls.s.store.SyncPolicy() == kvstore.SyncAlways}
	return l, nil
}

// tickFor is how often a loop checks its timeouts: an eighth of the
// shortest, as the goroutine path re-arms its deadlines.
func tickFor(o Options) time.Duration {
	t := time.Second
	for _, d := range []time.Duration{o.IdleTimeout, o.HandshakeTimeout, o.WriteTimeout} {
		if d > 0 {
			t = min(t, d/8)
		}
	}
	return max(t, 5*time.Millisecond)
}

// adopt moves a connection to a loop. It returns false when the connection
// is not a socket a loop can serve (TLS) or the loops failed to start.
func (ls *eventLoops) adopt(c *connserver.Conn) bool {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return false
	}
	switch c.Conn.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return false
	}
	if err := ls.start(); err != nil {
		c.Logger().Warn("event loop unavailable; serving the connection from a goroutine", "transport", "resp", "err", err)
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(s uintptr) { fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || dupErr != nil {
		return false
	}
	ls.mu.Lock()
	if ls.stopped {
		ls.mu.Unlock()
		unix.Close(fd)
		return false
	}
	l := ls.loops[ls.next%len(ls.loops)]
	ls.next++
	ls.mu.Unlock()
	// The duplicate shares the socket (and its O_NONBLOCK); closing Go's
	// descriptor takes it out of Go's poller, so only the loop sees it.
	cl := ls.s.newClient(c)
	c.Conn.Close()
	ec := &elConn{l: l, fd: fd, cc: c, cl: cl, readable: true}
	cl.serveBusy = func() { l.serveWhileBusy(ec) }
	ec.p.cr = ls.s.newCommandReader(nil)
	cl.resume = func() { l.post(func() { l.resumed = append(l.resumed, ec) }) } // a blocked command fired (cmd_block.go)
	cl.pushWake = func() { l.post(func() { l.pushed = append(l.pushed, ec) }) } // a message for a subscriber (pubsub.go)
	cl.kill = func() { l.post(func() { l.kills = append(l.kills, ec) }) }
	c.MarkIdle(time.Now())
	c.Detach(connserver.Hooks{
		Close: func() { l.post(func() { l.kills = append(l.kills, ec) }) },
		Drain: func() { l.post(func() { l.drain = true }) },
	})
	l.post(func() { l.incoming = append(l.incoming, ec) })
	return true
}

// post changes the loop's lists under its mutex and wakes it.
// It reports whether the loop has ended (then f did not run).
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

// stop ends the loops once every connection is closed (after Shutdown).
func (ls *eventLoops) stop() {
	ls.mu.Lock()
	ls.stopped = true
	ls.mu.Unlock()
	for _, l := range ls.loops {
		l.post(func() { l.quit = true })
	}
	ls.wg.Wait()
}

// run is the loop.
func (l *loop) run() {
	defer l.ls.wg.Done()
	defer unix.Close(l.wakefd)
	direct := l.direct()
	wait, closeWait, err := epollwait.New(l.epfd, direct) // owns epfd, closed on an error
	if err != nil {
		l.s.opts.Logger.Error("event loop: epoll descriptor", "transport", "resp", "err", err)
		return
	}
	defer closeWait()
	defer epollwait.Tick(l.tick, func() bool { return l.post(func() { l.tickDue = true }) })()
	if direct {
		l.idlePoll = l.s.opts.IdlePoll
		l.pollWindow = l.idlePoll
	}
	events := make([]unix.EpollEvent, 256)
	touched := make([]*elConn, 0, 256)
	for {
		// With parked connections to settle, only look for what is ready;
		// while a group gathers, the gathering timer's wake ends the wait.
		block := len(l.parking) == 0 || l.gatherUntil != 0
		if l.now.Sub(l.yielded) >= yieldAfter {
			l.yielded = l.now
			runtime.Gosched()
		}
		n, werr := l.wait(wait, events, block)
		l.now = time.Now()
		if werr != nil {
			l.s.opts.Logger.Error("epoll_wait failed", "transport", "resp", "err", werr)
			time.Sleep(l.tick)
			n = 0
		}
		touched = touched[:0]
		woken := false
		for _, ev := range events[:max(n, 0)] {
			fd := int(ev.Fd)
			if fd == l.wakefd {
				woken = true
				continue
			}
			c := l.conns[fd]
			if c == nil {
				continue
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.readable = true
			}
			touched = append(touched, c)
		}
		if len(touched) > 0 && !l.idleSince.IsZero() {
			l.adaptPoll(l.now.Sub(l.idleSince))
			l.idleSince = time.Time{}
		}
		if woken {
			epollwait.Drain(l.wakefd)
			if l.takeWork(&touched) {
				return
			}
		}
		for _, c := range touched {
			l.service(c)
		}
		if l.shouldSettle() {
			l.settleParked()
		}
		if l.timeoutsDue {
			l.timeoutsDue = false
			l.checkTimeouts(l.now)
		}
	}
}

// direct tells how the loop waits for events (epollwait.New).
//
// Where the runtime keeps an idle P (fewer loops than GOMAXPROCS, the
// default), the loop blocks in epoll_wait itself, as Redis's loop does:
// one system call per wake, and the thread keeps its P meanwhile (sysmon
// leaves a P in a system call alone while another is idle). Otherwise a
// loop blocked in a system call would hold a P that other goroutines need
// until sysmon retook it (up to 10 ms later), so the epoll descriptor is
// registered with Go's poller, polled with a zero timeout, and an idle
// loop parks like any goroutine. That costs a second epoll_pwait per wake
// (the runtime's, on its descriptor that holds ours), a netpoller thread
// woken for every readable socket and sysmon put to deep sleep at every
// park and woken again by the next system call: 1–2 µs of CPU per request
// more (see docs/kvstore-server.md), which is why it is not the default.
// Only a loop that blocks itself polls before it sleeps (Options.IdlePoll).
func (l *loop) direct() bool { return len(l.ls.loops) < runtime.GOMAXPROCS(0) }

// wait returns the ready events. After a round that read requests, a
// blocking wait first polls for up to pollWindow (unless a group gathers:
// its timer ends that wait).
func (l *loop) wait(wait epollwait.Wait, events []unix.EpollEvent, block bool) (n int, err error) {
	if block && l.served && l.idlePoll > 0 && l.gatherUntil == 0 {
		l.idleSince = time.Now()
		if l.pollWindow > 0 {
			l.ls.polling.Add(1)
			for until := l.idleSince.Add(l.pollWindow); ; {
				l.ls.idlePolls.Add(1)
				if n, err = wait(events, false); n != 0 || err != nil || !time.Now().Before(until) {
					break
				}
			}
			l.ls.polling.Add(-1)
			if n != 0 {
				l.idleSince = time.Time{} // the poll paid: the window stays
			}
		}
	}
	l.served = false
	if n == 0 && err == nil {
		n, err = wait(events, block)
	}
	return n, err
}

// adaptPoll sets the poll window from how long the loop waited after
// serving requests until a socket had something, as Linux's haltpoll
// governor sizes its guest poll: a wait longer than idlePoll, which no
// poll would have caught, halves the window (under idlePoll/8 the loop
// sleeps at once); a wait a longer window would have caught doubles it
// (from idlePoll/8, up to idlePoll). One connection whose client takes
// longer than idlePoll between requests (redis-benchmark -c 1 on a busy
// machine: 30-60 µs) stops the polling that only took a CPU from it:
// GET -c 1 went from 0.79x redis-server to 1.18x with the poll off.
func (l *loop) adaptPoll(idle time.Duration) {
	switch {
	case idle > l.idlePoll:
		if l.pollWindow /= 2; l.pollWindow < l.idlePoll/8 {
			l.pollWindow = 0
		}
	case idle > l.pollWindow:
		l.pollWindow = min(l.idlePoll, max(2*l.pollWindow, l.idlePoll/8))
	}
}

// yieldAfter is how long a loop runs between two yields to the scheduler.
// A loop that never yields looks stuck to sysmon: after 10 ms it preempts
// the goroutine (a signal) or, caught in epoll_wait, takes its P away, and
// then polls at its fastest (20 µs) for a while. Yielding every few
// milliseconds avoids that: perf stat counted 6600 nanosleeps and 130
// tgkills in 3 s of GET without the yields, about 500 and 1 with them.
// (A yield wakes an idle P's thread, a futex call: at most 500 a second.)
const yieldAfter = 2 * time.Millisecond

// maxSettlePasses bounds the rounds of awaiting and serving parked
// connections before the loop polls its sockets again (fairness to the
// connections that have not sent anything yet).
const maxSettlePasses = 4

// settleParked awaits the round's parked connections on the loop itself,
// as Redis fsyncs once per event-loop turn before it writes the turn's
// replies: the first wait seals the engine group that holds every parked
// connection's writes (one log write and, under SyncAlways, one fsync for
// all of them), the later ones find it finished. Each connection then
// writes its replies and runs what else it has. Connections still parked
// after maxSettlePasses stay in parking for the next round.
//
// The waits block the loop, as Redis's fsync blocks its thread: a waiter
// goroutine that awaited them and handed the connections back through the
// eventfd cost a hand-off and a wake per round and measured slower (see
// docs/kvstore-server.md).
func (l *loop) settleParked() {
	l.gatherUntil = 0
	for pass := 0; len(l.parking) > 0 && pass < maxSettlePasses; pass++ {
		batch := l.parking
		l.parking = l.spare[:0]
		start := time.Now()
		if pass == 0 {
			l.countWriters(batch)
			if h := l.ls.beforeSync; h != nil {
				h()
			}
		}
		for _, c := range batch {
			c.cl.settle()
			c.parked = false
		}
		l.now = time.Now()
		if pass == 0 {
			l.syncAvg += (l.now.Sub(start) - l.syncAvg) / 8
		}
		for _, c := range batch {
			l.service(c)
		}
		clear(batch)
		l.spare = batch[:0]
	}
}

// Bounds on gathering a group (shouldSettle, gatherWait).
const (
	maxGather = 250 * time.Microsecond
	// gatherShare is the part of a group's wait that gathering the next
	// one may add to it, at most.
	gatherShare = 2
	// minGatherSync is the group wait below which gathering does not pay.
	minGatherSync = 300 * time.Microsecond
)

// gatherWait is how long a group may be kept open for more writers when
// a group's wait takes syncAvg: nothing when the disk is fast, else the
// smaller of maxGather and 1/gatherShare of it.
//
// Gathering pays when the fsync, not the loop's work, bounds a round.
// Measured on the 2-core VM (BenchmarkRedisBenchmarkSET, strict SET, 50
// clients, the fsync lengthened by a sleep in the engine): with the
// in-place fsync of a preallocated segment (~110 µs) gathering gave 36
// SETs per fsync against 27 without, but 51–67k SETs/s against 61–83k,
// and 1.0–1.2× Redis against 1.1–1.4× (the wait it adds, and a wake per
// straggler, cost more than the fsyncs it saves); at ~220 µs still
// 47k against 52–55k; at 270–370 µs they were level; at 1–2 ms
// gathering gave 12–14k against 9k, 48 SETs per fsync against 25.
func gatherWait(syncAvg time.Duration) time.Duration {
	if syncAvg < minGatherSync {
		return 0
	}
	return min(maxGather, syncAvg/gatherShare)
}

// shouldSettle reports whether the round's parked connections are awaited
// now. Under SyncAlways a group's fsync takes far longer than the clients
// that just got their replies take to send the next request, so, without
// waiting, groups alternate between two halves of the clients (those that
// sent while the last group synced, then the others) and each fsync serves
// half of them, as each of Redis's turns does. When more connections have
// been writing lately (the last two groups) than are parked now, the loop
// keeps the group open and goes on polling its sockets until they are all
// parked or the gathering time is up (gatherWait: only on a disk slow
// enough that it pays, and at most half a group's wait), so that it adds
// at most that to a write's latency, and nothing when a connection writes
// alone. This is the commit delay of PostgreSQL's commit_delay and MySQL's
// binlog_group_commit_sync_delay, bounded by what the fsync costs anyway.
func (l *loop) shouldSettle() bool {
	if len(l.parking) == 0 {
		return false
	}
	if !l.gather || len(l.parking) >= l.writers {
		return true
	}
	now := time.Now()
	if l.gatherUntil == 0 {
		wait := gatherWait(l.syncAvg)
		if wait <= 0 {
			return true
		}
		l.gatherUntil = now.Add(wait).UnixNano()
		if l.gatherTimer == nil {
			l.gatherTimer = time.AfterFunc(wait, func() { l.post(func() {}) })
		} else {
			l.gatherTimer.Reset(wait)
		}
		return false
	}
	return now.UnixNano() >= l.gatherUntil
}

// countWriters updates the estimate of the connections writing lately from
// the group about to be awaited: its connections, and those of the group
// before that are not in it.
func (l *loop) countWriters(batch []*elConn) {
	l.settles++
	again := 0
	for _, c := range batch {
		if c.settled == l.settles-1 && l.settles > 1 {
			again++
		}
		c.settled = l.settles
	}
	l.writers = len(batch) + l.lastBatch - again
	l.lastBatch = len(batch)
}

// takeWork moves what other goroutines posted into the loop; it reports
// whether the loop must end.
func (l *loop) takeWork(touched *[]*elConn) bool {
	l.mu.Lock()
	l.woken = false
	incoming, kills, drain, quit, resumed, pushed := l.incoming, l.kills, l.drain, l.quit, l.resumed, l.pushed
	l.incoming, l.kills, l.drain, l.resumed, l.pushed = nil, nil, false, nil, nil
	l.timeoutsDue = l.timeoutsDue || l.tickDue
	l.tickDue = false
	if quit {
		l.ended = true
	}
	l.mu.Unlock()
	for _, c := range incoming {
		if c.closed {
			continue // killed (evicted) before it was registered: its fd is closed, maybe reused
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.fd)}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			c.cl.log.Warn("epoll_ctl failed; closing the connection", "err", err)
			l.close(c)
			continue
		}
		l.conns[c.fd] = c
		*touched = append(*touched, c)
	}
	for _, c := range kills {
		l.close(c)
	}
	for _, c := range resumed {
		if time.Now().Before(c.cl.holdUntil) {
			continue // a stale resume: a wrong password's hold runs its course
		}
		c.holding, c.cl.holdUntil = false, time.Time{}
		if !c.closed {
			*touched = append(*touched, c)
		}
	}
	for _, c := range pushed {
		if !c.closed {
			*touched = append(*touched, c)
		}
	}
	if drain {
		for _, c := range l.conns {
			if c.cc.Draining() {
				*touched = append(*touched, c)
			}
		}
	}
	if quit {
		// The writes of parked connections are awaited (the engine must
		// see every wait called); their replies are dropped with them.
		for _, c := range l.parking {
			c.cl.settle()
			c.parked = false
		}
		clear(l.parking)
		l.parking = l.parking[:0]
		for _, c := range l.conns {
			l.close(c)
		}
		return true
	}
	return false
}

// service does what a connection can do now: write what waits, run the
// whole commands it has, read more.
func (l *loop) service(c *elConn) {
	defer func() {
		// A bug here must cost one connection, not the server (a
		// command's own panic is an error reply already, in execute).
		if p := recover(); p != nil {
			c.cl.log.Error("event loop panicked serving a connection; connection closed", "panic", fmt.Sprint(p))
			c.parked = false
			l.close(c)
		}
	}()
	for !c.closed && !c.parked {
		if !c.cl.holdUntil.IsZero() && !c.cc.Draining() {
			// A wrong password (auth.go): nothing is written or run until
			// the hold ends and the timer hands the connection back.
			l.hold(c)
			return
		}
		if c.wbuf != nil {
			if !l.writeOut(c) {
				return
			}
			continue
		}
		if ps := c.cl.ps; ps != nil && ps.queued.Load() && !c.closing && (c.cl.blocked == nil || !c.cl.blocked.fired.Load()) {
			// Messages arrived: the replies are out (a burst ends in a
			// write or a park), so they go out now, in order. (A blocked
			// command that was served answers first: an invalidation of
			// the key it wrote follows its reply, as in Redis.)
			if !ps.takeInto(&c.cl.out) {
				l.close(c) // over its output limit
				return
			}
			l.startWrite(c)
			continue
		}
		if c.cl.blocked != nil {
			if !l.serviceBlocked(c) {
				return
			}
			continue
		}
		if c.closing || c.cc.Draining() {
			// No command starts; the replies of those run go out first.
			if len(c.cl.out.buf) > 0 || c.cl.batchOpen || len(c.cl.pending) > 0 {
				l.endBurst(c)
				continue
			}
			l.close(c)
			return
		}
		if l.runCommands(c) {
			l.endBurst(c)
			continue
		}
		if c.eof {
			l.close(c)
			return
		}
		if !c.readable {
			return
		}
		l.read(c)
	}
}

// serviceBlocked runs a blocked command again once it fired (woken or
// timed out) and reports whether it answered; meanwhile the connection is
// read only to see it close (what it sends waits), so a client that leaves
// stops waiting (and takes nothing).
func (l *loop) serviceBlocked(c *elConn) bool {
	cl := c.cl
	if c.closing || c.cc.Draining() {
		l.s.unblock(cl)
		return true
	}
	if cl.blocked.fired.Load() {
		l.s.execute(cl, cl.blocked.args, l.now)
		if cl.blocked == nil {
			l.endBurst(c)
			return true
		}
	}
	if c.readable {
		l.read(c)
	}
	if c.eof {
		l.s.unblock(cl)
		l.close(c)
	}
	return false
}

// hold arms the timer that serves a held connection again when its hold
// ends (once per hold).
func (l *loop) hold(c *elConn) {
	if c.holding {
		return
	}
	c.holding = true
	time.AfterFunc(time.Until(c.cl.holdUntil), func() {
		l.post(func() { l.resumed = append(l.resumed, c) })
	})
}

// read reads once into the connection's buffer.
func (l *loop) read(c *elConn) {
	// The unrun bytes (at most one partial command, whose parse state is
	// relative to its start) move to the front when room runs short.
	if c.rpos > 0 && (c.rpos == len(c.in) || cap(c.in)-len(c.in) < readSize) {
		c.in = c.in[:copy(c.in, c.in[c.rpos:])]
		c.rpos = 0
	}
	if len(c.in) == 0 && cap(c.in) > keepBufBytes {
		c.in = nil // one large command must not pin its memory
	}
	if cap(c.in)-len(c.in) < readSize {
		grown := make([]byte, len(c.in), max(2*cap(c.in), len(c.in)+readSize))
		copy(grown, c.in)
		c.in = grown
	}
	free := c.in[len(c.in):cap(c.in)]
	n, err := unix.Read(c.fd, free)
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
		c.readable = errors.Is(err, unix.EINTR)
	case err != nil:
		if !errors.Is(err, unix.ECONNRESET) {
			c.cl.log.Debug("connection closed", "err", err)
		}
		c.eof, c.readable = true, false
	case n == 0:
		c.eof, c.readable = true, false
	default:
		c.in = c.in[:len(c.in)+n]
		c.readable = n == len(free) // a short read drained the socket
		l.served = true
	}
}

// runCommands runs the whole commands in the buffer, as a goroutine's burst
// does, and reports whether there is anything to flush.
func (l *loop) runCommands(c *elConn) bool {
	cl := c.cl
	ran := false
	for c.rpos < len(c.in) && !cl.quit && len(cl.out.buf) < flushAt && cl.holdUntil.IsZero() && cl.blocked == nil {
		c.p.cr.preAuth = !cl.authed
		n, args, err := c.p.parse(c.in[c.rpos:])
		if err != nil {
			var pe *ProtocolError
			if errors.As(err, &pe) {
				cl.log.Info("protocol error; closing connection", "err", pe.Error())
				cl.out.error("ERR " + pe.Error())
			}
			c.rpos = len(c.in)
			c.closing = true
			return true
		}
		if n == 0 {
			break
		}
		if len(args) > 0 && l.s.wouldWait(cl, args) {
			// It reads what earlier writes wrote: park until they are
			// acknowledged rather than block the loop; it runs after.
			break
		}
		c.rpos += n
		c.cc.RequestRead()
		ran = true
		if len(args) > 0 {
			l.s.execute(cl, args, l.now)
			l.afterBusy()
		}
		if c.cc.Draining() {
			break
		}
	}
	if cl.quit {
		c.closing = true
	}
	return ran || len(cl.out.buf) > 0 || len(cl.pending) > 0 || cl.batchOpen || c.closing
}

// endBurst hands the burst's writes to the engine and parks the connection
// until they are acknowledged, or writes the replies now.
func (l *loop) endBurst(c *elConn) {
	cl := c.cl
	cl.closeBatch()
	if cl.quit {
		c.closing = true
	}
	if len(cl.pending) > 0 {
		// Awaited at the end of the loop's round (settleParked), with the
		// other connections parked in it: the first wait then seals one
		// engine group (one log write, one fsync) holding all their writes.
		c.parked = true
		l.parking = append(l.parking, c)
		return
	}
	l.startWrite(c)
}

// startWrite begins writing the replies collected; the connection then
// waits for its next request unless there is more to do.
func (l *loop) startWrite(c *elConn) {
	if ps := c.cl.ps; ps != nil && !ps.takeInto(&c.cl.out) {
		c.closing = true // over its output limit: its replies are dropped with it
		c.cl.out.buf = c.cl.out.buf[:0]
	}
	if len(c.cl.out.buf) > 0 {
		c.wbuf = c.cl.out.buf
	} else {
		l.becameIdle(c)
	}
}

func (l *loop) becameIdle(c *elConn) { c.cc.MarkIdle(l.now) }

// writeOut writes the pending replies; it reports whether they are all out.
func (l *loop) writeOut(c *elConn) bool {
	for len(c.wbuf) > 0 {
		n, err := unix.Write(c.fd, c.wbuf)
		if n > 0 {
			c.wbuf = c.wbuf[n:]
		}
		if errors.Is(err, unix.EAGAIN) {
			if c.wblocked == 0 {
				c.wblocked = l.now.UnixNano()
			}
			return false
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			c.cl.log.Debug("write failed", "err", err)
			l.close(c)
			return false
		}
	}
	c.wbuf, c.wblocked = nil, 0
	cl := c.cl
	if cl.ps != nil {
		cl.ps.wrote()
	}
	cl.out.buf = cl.out.buf[:0]
	if cap(cl.out.buf) > keepOutBytes {
		cl.out.buf = nil
	}
	if c.closing {
		l.close(c)
		return false
	}
	l.becameIdle(c)
	return true
}

// checkTimeouts closes the connections past their handshake, idle or
// write timeout.
func (l *loop) checkTimeouts(now time.Time) {
	o := l.s.opts
	nanos := now.UnixNano()
	for _, c := range l.conns {
		switch {
		case c.parked, c.cl.blocked != nil: // a blocked client waits as long as it asked
		case c.wblocked == 0 && (c.cl.subscribed() || c.cl.monitoring.Load()): // a subscriber or monitor waits for messages (Redis exempts them from timeout)
		case c.wblocked != 0:
			if o.WriteTimeout > 0 && nanos-c.wblocked > int64(o.WriteTimeout) {
				c.cl.log.Debug("write timed out; closing the connection")
				l.close(c)
			}
		case !c.cc.Served() && o.HandshakeTimeout > 0 && now.Sub(c.cc.Accepted()) > o.HandshakeTimeout:
			c.cl.log.Debug("no whole first request within the handshake timeout; closing the connection")
			l.close(c)
		case o.IdleTimeout > 0 && c.cc.IdleSince() != 0 && nanos-c.cc.IdleSince() > int64(o.IdleTimeout):
			c.cl.log.Debug("idle timeout; closing the connection")
			l.close(c)
		}
	}
}

// close closes the socket and releases the connection's place. A parked
// connection is closed once its writes are awaited (settleParked).
func (l *loop) close(c *elConn) {
	if c.closed {
		return
	}
	if c.parked {
		c.closing = true
		return
	}
	c.closed = true
	if l.conns[c.fd] == c {
		delete(l.conns, c.fd)
	}
	unix.Close(c.fd)
	l.s.dropClient(c.cl)
	c.cc.Finish()
}

// wouldWait reports whether execute would first await the connection's
// pending writes (the event loop parks the connection instead).
func (s *Server) wouldWait(cl *client, args [][]byte) bool {
	cmd := s.cmds.lookup(args[0])
	if cmd == nil || !cmd.arityOK(len(args)) || cl.quit || (!cl.authed && cmd.flags&flagNoAuth == 0) ||
		(cl.multi && cmd.flags&flagNoQueue == 0) {
		return false
	}
	pending := len(cl.pending)
	if cl.batchOpen && !isPlainSet(cmd, args) {
		pending++
	}
	return pending > 0 && (cmd.flags&flagDefers == 0 || pending >= maxPending)
}
