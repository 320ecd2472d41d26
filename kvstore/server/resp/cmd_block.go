package resp

// Blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX, BZMPOP.
//
// Invariant: a client blocks (registers) inside the atomic update in which
// it found nothing, and the command that makes a key ready (LPUSH, ZADD,
// LMOVE, RESTORE, RENAME, EXEC, a script...) serves the clients blocked on
// it inside its own atomic update, in the order they blocked (FIFO), as
// Redis serves them after the command and before the next: so no push
// falls between a client's empty try and its registration, and once the
// push is answered its clients have taken their elements (a following
// command sees that). A served client's reply leaves on its own connection
// once the update is acknowledged. A client that left or was unblocked is
// out of the registry before it could be served; inside MULTI/EXEC a
// blocking pop never blocks: it answers at once.

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/devkit-go/devkit/kvstore"
)

// blockRegistry holds the clients blocked on each key, in FIFO order.
type blockRegistry struct {
	count atomic.Int64 // waiters registered: serving is free when none
	mu    sync.Mutex
	byKey map[string][]*waiter
}

// waiter is one blocked client's entry. Its fields after wake and serve
// are guarded by the registry's mu.
type waiter struct {
	keys     []string
	clientID int64
	// wake tells the client to look at its entry again (served, unblocked,
	// released); called without mu held, it must not block.
	wake func()
	// serve runs the blocked command once inside the update of the command
	// that made one of its keys ready, writing its reply to w; it reports
	// whether it answered (false: nothing there for it).
	serve func(tx txn, w *replyWriter) bool
	resp3 bool // the blocked client's protocol, which serve's reply follows

	registered bool
	claimed    bool         // being served inside an update not yet finished
	served     *servedReply // that update's outcome: the reply to send
	ended      unblockMode  // CLIENT UNBLOCK ended the wait
}

// servedReply is the reply of a client served inside another command's
// update, and that update's wait for durability.
type servedReply struct {
	buf  []byte
	errs int
	wait func() error
}

// unblockMode is how CLIENT UNBLOCK ends a wait: as its timeout or with
// an UNBLOCKED error.
type unblockMode int

const (
	unblockNone unblockMode = iota
	unblockTimeout
	unblockError
)

// unblockClient ends the wait of the client with the given id (CLIENT
// UNBLOCK) and reports whether it was blocked.
func (r *blockRegistry) unblockClient(id int64, mode unblockMode) bool {
	r.mu.Lock()
	var found *waiter
	for _, q := range r.byKey {
		for _, w := range q {
			if w.clientID == id && found == nil {
				found = w
			}
		}
	}
	if found != nil && found.ended == unblockNone {
		found.ended = mode
	}
	r.mu.Unlock()
	if found == nil {
		return false
	}
	found.wake()
	return true
}

// add registers w at the end of the queue of each of its keys.
func (r *blockRegistry) add(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = map[string][]*waiter{}
	}
	for _, k := range w.keys {
		r.byKey[k] = append(r.byKey[k], w)
	}
	w.registered = true
	r.count.Add(1)
}

// remove drops w (a no-op when it is not registered).
func (r *blockRegistry) remove(w *waiter) {
	r.mu.Lock()
	r.removeLocked(w)
	r.mu.Unlock()
}

func (r *blockRegistry) removeLocked(w *waiter) {
	if !w.registered {
		return
	}
	for _, k := range w.keys {
		q := r.byKey[k]
		for i, x := range q {
			if x == w {
				q = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(r.byKey, k)
		} else {
			r.byKey[k] = q
		}
	}
	w.registered = false
	r.count.Add(-1)
}

// queue is a copy of the clients blocked on key, oldest first.
func (r *blockRegistry) queue(key string) []*waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*waiter(nil), r.byKey[key]...)
}

// claim marks w as being served, unless it left, was unblocked or is
// served already.
func (r *blockRegistry) claim(w *waiter) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !w.registered || w.claimed || w.served != nil || w.ended != unblockNone {
		return false
	}
	w.claimed = true
	return true
}

func (r *blockRegistry) unclaim(w *waiter) {
	r.mu.Lock()
	w.claimed = false
	r.mu.Unlock()
}

// blockedServe is what an update served: the clients and their replies.
type blockedServe struct {
	waiters []*waiter
	replies []replyWriter
}

// resolve ends the claims of an update once it has its place in the log:
// each client served gets its reply and the update's wait (err == nil), or
// waits on (the update failed, nothing it did happened); each is woken.
func (r *blockRegistry) resolve(sv blockedServe, wait func() error, err error) {
	if len(sv.waiters) == 0 {
		return
	}
	r.mu.Lock()
	for i, w := range sv.waiters {
		w.claimed = false
		if err == nil {
			w.served = &servedReply{buf: sv.replies[i].buf, errs: sv.replies[i].errs, wait: wait}
			r.removeLocked(w)
		}
	}
	r.mu.Unlock()
	for _, w := range sv.waiters {
		w.wake()
	}
}

// blockOutcome is what a blocked client finds when it looks at its entry.
type blockOutcome int

const (
	blockWaits    blockOutcome = iota // nothing yet (or an update serving it has not finished)
	blockServed                       // served: send the reply
	blockEnded                        // CLIENT UNBLOCK
	blockTimedOut                     // its deadline passed
)

// outcome looks at w; an ended or timed-out client leaves the registry in
// the same step, so no update can serve it afterwards.
func (r *blockRegistry) outcome(w *waiter, expired bool) (blockOutcome, *servedReply, unblockMode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case w.served != nil:
		return blockServed, w.served, unblockNone
	case w.claimed:
		return blockWaits, nil, unblockNone
	case w.ended != unblockNone:
		r.removeLocked(w)
		return blockEnded, nil, w.ended
	case expired:
		r.removeLocked(w)
		return blockTimedOut, nil, unblockNone
	}
	return blockWaits, nil, unblockNone
}

// updateTx is the transaction of a top-level update (call.update): the
// engine's, and the keys its commands made ready for blocked clients
// (markReady), which the update serves before it ends (serveBlocked).
// EXEC's queued commands and a script's calls share it.
type updateTx struct {
	txn
	ready [][]byte
	s     *Server   // nil: no keyspace notifications
	notes []keyNote // the update's keyspace notifications (notify.go)
}

// markReady notes that key may now hold what a blocked client waits for
// (a list or a sorted set was pushed to, stored, restored, renamed...).
func markReady(tx txn, key []byte) {
	if ut, ok := tx.(*updateTx); ok {
		ut.ready = append(ut.ready, key)
	}
}

// readyAfter is markReady(tx, key) when err is nil, and err.
func readyAfter(tx txn, key []byte, err error) error {
	if err == nil {
		markReady(tx, key)
	}
	return err
}

// serveBlocked serves, inside ut's update, the clients blocked on the keys
// it made ready: for each key, oldest client first, each that finds
// something of its kind takes it; a client served by a move makes its
// destination ready in turn (Redis's handleClientsBlockedOnKeys).
func (s *Server) serveBlocked(ut *updateTx) blockedServe {
	var sv blockedServe
	if s.blocks.count.Load() == 0 {
		return sv
	}
	for i := 0; i < len(ut.ready); i++ {
		for _, w := range s.blocks.queue(string(ut.ready[i])) {
			if !s.blocks.claim(w) {
				continue
			}
			rw := replyWriter{stats: &s.errors, resp3: w.resp3}
			if !w.serve(ut, &rw) {
				s.blocks.unclaim(w)
				continue
			}
			sv.waiters = append(sv.waiters, w)
			sv.replies = append(sv.replies, rw)
		}
	}
	return sv
}

// blockedCall is a connection's blocked command (client.blocked).
type blockedCall struct {
	w        *waiter
	args     [][]byte // the command, copied: the read buffer moves on
	deadline time.Time
	fired    atomic.Bool   // woken or timed out: the event loop runs it again
	signal   chan struct{} // goroutine connections wait on it
	timer    *time.Timer
}

// expired reports whether the blocked command's timeout has passed.
func (bc *blockedCall) expired() bool {
	return !bc.deadline.IsZero() && !time.Now().Before(bc.deadline)
}

// unblock ends the connection's blocked command, if any.
func (s *Server) unblock(cl *client) {
	bc := cl.blocked
	if bc == nil {
		return
	}
	cl.blocked = nil
	if bc.timer != nil {
		bc.timer.Stop()
	}
	s.blocks.remove(bc.w)
}

// parseTimeout parses a blocking command's timeout in seconds (0: none).
func (c *call) parseTimeout(b []byte) (time.Duration, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strings.TrimSpace(string(b)) != string(b) {
		c.w.error("ERR timeout is not a float or out of range")
		return 0, false
	}
	ms := math.Ceil(f * 1000)
	if ms < 0 {
		c.w.error("ERR timeout is negative")
		return 0, false
	}
	if ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		ms = float64(math.MaxInt64 / int64(time.Millisecond))
	}
	return time.Duration(ms) * time.Millisecond, true
}

// blockPop is one non-blocking attempt of a blocking command inside tx: it
// writes its reply to w and reports whether it answered (an error is
// answered too). woken: serving a blocked client, where a key of another
// kind is passed over, as Redis serves a blocked client only from a key of
// its kind.
type blockPop func(tx txn, woken bool, w *replyWriter) (bool, error)

// blockOn runs a blocking command: pop is one attempt; timedOut answers
// the timeout (inMulti: at once, inside a transaction).
func (c *call) blockOn(keys [][]byte, timeout time.Duration, pop blockPop, timedOut func(inMulti bool)) {
	if c.serving { // inside the update of the command that made a key ready
		answered, err := pop(c.tx, true, c.w)
		if err != nil {
			c.fail(err)
		}
		c.answered = answered || err != nil
		return
	}
	s, cl := c.s, c.cl
	if bc := cl.blocked; bc != nil { // woken or timed out: the event loop runs it again
		bc.fired.Store(false)
		c.blockedOutcome(bc, timedOut)
		return
	}
	if c.tx != nil {
		answered, err := pop(c.tx, false, c.w)
		switch {
		case err != nil:
			c.fail(err)
		case !answered:
			timedOut(true)
		}
		return
	}
	bc := &blockedCall{args: make([][]byte, len(c.args))}
	for i, a := range c.args {
		bc.args[i] = append([]byte(nil), a...)
	}
	if timeout > 0 {
		bc.deadline = time.Now().Add(timeout)
	}
	w := &waiter{keys: make([]string, len(keys)), clientID: cl.id, resp3: c.w.resp3}
	for i, k := range keys {
		w.keys[i] = string(k)
	}
	cmd, args := c.cmd, bc.args
	w.serve = func(tx txn, rw *replyWriter) bool {
		sub := call{s: s, cl: cl, cmd: cmd, args: args, w: rw, tx: tx, serving: true}
		cmd.run(&sub)
		return sub.answered
	}
	bc.w = w
	resume := cl.resume
	if resume == nil {
		bc.signal = make(chan struct{}, 1)
		w.wake = func() {
			select {
			case bc.signal <- struct{}{}:
			default:
			}
		}
	} else {
		w.wake = func() {
			bc.fired.Store(true)
			resume()
		}
	}
	// The try and the registration are one update: a push is ordered
	// before the try (found) or after the registration (served).
	out := replyWriter{stats: &c.s.errors, resp3: c.w.resp3}
	answered, registered := false, false
	err := c.update(func(tx txn) (err error) {
		out.buf, out.errs = out.buf[:0], 0
		if answered, err = pop(tx, false, &out); err != nil || answered {
			return err
		}
		s.blocks.add(w)
		registered = true
		return nil
	})
	switch {
	case err != nil:
		if registered {
			s.blocks.remove(w)
		}
		c.fail(err)
		return
	case answered:
		c.w.buf = append(c.w.buf, out.buf...)
		c.w.errs += out.errs
		return
	}
	cl.blocked = bc
	if resume != nil {
		if timeout > 0 {
			bc.timer = time.AfterFunc(timeout, func() {
				bc.fired.Store(true)
				resume()
			})
		}
		return // the event loop runs the command again when it fires
	}
	if cl.flushOut != nil && !cl.flushOut() { // the replies before it leave first
		s.unblock(cl)
		cl.quit = true
		return
	}
	c.waitBlocked(bc, timedOut)
}

// blockedOutcome answers a blocked command that fired, if it can: its
// reply when it was served, the end CLIENT UNBLOCK asked for, or its
// timeout; it reports whether it answered.
func (c *call) blockedOutcome(bc *blockedCall, timedOut func(bool)) bool {
	o, sr, mode := c.s.blocks.outcome(bc.w, bc.expired())
	switch o {
	case blockServed:
		c.s.unblock(c.cl)
		// Its reply leaves once the update that served it is acknowledged.
		c.cl.pend(sr.wait, len(c.w.buf))
		c.w.buf = append(c.w.buf, sr.buf...)
		c.w.errs += sr.errs
	case blockEnded:
		c.s.unblock(c.cl)
		c.answerUnblocked(mode, timedOut)
	case blockTimedOut:
		c.s.unblock(c.cl)
		timedOut(false)
	default:
		return false
	}
	return true
}

// waitBlocked blocks a goroutine connection until its command answers,
// times out or the server drains.
func (c *call) waitBlocked(bc *blockedCall, timedOut func(bool)) {
	var expire <-chan time.Time
	if !bc.deadline.IsZero() {
		t := time.NewTimer(time.Until(bc.deadline))
		defer t.Stop()
		expire = t.C
	}
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-bc.signal:
		case <-expire:
			expire = nil // an update serving it may still finish: its wake comes on signal
		case <-poll.C:
			if c.cl.conn.Draining() || peerClosed(c.cl.conn.Conn) {
				c.s.unblock(c.cl)
				c.cl.quit = true
				return
			}
			continue
		}
		if c.blockedOutcome(bc, timedOut) {
			return
		}
	}
}

// answerUnblocked answers a wait that CLIENT UNBLOCK ended.
func (c *call) answerUnblocked(mode unblockMode, timedOut func(bool)) {
	if mode == unblockError {
		c.w.error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
		return
	}
	timedOut(false)
}

// listKinds checks that each key is a list or missing (Redis answers
// WRONGTYPE at once for a blocking pop on another kind).
func listKinds(tx txn, keys [][]byte, want kvstore.Kind) error {
	for _, k := range keys {
		if kind := tx.Kind(k); kind != kvstore.KindNone && kind != want {
			return kvstore.ErrWrongType
		}
	}
	return nil
}

// cmdBPop answers BLPOP and BRPOP key... timeout.
func cmdBPop(c *call) {
	keys := c.args[1 : len(c.args)-1]
	timeout, ok := c.parseTimeout(c.args[len(c.args)-1])
	if !ok {
		return
	}
	left := c.cmd.name == "blpop"
	c.blockOn(keys, timeout, func(tx txn, woken bool, w *replyWriter) (bool, error) {
		if err := listKinds(tx, keys, kvstore.KindList); err != nil && !woken {
			return false, err
		}
		key, out, err := lmpopIn(tx, mpopArgs{keys: keys, left: left, count: 1, skipWrong: woken})
		if err != nil || key == nil {
			return false, err
		}
		w.array(2)
		w.bulk(key)
		w.bulk(out[0])
		return true, nil
	}, func(bool) { c.w.nullArray() })
}

// cmdBLMove answers BLMOVE src dst LEFT|RIGHT LEFT|RIGHT timeout and
// BRPOPLPUSH src dst timeout.
func cmdBLMove(c *call) {
	fromLeft, toLeft := false, true
	if c.cmd.name == "blmove" {
		var ok1, ok2 bool
		fromLeft, ok1 = listEnd(c.args[3])
		toLeft, ok2 = listEnd(c.args[4])
		if !ok1 || !ok2 {
			c.fail(errSyntax)
			return
		}
	}
	timeout, ok := c.parseTimeout(c.args[len(c.args)-1])
	if !ok {
		return
	}
	src, dst := c.args[1], c.args[2]
	c.blockOn([][]byte{src}, timeout, func(tx txn, woken bool, w *replyWriter) (bool, error) {
		if woken && tx.Kind(src) != kvstore.KindList {
			return false, nil // a source of another kind: it waits on (a destination of another kind is an error, as in Redis)
		}
		v, moved, err := lmoveIn(tx, src, dst, fromLeft, toLeft)
		if err != nil || !moved {
			return false, err
		}
		markReady(tx, dst)
		w.bulk(v)
		return true, nil
	}, func(inMulti bool) {
		if inMulti {
			c.w.null()
		} else {
			c.w.nullArray()
		}
	})
}

// cmdBLMPop answers BLMPOP timeout numkeys key... LEFT|RIGHT [COUNT n].
func cmdBLMPop(c *call) {
	timeout, ok := c.parseTimeout(c.args[1])
	if !ok {
		return
	}
	m, ok := c.parseMPop(c.args[2:], listEnd)
	if !ok {
		return
	}
	c.blockOn(m.keys, timeout, func(tx txn, woken bool, w *replyWriter) (bool, error) {
		key, out, err := lmpopIn(tx, mpopArgs{keys: m.keys, left: m.left, count: m.count, skipWrong: woken})
		if err != nil || key == nil {
			return false, err
		}
		writeKeyAndItems(w, key, out)
		return true, nil
	}, func(bool) { c.w.nullArray() })
}

// cmdBZPop answers BZPOPMIN and BZPOPMAX key... timeout.
func cmdBZPop(c *call) {
	keys := c.args[1 : len(c.args)-1]
	timeout, ok := c.parseTimeout(c.args[len(c.args)-1])
	if !ok {
		return
	}
	highest := c.cmd.name == "bzpopmax"
	c.blockOn(keys, timeout, func(tx txn, woken bool, w *replyWriter) (bool, error) {
		if err := listKinds(tx, keys, kvstore.KindZSet); err != nil && !woken {
			return false, err
		}
		key, out, err := zmpopIn(tx, mpopArgs{keys: keys, left: !highest, count: 1, skipWrong: woken})
		if err != nil || key == nil {
			return false, err
		}
		w.array(3)
		w.bulk(key)
		w.bulk(out[0].Member)
		w.double(out[0].Score)
		return true, nil
	}, func(bool) { c.w.nullArray() })
}

// cmdBZMPop answers BZMPOP timeout numkeys key... MIN|MAX [COUNT n].
func cmdBZMPop(c *call) {
	timeout, ok := c.parseTimeout(c.args[1])
	if !ok {
		return
	}
	m, ok := c.parseMPop(c.args[2:], zminEnd)
	if !ok {
		return
	}
	c.blockOn(m.keys, timeout, func(tx txn, woken bool, w *replyWriter) (bool, error) {
		key, out, err := zmpopIn(tx, mpopArgs{keys: m.keys, left: m.left, count: m.count, skipWrong: woken})
		if err != nil || key == nil {
			return false, err
		}
		writeKeyAndZMembers(w, key, out)
		return true, nil
	}, func(bool) { c.w.nullArray() })
}

func blockingCommands() []command {
	const w = flagWrite | flagTx
	const wns = w | flagNoScript // Redis 7 refuses these in scripts; BLMPOP and BZMPOP run there without blocking
	return []command{
		collectionRow("blpop", -3, wns, 1, -2, 1, "list", "LPOP that waits for an element; timeout in seconds (0: forever).", cmdBPop),
		collectionRow("brpop", -3, wns, 1, -2, 1, "list", "RPOP that waits for an element.", cmdBPop),
		collectionRow("blmove", 6, wns, 1, 2, 1, "list", "LMOVE that waits for an element.", cmdBLMove),
		collectionRow("brpoplpush", 4, wns, 1, 2, 1, "list", "RPOPLPUSH that waits for an element.", cmdBLMove),
		collectionRow("blmpop", -5, w, 0, 0, 0, "list", "LMPOP that waits for an element.", cmdBLMPop),
		collectionRow("bzpopmin", -3, wns, 1, -2, 1, "sorted-set", "ZPOPMIN that waits for a member.", cmdBZPop),
		collectionRow("bzpopmax", -3, wns, 1, -2, 1, "sorted-set", "ZPOPMAX that waits for a member.", cmdBZPop),
		collectionRow("bzmpop", -5, w, 0, 0, 0, "sorted-set", "ZMPOP that waits for a member.", cmdBZMPop),
	}
}
