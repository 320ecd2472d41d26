package resp

// Blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX, BZMPOP.
//
// Invariant: a blocked client takes an element only through its own
// atomic update, run on its own connection (goroutine or event loop), so
// an element is never taken for a client that is gone; clients blocked on
// a key are woken one at a time in the order they blocked (FIFO), each
// woken client tries once and keeps its place if it finds nothing, and a
// client that leaves with a wake it did not use passes it on. A client
// registers before its first try, so a push after that try always wakes
// it. Inside MULTI/EXEC a blocking pop never blocks: it answers at once.
// CLIENT UNBLOCK ends a wait through the same wake, marked on the waiter.

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
	count   atomic.Int64 // waiters registered: wakes are free when none
	mu      sync.Mutex
	byKey   map[string][]*waiter
	pending int      // wakes given whose retry has not finished (guarded by mu)
	settled []func() // called when pending drops to 0 (guarded by mu)
}

// settleCap bounds how long a command's reply waits for the clients it
// woke (settle).
const settleCap = 50 * time.Millisecond

// finish ends one woken client's retry (rearm reported a wake); when no
// retry is left, the replies held for them go out.
func (r *blockRegistry) finish() {
	r.mu.Lock()
	r.pending--
	var fs []func()
	if r.pending == 0 {
		fs, r.settled = r.settled, nil
	}
	r.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// onSettled calls f once no woken client is retrying (at once if none
// is) and reports whether it had to wait.
func (r *blockRegistry) onSettled(f func()) bool {
	if r.count.Load() == 0 {
		return false
	}
	r.mu.Lock()
	if r.pending == 0 {
		r.mu.Unlock()
		return false
	}
	r.settled = append(r.settled, f)
	r.mu.Unlock()
	return true
}

// settle waits (at most settleCap) until the clients woken so far have
// retried: a command's reply leaves after the blocked clients it served,
// as Redis serves them before answering the next command, so a client
// that reads after the reply sees their moves (and its WATCH sees them).
func (r *blockRegistry) settle() {
	done := make(chan struct{})
	var once sync.Once
	if !r.onSettled(func() { once.Do(func() { close(done) }) }) {
		return
	}
	t := time.NewTimer(settleCap)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// waiter is one blocked client's entry.
type waiter struct {
	keys     []string
	clientID int64
	wake     func()      // tells the client to try again; called with mu held, must not block
	woken    bool        // a wake is pending (guarded by mu)
	ended    unblockMode // CLIENT UNBLOCK ended the wait (guarded by mu)
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
	defer r.mu.Unlock()
	for _, q := range r.byKey {
		for _, w := range q {
			if w.clientID != id {
				continue
			}
			if w.ended == unblockNone {
				w.ended = mode
			}
			if !w.woken {
				w.woken = true
				r.pending++
				w.wake()
			}
			return true
		}
	}
	return false
}

func (r *blockRegistry) add(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = map[string][]*waiter{}
	}
	for _, k := range w.keys {
		r.byKey[k] = append(r.byKey[k], w)
	}
	r.count.Add(1)
}

// remove drops w; a wake it had not used goes to the next client.
func (r *blockRegistry) remove(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
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
	r.count.Add(-1)
	if w.woken {
		for _, k := range w.keys {
			r.wakeLocked(k)
		}
		w.woken = false
		r.pending--
		if r.pending == 0 {
			fs := r.settled
			r.settled = nil
			for _, f := range fs {
				f() // must not block: they close a channel or post to a loop
			}
		}
	}
}

// rearm clears w's pending wake before it tries again, and reports
// whether CLIENT UNBLOCK ended the wait instead and whether a wake was
// pending (then finish follows the retry).
func (r *blockRegistry) rearm(w *waiter) (unblockMode, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := w.woken
	w.woken = false
	return w.ended, was
}

// wakeKey wakes the first client blocked on key, unless it has a wake
// pending already: clients are woken one at a time, each passing the turn
// on when it answers or leaves, so they are served in the order they
// blocked.
func (r *blockRegistry) wakeKey(key []byte) {
	if r.count.Load() == 0 {
		return
	}
	r.mu.Lock()
	r.wakeLocked(string(key))
	r.mu.Unlock()
}

func (r *blockRegistry) wakeLocked(key string) {
	if q := r.byKey[key]; len(q) > 0 && !q[0].woken {
		q[0].woken = true
		r.pending++
		q[0].wake()
	}
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

// wakeList wakes a client blocked on key (a list or a sorted set there
// may have elements now).
func (s *Server) wakeList(key []byte) { s.blocks.wakeKey(key) }

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

// unblockPassingOn ends a woken command that answered (an element, or an
// error such as a destination of another kind) and wakes the next client
// on its keys: what it did not take may be theirs.
func (s *Server) unblockPassingOn(cl *client) {
	bc := cl.blocked
	s.unblock(cl)
	if bc != nil {
		for _, k := range bc.w.keys {
			s.blocks.wakeKey([]byte(k))
		}
	}
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

// blockOn runs a blocking command: try is one non-blocking attempt, which
// reports whether it answered (a value or an error; woken: a retry, where a
// key of another kind is passed over, as Redis serves a blocked client only
// from a key of its kind); timedOut answers the timeout (inMulti: at once,
// inside a transaction).
func (c *call) blockOn(keys [][]byte, timeout time.Duration, try func(woken bool) bool, timedOut func(inMulti bool)) {
	s, cl := c.s, c.cl
	if bc := cl.blocked; bc != nil { // woken or timed out: the event loop runs it again
		bc.fired.Store(false)
		mode, woken := s.blocks.rearm(bc.w)
		if woken {
			defer s.blocks.finish()
		}
		if mode != unblockNone {
			s.unblock(cl)
			c.answerUnblocked(mode, timedOut)
			return
		}
		if try(true) {
			s.unblockPassingOn(cl)
			return
		}
		if !bc.deadline.IsZero() && !time.Now().Before(bc.deadline) {
			s.unblock(cl)
			timedOut(false)
		}
		return
	}
	if c.tx != nil {
		if !try(false) {
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
	bc.w = &waiter{keys: make([]string, len(keys)), clientID: cl.id}
	for i, k := range keys {
		bc.w.keys[i] = string(k)
	}
	resume := cl.resume
	if resume == nil {
		bc.signal = make(chan struct{}, 1)
		bc.w.wake = func() {
			select {
			case bc.signal <- struct{}{}:
			default:
			}
		}
	} else {
		bc.w.wake = func() {
			bc.fired.Store(true)
			resume()
		}
	}
	s.blocks.add(bc.w)
	cl.blocked = bc
	if try(false) {
		s.unblock(cl)
		return
	}
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
	c.waitBlocked(bc, try, timedOut)
}

// waitBlocked blocks a goroutine connection until its command answers,
// times out or the server drains.
func (c *call) waitBlocked(bc *blockedCall, try func(bool) bool, timedOut func(bool)) {
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
			if peerClosed(c.cl.conn.Conn) {
				c.s.unblock(c.cl) // its wake goes to the next client
				c.cl.quit = true
				return
			}
			mode, woken := c.s.blocks.rearm(bc.w)
			answered := true
			switch {
			case mode != unblockNone:
				c.s.unblock(c.cl)
				c.answerUnblocked(mode, timedOut)
			case try(true):
				c.s.unblockPassingOn(c.cl)
			default:
				answered = false
			}
			if woken {
				c.s.blocks.finish()
			}
			if answered {
				return
			}
		case <-expire:
			mode, woken := c.s.blocks.rearm(bc.w)
			if woken {
				defer c.s.blocks.finish()
			}
			if mode != unblockNone {
				c.s.unblock(c.cl)
				c.answerUnblocked(mode, timedOut)
				return
			}
			answered := try(true)
			c.s.unblock(c.cl)
			if !answered {
				timedOut(false)
			}
			return
		case <-poll.C:
			if c.cl.conn.Draining() || peerClosed(c.cl.conn.Conn) {
				c.s.unblock(c.cl)
				c.cl.quit = true
				return
			}
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
	c.blockOn(keys, timeout, func(woken bool) bool {
		var key []byte
		var out [][]byte
		err := c.update(func(tx txn) (err error) {
			if err := listKinds(tx, keys, kvstore.KindList); err != nil && !woken {
				return err
			}
			key, out, err = lmpopIn(tx, mpopArgs{keys: keys, left: left, count: 1, skipWrong: woken})
			return err
		})
		switch {
		case err != nil:
			c.fail(err)
		case key == nil:
			return false
		default:
			c.w.array(2)
			c.w.bulk(key)
			c.w.bulk(out[0])
			c.s.wakeList(key) // more elements may be left for the next client
		}
		return true
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
	c.blockOn([][]byte{src}, timeout, func(woken bool) bool {
		var v []byte
		var moved bool
		err := c.update(func(tx txn) (err error) {
			if woken && tx.Kind(src) != kvstore.KindList {
				return nil // a source of another kind: it waits on (a destination of another kind is an error, as in Redis)
			}
			v, moved, err = lmoveIn(tx, src, dst, fromLeft, toLeft)
			return err
		})
		switch {
		case err != nil:
			c.fail(err)
		case !moved:
			return false
		default:
			c.w.bulk(v)
			c.s.wakeList(dst)
			c.s.wakeList(src)
		}
		return true
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
	c.blockOn(m.keys, timeout, func(woken bool) bool {
		var key []byte
		var out [][]byte
		err := c.update(func(tx txn) (err error) {
			key, out, err = lmpopIn(tx, mpopArgs{keys: m.keys, left: m.left, count: m.count, skipWrong: woken})
			return err
		})
		switch {
		case err != nil:
			c.fail(err)
		case key == nil:
			return false
		default:
			writeKeyAndItems(c.w, key, out)
			c.s.wakeList(key)
		}
		return true
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
	c.blockOn(keys, timeout, func(woken bool) bool {
		var key []byte
		var out []kvstore.ZMember
		err := c.update(func(tx txn) (err error) {
			if err := listKinds(tx, keys, kvstore.KindZSet); err != nil && !woken {
				return err
			}
			key, out, err = zmpopIn(tx, mpopArgs{keys: keys, left: !highest, count: 1, skipWrong: woken})
			return err
		})
		switch {
		case err != nil:
			c.fail(err)
		case key == nil:
			return false
		default:
			c.w.array(3)
			c.w.bulk(key)
			c.w.bulk(out[0].Member)
			c.w.double(out[0].Score)
			c.s.wakeList(key)
		}
		return true
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
	c.blockOn(m.keys, timeout, func(woken bool) bool {
		var key []byte
		var out []kvstore.ZMember
		err := c.update(func(tx txn) (err error) {
			key, out, err = zmpopIn(tx, mpopArgs{keys: m.keys, left: m.left, count: m.count, skipWrong: woken})
			return err
		})
		switch {
		case err != nil:
			c.fail(err)
		case key == nil:
			return false
		default:
			writeKeyAndZMembers(c.w, key, out)
			c.s.wakeList(key)
		}
		return true
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
