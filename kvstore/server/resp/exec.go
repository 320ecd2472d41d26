package resp

// Running a command: look it up in the table, check arity and AUTH, queue
// it when the connection is inside MULTI, else run its handler.
//
// Invariant: a command that reads and then writes (INCR, SET NX, DEL,
// RENAME, EXEC...) does both inside one atomic update, so no write of
// another client is ordered between its read and its write, and its writes
// are one engine batch (one record, one fsync).

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// call is one command being run: its arguments, its connection, where its
// reply goes and, inside EXEC, the transaction it runs in.
type call struct {
	s    *Server
	cl   *client
	cmd  *command
	args [][]byte
	w    *replyWriter
	tx   txn // non-nil inside EXEC
	// serving: a blocked command run inside the update of the command that
	// made its key ready; answered is its outcome (cmd_block.go).
	serving, answered bool
	digits            [20]byte // an integer's digits on their way to the engine (incrBy)
	fromScript        bool     // a script's redis.call (SORT orders a set for it)
}

// txn is what a command sees of the keyspace inside one atomic update
// (*kvstore.Tx).
type txn interface {
	Get(key []byte) ([]byte, error)
	ExpiresAt(key []byte) (time.Time, bool)
	// Expiry is existence and expiry in one lookup (see kvstore.DB.Expiry).
	Expiry(key []byte) (at time.Time, hasTTL bool, err error)
	Version(key []byte) uint64
	Now() time.Time
	Set(key, value []byte) error
	SetWithTTL(key, value []byte, expireAt time.Time) error
	// SetKeepTTL sets the value and keeps the key's expiry (INCR, APPEND).
	SetKeepTTL(key, value []byte) error
	Delete(key []byte) (existed bool, err error)
	Expire(key []byte, at time.Time) (existed bool, err error)
	Persist(key []byte) (hadTTL bool, err error)
	collTxn // hashes, lists, sets, sorted sets (cmd_types.go)
}

var _ txn = (*kvstore.Tx)(nil)

// cmdError is an error reply of a command (ERR ..., WRONGTYPE ...), as
// opposed to an engine failure.
type cmdError string

func (e cmdError) Error() string { return string(e) }

const (
	errNotInteger = cmdError("ERR value is not an integer or out of range")
	errNotFloat   = cmdError("ERR value is not a valid float")
	errOverflow   = cmdError("ERR increment or decrement would overflow")
	errSyntax     = cmdError("ERR syntax error")
	errNoSuchKey  = cmdError("ERR no such key")
)

// fail writes err as the command's error reply.
func (c *call) fail(err error) {
	var ce cmdError
	if errors.As(err, &ce) {
		c.w.error(string(ce))
		return
	}
	engineError(c.w, err)
}

// get reads key through the transaction when there is one.
func (c *call) get(key []byte) ([]byte, error) {
	if c.tx != nil {
		return c.tx.Get(key)
	}
	return c.s.store.Get(key)
}

// noSyncWait: a connection's writes take their place in the log in the order
// they arrive and are awaited once per burst (see client.settle).
var noSyncWait = kvstore.WriteOptions{NoSyncWait: true}

// update runs fn atomically: inside EXEC's transaction when there is one,
// else as an engine update of its own whose durability the connection
// awaits before the reply leaves.
func (c *call) update(fn func(tx txn) error) error {
	if c.tx != nil {
		return fn(c.tx)
	}
	var served blockedServe
	var notes []keyNote
	wait, err := c.s.store.UpdateWith(noSyncWait, func(tx *kvstore.Tx) error {
		ut := &updateTx{txn: tx, s: c.s}
		if err := fn(ut); err != nil {
			return err
		}
		served = c.s.serveBlocked(ut) // the clients blocked on what it made ready (cmd_block.go)
		notes = ut.notes
		return nil
	})
	c.s.blocks.resolve(served, wait, err)
	if err != nil {
		return err
	}
	c.s.publishNotes(notes) // keyspace notifications (notify.go)
	c.cl.pend(wait, len(c.w.buf))
	return nil
}

// apply commits a batch in the connection's order; its durability is
// awaited before the reply leaves.
func (c *call) apply(b *kvstore.Batch) error {
	wait, err := c.s.store.Apply(b, noSyncWait)
	if err != nil {
		return err
	}
	c.cl.pend(wait, len(c.w.buf))
	return nil
}

// Bounds on a run of plain SETs collected into one batch.
const (
	maxRunOps   = 1024
	maxRunBytes = 1 << 20
)

func isPlainSet(cmd *command, args [][]byte) bool { return cmd.name == "set" && len(args) == 3 }

// openSet adds a plain SET to the connection's run and answers +OK, which
// leaves only once the run is logged and durable. Sizes are checked here,
// so that the engine refuses a run only when it cannot write at all.
func (c *call) openSet(key, value []byte) {
	cl, lim := c.cl, c.s.limits
	switch {
	case len(key) == 0:
		c.fail(kvstore.ErrEmptyKey)
		return
	case len(key) > lim.MaxKeySize:
		c.fail(fmt.Errorf("%w: %d bytes, the limit is %d", kvstore.ErrKeyTooLarge, len(key), lim.MaxKeySize))
		return
	case len(value) > lim.MaxValueSize:
		c.fail(fmt.Errorf("%w: %d bytes, the limit is %d", kvstore.ErrValueTooLarge, len(value), lim.MaxValueSize))
		return
	}
	if !cl.batchOpen {
		cl.batch.Reset()
		cl.batchOpen, cl.batchAt, cl.batchBytes = true, len(c.w.buf), 0
	}
	cl.batch.Set(key, value)
	cl.batchBytes += len(key) + len(value)
	c.w.ok()
	if cl.batch.Len() >= maxRunOps || cl.batchBytes >= maxRunBytes {
		cl.closeBatch()
	}
}

// closeBatch hands the run of SETs to the engine as one record, in the
// connection's order. If the engine refuses it, the run's replies become
// that error and the connection closes after the flush.
func (cl *client) closeBatch() bool {
	if !cl.batchOpen {
		return !cl.quit
	}
	cl.batchOpen = false
	wait, err := cl.srv.store.Apply(&cl.batch, noSyncWait)
	if err != nil {
		cl.out.buf = cl.out.buf[:cl.batchAt]
		engineError(&cl.out, err)
		cl.quit = true
		return false
	}
	cl.pend(wait, cl.batchAt)
	return true
}

// pendingWrite is a write logged but not yet known durable, and where its
// reply starts in the reply buffer.
type pendingWrite struct {
	wait func() error
	at   int
}

// maxPending bounds the writes of one connection awaited together.
const maxPending = 1024

func (cl *client) pend(wait func() error, at int) {
	cl.pending = append(cl.pending, pendingWrite{wait: wait, at: at})
}

// settle waits for the connection's pending writes, oldest first. On a
// failure the replies from that write on are replaced by its error and the
// connection closes after the flush: a reply never claims a write the
// engine did not acknowledge. (Later writes fail too: the engine fails
// every group after a failed one.)
func (cl *client) settle() bool {
	ok := true
	for _, p := range cl.pending {
		err := p.wait() // every wait is called, even after a failure
		if err != nil && ok {
			ok = false
			cl.out.buf = cl.out.buf[:p.at]
			engineError(&cl.out, err)
			cl.quit = true
			cl.log.Error("write failed after it was logged; closing the connection", "err", err)
		}
	}
	clear(cl.pending)
	cl.pending = cl.pending[:0]
	return ok
}

// execute runs one command, received at start, and writes its reply; a
// panic becomes an error reply and the connection carries on. (An event
// loop passes the time it read once for its whole round.)
func (s *Server) execute(cl *client, args [][]byte, start time.Time) {
	op := metrics.OpOther
	errs := cl.out.errs
	defer func() {
		if p := recover(); p != nil {
			cl.log.Error("command panicked", "command", printable(args[0]), "panic", fmt.Sprint(p))
			cl.out.error("ERR internal error")
		}
		s.commands.Add(1)
		s.opts.Metrics.Request(metrics.RESP, op, start, cl.out.errs > errs)
	}()
	cl.lastActive.Store(start.UnixNano())
	if ps := cl.ps; ps != nil && ps.queued.Load() {
		// Redis writes a message into its receivers' output at PUBLISH:
		// what was published before this command ran goes out before its
		// reply (a subscriber's PING after a PUBLISH is answered after the
		// message). A dropped subscriber is closed at the flush.
		ps.takeInto(&cl.out)
	}
	cmd := s.cmds.lookup(args[0])
	if cmd == nil {
		unknownCommand(&cl.out, args)
		cl.multiDirty = cl.multi
		return
	}
	op = cmd.op
	cl.lastCmd.Store(cmd)
	if !cmd.arityOK(len(args)) {
		cmd.stats.rejected.Add(1)
		wrongArgs(&cl.out, cmd.name)
		cl.multiDirty = cl.multi
		return
	}
	if cl.quit {
		return // a write failed: nothing more runs on this connection
	}
	if !cl.authed && cmd.flags&flagNoAuth == 0 {
		cmd.stats.rejected.Add(1)
		cl.out.error("NOAUTH Authentication required.")
		cl.multiDirty = cl.multi
		return
	}
	if cmd.flags&flagPubSub == 0 && cl.subscribedMode() {
		cmd.stats.rejected.Add(1)
		cl.out.error(subscribedModeError(fullName(cmd, args)))
		return
	}
	if busy := s.busyReply(cmd, args); busy != "" {
		cmd.stats.rejected.Add(1)
		if cmd.name == "exec" {
			// Redis's execCommandAbort: the transaction goes, with the reason.
			cl.resetMulti()
			cl.watched = nil
			cl.out.error("EXECABORT Transaction discarded because of: " + busy)
			return
		}
		cl.out.error(busy)
		cl.multiDirty = cl.multi
		return
	}
	if cl.multi && cmd.flags&flagNoQueue == 0 {
		s.queue(cl, cmd, args)
		return
	}
	// A run of plain SETs goes to the engine before anything else runs.
	if cl.batchOpen && !isPlainSet(cmd, args) {
		if !cl.closeBatch() {
			return
		}
	}
	// A write may leave its durability pending; anything else reads what
	// the connection wrote before, so that must be acknowledged first.
	if len(cl.pending) > 0 && (cmd.flags&flagDefers == 0 || len(cl.pending) >= maxPending) {
		if !cl.settle() {
			return
		}
	}
	c := &cl.call
	*c = call{s: s, cl: cl, cmd: cmd, args: args, w: &cl.out}
	mark := len(cl.out.buf)
	runCounted(c)
	if cl.caching != 0 && !cl.multi && cmd.name != "client" {
		cl.caching = 0 // CLIENT CACHING holds for the next command or transaction
	}
	cl.dropReply(cmd, mark) // CLIENT REPLY OFF|SKIP (conn.go)
	*c = call{}
}

// queuedOverhead is what a queued command costs beyond its argument bytes
// (the slice headers), charged against MaxRequestBytes so that many tiny
// commands are bounded too.
const (
	queuedCmdOverhead = 48
	queuedArgOverhead = 24
)

// queue adds a command to the connection's transaction.
func (s *Server) queue(cl *client, cmd *command, args [][]byte) {
	if cmd.flags&flagNoMulti != 0 {
		cl.out.error("ERR Command not allowed inside a transaction")
		cl.multiDirty = true
		return
	}
	size := queuedCmdOverhead
	for _, a := range args {
		size += len(a) + queuedArgOverhead
	}
	switch {
	case len(cl.queued) >= s.opts.MaxQueuedCommands:
		cl.out.error(fmt.Sprintf("ERR max queued commands reached: a transaction holds at most %d (devkit kv serve --max-queued-commands)", s.opts.MaxQueuedCommands))
		cl.multiDirty = true
		return
	case cl.queuedBytes+size > s.opts.MaxRequestBytes:
		cl.out.error(fmt.Sprintf("ERR max queued bytes reached: a transaction holds at most %d bytes of arguments", s.opts.MaxRequestBytes))
		cl.multiDirty = true
		return
	}
	q := queuedCommand{cmd: cmd, args: make([][]byte, len(args))}
	for i, a := range args {
		q.args[i] = bytes.Clone(a)
	}
	cl.queued = append(cl.queued, q)
	cl.queuedBytes += size
	cl.multiLen.Store(int64(len(cl.queued)))
	cl.out.simple("QUEUED")
}

type queuedCommand struct {
	cmd  *command
	args [][]byte
}

func (cl *client) resetMulti() {
	cl.multi, cl.multiDirty = false, false
	cl.queued, cl.queuedBytes = nil, 0
	cl.multiLen.Store(-1)
}

func cmdMulti(c *call) {
	if c.cl.multi {
		c.w.error("ERR MULTI calls can not be nested")
		return
	}
	c.cl.multi = true
	c.cl.multiLen.Store(0)
	c.w.ok()
}

func cmdDiscard(c *call) {
	if !c.cl.multi {
		c.w.error("ERR DISCARD without MULTI")
		return
	}
	c.cl.resetMulti()
	c.cl.watched = nil
	c.w.ok()
}

// cmdExec runs the queued commands inside one atomic update: their writes
// are one engine batch, logged as one record (one fsync), and no other
// client's write comes between them. A command that fails at run time
// (WRONGTYPE, not an integer) answers its error inside the reply and the
// others run, as in Redis; a command refused at queue time discards the
// whole transaction (EXECABORT).
//
// A command that reads or changes the store outside a transaction (KEYS,
// SCAN, DBSIZE, INFO, CONFIG, FLUSHDB, BGSAVE: no flagTx) runs between
// atomic updates, once the writes queued before it are applied, so that it
// sees them; a transaction that holds one is atomic in parts.
func cmdExec(c *call) {
	cl := c.cl
	if !cl.multi {
		c.w.error("ERR EXEC without MULTI")
		return
	}
	queued, dirty, watched := cl.queued, cl.multiDirty, cl.watched
	cl.resetMulti()
	cl.watched = nil
	if dirty {
		c.w.error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	replies := replyWriter{stats: &c.s.errors, resp3: c.w.resp3}
	// atomic runs seg in one update, after checking the watched keys if
	// check; false: the reply (an error or the nil of an abort) is written.
	atomic := func(seg []queuedCommand, check bool) bool {
		mark, aborted := len(replies.buf), false
		err := c.update(func(tx txn) error {
			replies.buf, aborted = replies.buf[:mark], false
			if check {
				for key, version := range watched {
					if tx.Version([]byte(key)) != version {
						aborted = true // a watched key changed: nothing runs
						return nil
					}
				}
			}
			for _, q := range seg {
				sub := call{s: c.s, cl: cl, cmd: q.cmd, args: q.args, w: &replies, tx: tx}
				runCounted(&sub)
			}
			return nil
		})
		switch {
		case err != nil:
			c.fail(err)
			return false
		case aborted:
			c.w.nullArray()
			return false
		}
		return true
	}
	check := true
	if len(queued) == 0 || queued[0].cmd.flags&flagTx == 0 {
		if !atomic(nil, true) {
			return
		}
		check = false
	}
	for i := 0; i < len(queued); {
		j := i
		for j < len(queued) && queued[j].cmd.flags&flagTx != 0 {
			j++
		}
		if j > i {
			if !atomic(queued[i:j], check) {
				return
			}
			check, i = false, j
			continue
		}
		// Outside the atomic update: after the writes before it.
		if len(cl.pending) > 0 && !cl.settle() {
			return // the failed write's error is the reply
		}
		q := queued[i]
		sub := call{s: c.s, cl: cl, cmd: q.cmd, args: q.args, w: &replies}
		runCounted(&sub)
		i++
	}
	c.w.array(len(queued))
	c.w.buf = append(c.w.buf, replies.buf...)
}

// cmdWatch remembers each key's version; EXEC runs only if none changed.
func cmdWatch(c *call) {
	if c.cl.multi {
		c.w.error("ERR WATCH inside MULTI is not allowed")
		return
	}
	if c.cl.watched == nil {
		c.cl.watched = map[string]uint64{}
	}
	fresh := 0 // keys not watched yet (a repeated key is one)
	seen := make(map[string]struct{}, len(c.args)-1)
	for _, key := range c.args[1:] {
		if _, ok := c.cl.watched[string(key)]; !ok {
			if _, dup := seen[string(key)]; !dup {
				seen[string(key)] = struct{}{}
				fresh++
			}
		}
	}
	if limit := c.s.opts.MaxWatchedKeys; len(c.cl.watched)+fresh > limit {
		c.w.error(fmt.Sprintf("ERR max watched keys reached: a connection watches at most %d (devkit kv serve --max-watched-keys)", limit))
		return
	}
	for _, key := range c.args[1:] {
		if _, ok := c.cl.watched[string(key)]; !ok {
			c.cl.watched[string(key)] = c.s.store.Version(key)
		}
	}
	c.w.ok()
}

func cmdUnwatch(c *call) {
	c.cl.watched = nil
	c.w.ok()
}

// clientState is what CLIENT LIST reads of a connection from other goroutines.
type clientState struct {
	name       atomic.Pointer[string]
	lastCmd    atomic.Pointer[command]
	lastActive atomic.Int64 // unix nanos of the last command
	multiLen   atomic.Int64 // -1 outside MULTI
	// subscriptions to channels, patterns and shard channels (pubsub.go)
	subs, psubs, ssubs atomic.Int32
	// proto is the protocol the connection speaks (HELLO): 2 or 3; 0 is 2.
	// Its replies follow out.resp3, the connection's own copy.
	proto atomic.Int32
	// monitoring: the connection is a monitor (MONITOR, monitor.go).
	monitoring atomic.Bool
	// trackFlags is CLIENT LIST's view of its tracking: 0 off, 1 on, 2 BCAST.
	trackFlags atomic.Int32
}

// engineError writes an engine error in Redis's style.
func engineError(w *replyWriter, err error) {
	if errors.Is(err, kvstore.ErrWrongType) {
		w.error(kvstore.ErrWrongType.Error()) // Redis's own text
		return
	}
	switch backend.Code(err) {
	case backend.CodeReadOnly:
		// Redis answers writes it cannot persist with MISCONF.
		w.error("MISCONF " + err.Error())
	default:
		w.error("ERR " + err.Error())
	}
}
