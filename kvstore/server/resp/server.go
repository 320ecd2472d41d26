// Package resp serves the engine over the Redis protocol (RESP2, and RESP3
// after HELLO 3), enough for redis-cli, redis-benchmark, go-redis v9 and
// redis-py to work unchanged.
// The commands served are the rows of the command table (commands.go);
// docs/kvstore-server.md lists them with their compatibility notes.
//
// Invariant: a write command is answered +OK (or its count) only after the
// engine acknowledged every write in it under its sync policy, and replies
// leave in the order commands arrived on the connection.
package resp

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/internal/connserver"
	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// Defaults of Options.
const (
	DefaultMaxArgs = 1 << 20
	// DefaultMaxQueuedCommands and DefaultMaxWatchedKeys are the defaults of
	// Options.MaxQueuedCommands and Options.MaxWatchedKeys.
	DefaultMaxQueuedCommands = 100000
	DefaultMaxWatchedKeys    = 10000
	DefaultMaxRequest        = 64 << 20
	DefaultMaxInline         = 64 << 10
	DefaultIdleTimeout       = 5 * time.Minute
	DefaultWriteTimeout      = 30 * time.Second
	DefaultMaxConns          = 10000
	// DefaultHandshakeTimeout bounds the wait for a connection's first command.
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultMaxScanCount     = 10000
	// DefaultIdlePoll is how long a loop polls before it sleeps (Options.IdlePoll).
	DefaultIdlePoll = 20 * time.Microsecond
)

// Options configure a Server. The zero value takes the defaults; a negative
// timeout or MaxConns means no limit.
type Options struct {
	// MaxBulkBytes bounds one argument (a key or a value); a larger bulk
	// length is a protocol error. The engine's DefaultMaxValueSize plus
	// 1 KiB when zero: set it from the engine's MaxValueSize.
	MaxBulkBytes int
	// MaxArgs bounds the arguments of one command (a larger multibulk
	// length is Redis's "Protocol error: invalid multibulk length" and the
	// connection is closed). 1Mi when zero.
	MaxArgs int
	// MaxQueuedCommands bounds the commands one MULTI may queue; the next
	// is refused (and EXEC aborts). DefaultMaxQueuedCommands when zero.
	// The queue's memory is bounded by MaxRequestBytes either way.
	MaxQueuedCommands int
	// MaxWatchedKeys bounds the keys one connection may WATCH.
	// DefaultMaxWatchedKeys when zero.
	MaxWatchedKeys int
	// MaxRequestBytes bounds the arguments of one command together (an
	// MSET of many values). 64 MiB, or room for two maximum bulks if that is
	// more, when zero.
	MaxRequestBytes int
	// MaxInlineBytes bounds an inline command line. 64 KiB when zero.
	MaxInlineBytes int
	// IdleTimeout closes a connection that sends no command for this long. 5m when zero.
	IdleTimeout time.Duration
	// WriteTimeout bounds writing replies to a slow reader. 30s when zero.
	WriteTimeout time.Duration
	// MaxConnsPerIP bounds the connections of one source address.
	// MaxConns/2 when zero; negative: no bound.
	MaxConnsPerIP int
	// HandshakeTimeout closes a connection that has not sent a whole first
	// request this long after connecting. 10s when zero; negative: none.
	HandshakeTimeout time.Duration
	// MaxConns bounds open connections (Redis's maxclients). 10000 when zero.
	MaxConns int
	// MaxScanCount caps SCAN's COUNT. 10000 when zero.
	MaxScanCount int
	// Password, when set, must be given with AUTH before any other command
	// (Redis's requirepass).
	Password string
	// AllowFlush lets FLUSHDB and FLUSHALL delete every key; they are
	// refused otherwise.
	AllowFlush bool
	// GoroutinePerConn serves every connection from a goroutine of its
	// own instead of the epoll event loops. The loops are the default on
	// Linux: a request costs one read and one write system call (a
	// goroutine's read adds one that finds nothing before it parks), and a
	// loop's round awaits the engine once for all its connections, as
	// Redis's turn fsyncs once. Elsewhere, and for connections that are not
	// plain TCP or Unix sockets (TLS), connections get a goroutine anyway.
	GoroutinePerConn bool
	// EventLoops is the number of event loops; GOMAXPROCS/2 (at least 1)
	// when zero, leaving CPU to the engine's and the runtime's goroutines.
	EventLoops int
	// IdlePoll is how long an event loop that has just served requests
	// keeps polling its sockets before it sleeps in epoll_wait, as
	// Seastar's reactor polls before it sleeps (--idle-poll-time-us): the
	// next request is then read without waking a sleeping thread, which
	// costs the client's system call more than the poll costs the server.
	// Only loops that leave a P free poll (fewer loops than GOMAXPROCS,
	// the default), so the poll never takes a CPU the runtime's goroutines
	// need; an idle server sleeps within IdlePoll of its last request.
	// IdlePoll is the longest poll: a loop whose clients come back later
	// than it halves its poll, down to none, and doubles it again when a
	// longer poll would have caught them (Linux's haltpoll governor).
	// DefaultIdlePoll when zero; negative: sleep at once (laptops, and
	// machines where every CPU is wanted elsewhere).
	IdlePoll time.Duration
	// BusyScriptTime is Redis's busy-reply-threshold (lua-time-limit): a
	// script running longer makes other clients get BUSY, and SCRIPT KILL
	// may stop it. DefaultBusyScriptTime when zero; negative: never busy.
	BusyScriptTime time.Duration
	// ScriptMaxMemory bounds what one script may allocate (bytes); a script
	// past it is stopped with an error. DefaultScriptMaxMemory when zero;
	// negative: no bound.
	ScriptMaxMemory int64
	// OnShutdown, when set, is what SHUTDOWN calls to stop the server (the
	// process's serve loop); SHUTDOWN is refused without it.
	OnShutdown func(context.Context)
	// FunctionsFile is where FUNCTION LOAD, DELETE, FLUSH and RESTORE
	// persist the function libraries (replaced atomically), read back by
	// NewServer; empty: functions live in memory only.
	FunctionsFile string
	// PubSubBufferHard and PubSubBufferSoft bound the messages waiting for
	// one subscriber (bytes): a subscriber past the hard bound, or past the
	// soft bound for longer than PubSubBufferSoftTime, is disconnected, so
	// that a subscriber that does not read can neither hold up PUBLISH nor
	// exhaust memory (Redis's client-output-buffer-limit pubsub 32mb 8mb 60,
	// the defaults). Negative: no bound.
	PubSubBufferHard     int
	PubSubBufferSoft     int
	PubSubBufferSoftTime time.Duration
	Logger               *slog.Logger
	Metrics              *metrics.Metrics
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxBulkBytes, kvstore.DefaultMaxValueSize+1<<10)
	def(&o.MaxArgs, DefaultMaxArgs)
	def(&o.MaxQueuedCommands, DefaultMaxQueuedCommands)
	def(&o.MaxWatchedKeys, DefaultMaxWatchedKeys)
	def(&o.MaxRequestBytes, max(DefaultMaxRequest, 2*o.MaxBulkBytes+1<<10))
	def(&o.MaxInlineBytes, DefaultMaxInline)
	def(&o.MaxScanCount, DefaultMaxScanCount)
	for _, p := range []struct {
		v *time.Duration
		d time.Duration
	}{{&o.IdleTimeout, DefaultIdleTimeout}, {&o.WriteTimeout, DefaultWriteTimeout}, {&o.HandshakeTimeout, DefaultHandshakeTimeout}, {&o.IdlePoll, DefaultIdlePoll}} {
		if *p.v == 0 {
			*p.v = p.d
		} else if *p.v < 0 {
			*p.v = 0
		}
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	} else if o.MaxConns < 0 {
		o.MaxConns = 0
	}
	if o.MaxConnsPerIP == 0 {
		o.MaxConnsPerIP = max(o.MaxConns/2, 1)
	} else if o.MaxConnsPerIP < 0 {
		o.MaxConnsPerIP = 0
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.BusyScriptTime == 0:
		o.BusyScriptTime = DefaultBusyScriptTime
	case o.BusyScriptTime < 0:
		o.BusyScriptTime = 0
	}
	for _, p := range []struct {
		v *int
		d int
	}{{&o.PubSubBufferHard, DefaultPubSubBufferHard}, {&o.PubSubBufferSoft, DefaultPubSubBufferSoft}} {
		switch {
		case *p.v == 0:
			*p.v = p.d
		case *p.v < 0:
			*p.v = 0
		}
	}
	if o.PubSubBufferSoftTime <= 0 {
		o.PubSubBufferSoftTime = DefaultPubSubBufferSoftTime
	}
	switch {
	case o.ScriptMaxMemory == 0:
		o.ScriptMaxMemory = DefaultScriptMaxMemory
	case o.ScriptMaxMemory < 0:
		o.ScriptMaxMemory = 0
	}
	return o
}

// Server serves RESP2 over the connections of its listeners.
type Server struct {
	store   backend.Store
	opts    Options
	conns   *connserver.Server
	auth    *authGuard
	cmds    *commandSet
	scripts *scriptEngine
	errors  errorStats // INFO errorstats (errorstats.go)
	limits  kvstore.Limits
	started time.Time

	loops *eventLoops // nil: a goroutine per connection

	blocks    blockRegistry    // clients in a blocking pop (cmd_block.go)
	pubsub    *pubsubHub       // subscriptions (pubsub.go)
	monitors  monitorHub       // MONITOR connections (monitor.go)
	tracker   tracker          // client-side caching (tracking.go)
	outboxes  sync.Map         // client id -> *subscriber, for another goroutine to push to
	encodings encodingSettings // CONFIG SET hash-max-listpack-entries... (encodings.go)
	// notifyFlags are the notify-keyspace-events classes (notify.go).
	notifyFlags atomic.Uint32
	notifyCfg   notifyConfig

	saving atomic.Bool    // a SAVE or BGSAVE runs
	bg     sync.WaitGroup // BGSAVE goroutines

	clientsMu sync.Mutex
	clients   map[int64]*client

	nextClientID atomic.Int64
	commands     atomic.Uint64
	connections  atomic.Uint64
	open         atomic.Int64
	port         atomic.Int64
}

// NewServer returns a server over store.
func NewServer(store backend.Store, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{store: store, opts: opts, auth: newAuthGuard(), cmds: newCommandSet(), limits: store.Limits(),
		started: time.Now(), clients: map[int64]*client{}, pubsub: newPubsubHub(opts)}
	s.tracker.keys, s.tracker.clients = map[string]map[int64]struct{}{}, map[int64]*client{}
	s.tracker.maxKeys.Store(defaultMaxTrackedKeys)
	s.scripts = newScriptEngine(s)
	if err := s.scripts.restoreFile(); err != nil {
		// Refuse to change the libraries rather than overwrite the file.
		opts.Logger.Error("cannot load the persisted functions; FUNCTION LOAD/DELETE/FLUSH/RESTORE are refused until it is fixed", "err", err)
		s.scripts.persistErr = err
	}
	s.conns = connserver.New(connserver.Options{
		MaxConns:         opts.MaxConns,
		MaxConnsPerIP:    opts.MaxConnsPerIP,
		HandshakeTimeout: opts.HandshakeTimeout,
		IdleTimeout:      opts.IdleTimeout,
		WriteTimeout:     opts.WriteTimeout,
		Reject:           []byte("-ERR max number of clients reached\r\n"),
		Transport:        metrics.RESP,
		Metrics:          opts.Metrics,
		Logger:           opts.Logger,
	}, s.serveConn)
	if !opts.GoroutinePerConn {
		s.loops = newEventLoops(s)
	}
	return s
}

// Serve accepts connections on ln until Shutdown, then returns an error
// for which IsClosed is true.
func (s *Server) Serve(ln net.Listener) error {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		s.port.Store(int64(a.Port))
	}
	return s.conns.Serve(ln)
}

// Shutdown stops accepting, answers the commands being served, closes every
// connection, and waits for that until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownScript(true) // a running script would hold its connection
	err := s.conns.Shutdown(ctx)
	if s.loops != nil {
		s.loops.stop()
	}
	s.bg.Wait()
	s.notifyCfg.once.Do(func() {}) // orders the read of remove after a CONFIG SET that set it
	if s.notifyCfg.remove != nil {
		s.notifyCfg.remove()
	}
	return err
}

// IsClosed reports whether err is what Serve returns after Shutdown.
func IsClosed(err error) bool { return errors.Is(err, connserver.ErrServerClosed) }

// client is one connection's state. The fields in clientState are read by
// CLIENT LIST from other connections; the rest belong to the connection's
// goroutine.
type client struct {
	clientState
	srv         *Server
	id          int64
	addr, laddr string
	created     time.Time
	conn        *connserver.Conn
	out         replyWriter
	call        call // reused for every command: no allocation per command
	quit        bool
	// CLIENT REPLY: replyOff drops every reply, replySkip the current
	// command's, replySkipNext arms replySkip for the next command.
	replyOff, replySkip, replySkipNext bool
	authed                             bool
	authFails                          int       // wrong passwords in a row
	holdUntil                          time.Time // nothing more runs or is answered before (auth.go); zero: none
	log                                *slog.Logger

	multi, multiDirty bool
	queued            []queuedCommand
	queuedBytes       int
	watched           map[string]uint64 // WATCHed key -> version

	pending []pendingWrite // logged, not yet awaited

	// blocked is the connection's blocking pop while it waits (cmd_block.go);
	// resume hands an event loop's connection back to its loop when the
	// pop fires (nil: a goroutine connection, which waits in the command);
	// flushOut writes a goroutine connection's replies before it waits.
	blocked  *blockedCall
	resume   func()
	flushOut func() bool

	// A run of plain SETs of one burst is collected in batch and handed to
	// the engine as one record before anything else runs (see openSet).
	batch      kvstore.Batch
	batchOpen  bool
	batchAt    int // where the run's first reply starts in out.buf
	batchBytes int
	msetBatch  kvstore.Batch // reused for MSET
	scratch    []byte        // reused for GET's value
	// scriptReply is where a script's reply is built, reused (script.go).
	scriptReply replyWriter

	// serveBusy, when set, serves the other connections of the event loop
	// that runs this connection's script once the script is busy.
	serveBusy func()

	// ps is the connection's pub/sub state from its first (un)subscribe
	// (pubsub.go). An event loop's connection sets pushWake (its loop
	// writes the outbox) and kill (its loop closes it); a goroutine
	// connection leaves them nil and gets a push writer.
	ps       *subscriber
	pushWake func()
	kill     func()

	// trk is the connection's client-side caching (tracking.go), changed
	// under tracker.mu; caching is CLIENT CACHING's answer for the next
	// command (1 yes, -1 no, 0 none).
	trk     tracking
	caching int8
}

// keepScratchBytes is the largest GET buffer a connection keeps.
const keepScratchBytes = 64 << 10

func (s *Server) register(cl *client) {
	s.clientsMu.Lock()
	s.clients[cl.id] = cl
	s.clientsMu.Unlock()
}

// clientByID is the connected client with that id, or nil.
func (s *Server) clientByID(id int64) *client {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	return s.clients[id]
}

func (s *Server) unregister(cl *client) {
	s.clientsMu.Lock()
	delete(s.clients, cl.id)
	s.clientsMu.Unlock()
}

// clientsSnapshot returns the connected clients in id order.
func (s *Server) clientsSnapshot() []*client {
	s.clientsMu.Lock()
	out := make([]*client, 0, len(s.clients))
	for _, cl := range s.clients {
		out = append(out, cl)
	}
	s.clientsMu.Unlock()
	slices.SortFunc(out, func(a, b *client) int { return cmp.Compare(a.id, b.id) })
	return out
}

// keepOutBytes is the largest reply buffer a connection keeps between bursts.
const keepOutBytes = 1 << 20

// flushAt is the reply bytes after which a burst's replies are written
// out before the burst ends.
const flushAt = 64 << 10

// newClient registers a connection's state.
func (s *Server) newClient(c *connserver.Conn) *client {
	s.connections.Add(1)
	s.open.Add(1)
	now := time.Now()
	cl := &client{
		srv:     s,
		id:      s.nextClientID.Add(1),
		addr:    c.RemoteAddr().String(),
		laddr:   c.LocalAddr().String(),
		created: now,
		conn:    c,
		authed:  s.opts.Password == "",
		log:     s.opts.Logger.With("transport", "resp", "remote", c.RemoteAddr().String()),
	}
	cl.out.stats, cl.scriptReply.stats = &s.errors, &s.errors
	cl.lastActive.Store(now.UnixNano())
	cl.multiLen.Store(-1)
	s.register(cl)
	return cl
}

// dropClient forgets a closed connection's state.
func (s *Server) dropClient(cl *client) {
	s.unblock(cl)
	s.pubsub.leaveAll(cl)
	s.stopMonitoring(cl)
	if cl.trk.on {
		s.setTracking(cl, tracking{})
	}
	s.outboxes.Delete(cl.id)
	s.unregister(cl)
	s.open.Add(-1)
}

func (s *Server) newCommandReader(br *bufio.Reader) *commandReader {
	return &commandReader{
		br:         br,
		maxBulk:    s.opts.MaxBulkBytes,
		maxArgs:    s.opts.MaxArgs,
		maxInline:  s.opts.MaxInlineBytes,
		maxRequest: s.opts.MaxRequestBytes,
	}
}

func (s *Server) serveConn(c *connserver.Conn) {
	if s.loops != nil && s.loops.adopt(c) {
		return // served by an event loop from now on
	}
	cl := s.newClient(c)
	defer s.dropClient(cl)
	in := s.newCommandReader(bufio.NewReaderSize(c, 16<<10))
	flush := func() bool {
		cl.closeBatch()
		if len(cl.pending) > 0 {
			// Let the other connections that have a request in hand log it
			// first: the write then leads a larger group (one log write and
			// fsync for many connections instead of one each).
			runtime.Gosched()
			cl.settle()
		}
		if ps := cl.ps; ps != nil {
			// The push writer writes too: one writer at a time, and the
			// messages queued go out behind these replies.
			ps.wmu.Lock()
			defer ps.wmu.Unlock()
			if !ps.takeInto(&cl.out) {
				return false // over its output limit: closed
			}
			defer ps.wrote()
		}
		if len(cl.out.buf) == 0 {
			return true
		}
		c.ArmWrite()
		_, err := c.Write(cl.out.buf)
		cl.out.buf = cl.out.buf[:0]
		if cap(cl.out.buf) > keepOutBytes {
			cl.out.buf = nil
		}
		if err != nil {
			cl.log.Debug("write failed", "err", err)
			return false
		}
		return true
	}
	cl.flushOut = flush
	for {
		// A subscriber waits for messages as long as it likes: Redis
		// exempts pub/sub clients from the idle timeout.
		c.ExemptFromIdleTimeout(cl.subscribed() || cl.monitoring.Load())
		if !c.AwaitRequest() {
			flush()
			return
		}
		in.preAuth = !cl.authed
		args, err := in.readCommand()
		c.RequestRead()
		if err == nil && len(args) > 0 {
			s.execute(cl, args, time.Now())
			if !cl.holdUntil.IsZero() {
				// A wrong password: its reply, and what follows, wait.
				time.Sleep(time.Until(cl.holdUntil))
				cl.holdUntil = time.Time{}
			}
		}
		if err != nil {
			var pe *ProtocolError
			if errors.As(err, &pe) {
				cl.log.Info("protocol error; closing connection", "err", pe.Error())
				cl.out.error("ERR " + pe.Error())
			} else if !errors.Is(err, io.EOF) && !c.Draining() {
				cl.log.Debug("connection closed", "err", err)
			}
			flush() // the replies to the commands before the failure
			return
		}
		// Flush unless the next command is already here: never leave replies
		// waiting while the server waits for the network.
		if cl.quit || len(cl.out.buf) >= flushAt || !in.hasWholeCommand() || c.Draining() {
			if !flush() || cl.quit {
				return
			}
		}
	}
}
