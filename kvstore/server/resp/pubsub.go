package resp

// Publish/subscribe with Redis's semantics: SUBSCRIBE, PSUBSCRIBE and
// SSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH, SPUBLISH and PUBSUB.
//
// Invariants:
//   - a publisher never waits for a subscriber: PUBLISH appends the message
//     to each subscriber's outbox (memory) and wakes its connection. A
//     subscriber whose outbox passes the hard limit, or stays over the soft
//     limit longer than the soft time, is disconnected (Redis's
//     client-output-buffer-limit pubsub 32mb 8mb 60);
//   - every subscriber sees the messages in one order: PUBLISH delivers
//     under the registry's lock;
//   - a message is never written before the confirmation of the
//     subscription that brought it, nor after the confirmation of the
//     unsubscription that ended it: a connection writes its outbox behind
//     the replies it has collected, and (un)subscribing moves the outbox
//     into the replies under the registry's lock;
//   - a connection that closes leaves every channel and pattern (dropClient).

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.PubSubBuffer*: Redis's client-output-buffer-limit
// for pubsub clients.
const (
	DefaultPubSubBufferHard     = 32 << 20
	DefaultPubSubBufferSoft     = 8 << 20
	DefaultPubSubBufferSoftTime = 60 * time.Second
)

// psKind is a namespace of subscriptions.
type psKind uint8

const (
	psChannel psKind = iota
	psPattern
	psShard
	psKinds
)

// psNames are the reply words of each kind.
var psNames = [psKinds]struct{ sub, unsub, msg string }{
	psChannel: {"subscribe", "unsubscribe", "message"},
	psPattern: {"psubscribe", "punsubscribe", "pmessage"},
	psShard:   {"ssubscribe", "sunsubscribe", "smessage"},
}

// pubsubHub is the server's registry of subscriptions.
type pubsubHub struct {
	mu sync.Mutex
	// subs maps a channel (pattern) to its subscribers in the order they
	// subscribed; patterns lists the patterns in the order they appeared,
	// so that a message matching several is delivered in a stable order.
	subs     [psKinds]map[string][]*subscriber
	patterns []string
	limits   outputLimits
}

// outputLimits bound a subscriber's outbox (zero: no bound).
type outputLimits struct {
	hard, soft int
	softTime   time.Duration
}

func newPubsubHub(o Options) *pubsubHub {
	h := &pubsubHub{limits: outputLimits{hard: o.PubSubBufferHard, soft: o.PubSubBufferSoft, softTime: o.PubSubBufferSoftTime}}
	for k := range h.subs {
		h.subs[k] = map[string][]*subscriber{}
	}
	return h
}

// subscriber is a connection's pub/sub state, made at its first subscribe.
type subscriber struct {
	cl *client
	// names and order are the connection's subscriptions per kind: changed
	// by the connection only, under the hub's lock.
	names [psKinds]map[string]struct{}
	order [psKinds][]string

	// wake has the connection write its outbox; kill closes the connection.
	// Both are called without mu held and never block.
	wake, kill func()
	// wmu orders a goroutine connection's writes (its replies, and the
	// outbox written by its push writer); done ends the push writer.
	wmu  sync.Mutex
	done chan struct{}

	queued atomic.Bool // out holds bytes not yet taken
	mu     sync.Mutex
	out    []byte
	flight int       // bytes taken and not yet written (counted against the limits)
	over   time.Time // when the outbox passed the soft limit; zero: under it
	woken  bool      // a wake is pending: the next take clears it
	held   bool      // a (un)subscribe reply waits in the replies: take it with them
	drop   bool      // over a limit: nothing more is queued, the connection closes
}

func (s *Server) subscriberOf(cl *client) *subscriber {
	if cl.ps != nil {
		return cl.ps
	}
	ps := &subscriber{cl: cl}
	for k := range ps.names {
		ps.names[k] = map[string]struct{}{}
	}
	if cl.pushWake != nil { // an event loop's connection
		ps.wake, ps.kill = cl.pushWake, cl.kill
	} else {
		ps.done = make(chan struct{})
		sig := make(chan struct{}, 1)
		ps.wake = func() {
			select {
			case sig <- struct{}{}:
			default:
			}
		}
		ps.kill = func() { cl.conn.Conn.Close() }
		go ps.writePushes(sig)
		// A subscriber waits for messages as long as it likes: Redis
		// exempts pub/sub clients from the idle timeout.
	}
	cl.ps = ps
	s.outboxes.Store(cl.id, ps)
	return ps
}

// outboxOf is cl's outbox, or nil, for a goroutine other than cl's.
func (s *Server) outboxOf(cl *client) *subscriber {
	if v, ok := s.outboxes.Load(cl.id); ok {
		return v.(*subscriber)
	}
	return nil
}

// subscribedTo reports whether ps is subscribed to channel.
func (h *pubsubHub) subscribedTo(ps *subscriber, channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := ps.names[psChannel][channel]
	return ok
}

// count is the number of subscriptions a (un)subscribe reply reports:
// channels and patterns together, shard channels apart (as Redis).
func (ps *subscriber) count(k psKind) int64 {
	if k == psShard {
		return int64(len(ps.names[psShard]))
	}
	return int64(len(ps.names[psChannel]) + len(ps.names[psPattern]))
}

// total is every subscription of the connection; while it is above 0 the
// connection is in subscribed mode.
func (ps *subscriber) total() int {
	if ps == nil {
		return 0
	}
	return len(ps.names[psChannel]) + len(ps.names[psPattern]) + len(ps.names[psShard])
}

// push queues frame for the subscriber; it reports whether the subscriber
// takes it (false once it is over a limit). Called under the hub's lock.
func (ps *subscriber) push(frame []byte, lim outputLimits) bool {
	ps.mu.Lock()
	if ps.drop {
		ps.mu.Unlock()
		return false
	}
	ps.out = append(ps.out, frame...)
	ps.queued.Store(true)
	if why := ps.overLimitLocked(lim); why != "" {
		ps.drop, ps.out = true, nil
		ps.mu.Unlock()
		ps.cl.log.Warn("pub/sub client closed for overcoming of output buffer limits", "limit", why)
		ps.kill()
		return true // it was a receiver of this message, as in Redis
	}
	wake := !ps.woken
	ps.woken = true
	ps.mu.Unlock()
	if wake {
		ps.wake()
	}
	return true
}

func (ps *subscriber) overLimitLocked(lim outputLimits) string {
	size := len(ps.out) + ps.flight
	if lim.hard > 0 && size > lim.hard {
		return fmt.Sprintf("hard: %d bytes queued, over %d", size, lim.hard)
	}
	if lim.soft <= 0 || size <= lim.soft {
		ps.over = time.Time{}
		return ""
	}
	now := time.Now()
	if ps.over.IsZero() {
		ps.over = now
		return ""
	}
	if now.Sub(ps.over) > lim.softTime {
		return fmt.Sprintf("soft: over %d bytes for more than %v", lim.soft, lim.softTime)
	}
	return ""
}

// takeInto moves the outbox behind the replies in w, to be written with
// them; it reports false when the subscriber was dropped (the connection
// must close). Only the connection's owner calls it.
func (ps *subscriber) takeInto(w *replyWriter) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.woken, ps.held = false, false
	ps.queued.Store(false)
	if ps.drop {
		return false
	}
	w.buf = append(w.buf, ps.out...)
	ps.flight = len(w.buf)
	ps.out = ps.out[:0]
	if cap(ps.out) > keepOutBytes {
		ps.out = nil
	}
	return true
}

// wrote records that what was taken is written.
func (ps *subscriber) wrote() {
	ps.mu.Lock()
	ps.flight = 0
	ps.mu.Unlock()
}

// writePushes writes a goroutine connection's outbox when a message
// arrives while the connection waits for a request (an event loop's
// connection is written by its loop instead).
func (ps *subscriber) writePushes(sig <-chan struct{}) {
	c := ps.cl.conn
	var w replyWriter
	for {
		select {
		case <-ps.done:
			return
		case <-sig:
		}
		ps.wmu.Lock()
		ps.mu.Lock()
		held := ps.held
		ps.mu.Unlock()
		if held {
			ps.wmu.Unlock()
			continue // the connection's flush takes the outbox behind its reply
		}
		if !ps.takeInto(&w) {
			ps.wmu.Unlock()
			return
		}
		if len(w.buf) > 0 {
			c.ArmWrite()
			_, err := c.Write(w.buf)
			ps.wrote()
			w.buf = w.buf[:0]
			if cap(w.buf) > keepOutBytes {
				w.buf = nil
			}
			if err != nil {
				ps.wmu.Unlock()
				ps.kill() // the reader ends the connection
				return
			}
		}
		ps.wmu.Unlock()
	}
}

// appendFrame appends a push frame: kind word, then the parts as bulks
// (nil: a null bulk), and n as the trailing integer when withCount.
func appendFrame(b []byte, word string, parts [][]byte, n int64, withCount bool, resp3 bool) []byte {
	w := replyWriter{buf: b, resp3: resp3}
	size := 1 + len(parts)
	if withCount {
		size++
	}
	w.pushLen(size)
	w.bulkString(word)
	for _, p := range parts {
		if p == nil {
			w.null()
		} else {
			w.bulk(p)
		}
	}
	if withCount {
		w.integer(n)
	}
	return w.buf
}

// publish delivers msg to the subscribers of channel (and, for a plain
// channel, of the patterns it matches) and returns how many took it.
func (h *pubsubHub) publish(k psKind, channel, msg []byte) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n int64
	deliver := func(subs []*subscriber, word string, parts [][]byte) {
		var frames [2][]byte // RESP2's array, RESP3's push: each made when a subscriber needs it
		for _, ps := range subs {
			v := 0
			if ps.cl.proto.Load() == 3 {
				v = 1
			}
			if frames[v] == nil {
				frames[v] = appendFrame(nil, word, parts, 0, false, v == 1)
			}
			if ps.push(frames[v], h.limits) {
				n++
			}
		}
	}
	if subs := h.subs[k][string(channel)]; len(subs) > 0 {
		deliver(subs, psNames[k].msg, [][]byte{channel, msg})
	}
	if k != psChannel {
		return n // shard channels ignore patterns
	}
	for _, pat := range h.patterns {
		if globMatch([]byte(pat), channel) {
			deliver(h.subs[psPattern][pat], "pmessage", [][]byte{[]byte(pat), channel, msg})
		}
	}
	return n
}

// subscribe adds the connection to each name of kind k and answers one
// confirmation per name.
func (c *call) subscribe(k psKind, names [][]byte) {
	h, cl := c.s.pubsub, c.cl
	ps := c.s.subscriberOf(cl)
	h.mu.Lock()
	defer h.mu.Unlock()
	c.beforeConfirm(ps)
	for _, name := range names {
		key := string(name)
		if _, ok := ps.names[k][key]; !ok {
			ps.names[k][key] = struct{}{}
			ps.order[k] = append(ps.order[k], key)
			if k == psPattern && len(h.subs[k][key]) == 0 {
				h.patterns = append(h.patterns, key)
			}
			h.subs[k][key] = append(h.subs[k][key], ps)
		}
		c.w.buf = appendFrame(c.w.buf, psNames[k].sub, [][]byte{name}, ps.count(k), true, c.w.resp3)
	}
	cl.countSubs(ps)
}

// unsubscribe removes the connection from each name of kind k (every one
// when names is empty) and answers one confirmation per name (a nil name
// when there was none to leave).
func (c *call) unsubscribe(k psKind, names [][]byte) {
	h, cl := c.s.pubsub, c.cl
	ps := c.s.subscriberOf(cl)
	h.mu.Lock()
	defer h.mu.Unlock()
	c.beforeConfirm(ps)
	if len(names) == 0 {
		for _, key := range slices.Clone(ps.order[k]) {
			names = append(names, []byte(key))
		}
		if len(names) == 0 {
			c.w.buf = appendFrame(c.w.buf, psNames[k].unsub, [][]byte{nil}, ps.count(k), true, c.w.resp3)
		}
	}
	for _, name := range names {
		h.leave(ps, k, string(name))
		c.w.buf = appendFrame(c.w.buf, psNames[k].unsub, [][]byte{name}, ps.count(k), true, c.w.resp3)
	}
	cl.countSubs(ps)
}

// beforeConfirm moves the messages queued so far in front of the
// confirmation about to be written (under the hub's lock, so that none
// for a channel being left can follow its confirmation). Inside EXEC the
// replies are not the connection's yet: the outbox then waits behind them.
func (c *call) beforeConfirm(ps *subscriber) {
	if c.w == &c.cl.out {
		ps.takeInto(c.w)
	}
	ps.mu.Lock()
	ps.held = true // a goroutine connection's push writer leaves the outbox to the flush
	ps.mu.Unlock()
}

// leave removes ps from name; called under h.mu.
func (h *pubsubHub) leave(ps *subscriber, k psKind, name string) {
	if _, ok := ps.names[k][name]; !ok {
		return
	}
	delete(ps.names[k], name)
	if i := slices.Index(ps.order[k], name); i >= 0 {
		ps.order[k] = slices.Delete(ps.order[k], i, i+1)
	}
	subs := h.subs[k][name]
	if i := slices.Index(subs, ps); i >= 0 {
		subs = slices.Delete(subs, i, i+1)
	}
	if len(subs) > 0 {
		h.subs[k][name] = subs
		return
	}
	delete(h.subs[k], name)
	if k == psPattern {
		if i := slices.Index(h.patterns, name); i >= 0 {
			h.patterns = slices.Delete(h.patterns, i, i+1)
		}
	}
}

// leaveEvery removes the connection from every subscription, with no
// confirmation (RESET); messages already queued for it still go out.
func (h *pubsubHub) leaveEvery(cl *client) {
	ps := cl.ps
	h.mu.Lock()
	for k := range psKinds {
		for _, name := range slices.Clone(ps.order[k]) {
			h.leave(ps, k, name)
		}
	}
	h.mu.Unlock()
	cl.countSubs(ps)
}

// leaveAll removes a closing connection from every subscription and stops
// its push writer.
func (h *pubsubHub) leaveAll(cl *client) {
	ps := cl.ps
	if ps == nil {
		return
	}
	h.leaveEvery(cl)
	ps.mu.Lock()
	ps.drop, ps.out = true, nil
	ps.mu.Unlock()
	if ps.done != nil {
		close(ps.done)
	}
}

// countSubs publishes the connection's subscription counts (CLIENT LIST).
func (cl *client) countSubs(ps *subscriber) {
	cl.subs.Store(int32(len(ps.names[psChannel])))
	cl.psubs.Store(int32(len(ps.names[psPattern])))
	cl.ssubs.Store(int32(len(ps.names[psShard])))
}

// subscribed reports whether the connection has a subscription (it is
// then exempt from the idle timeout, with the P flag in CLIENT LIST).
func (cl *client) subscribed() bool { return cl.ps.total() > 0 }

// subscribedMode reports whether the connection is in RESP2's subscribed
// mode: only the (un)subscribe commands, PING, QUIT and RESET are served. A
// RESP3 connection's messages are pushes, and it runs any command between
// them, as in Redis.
func (cl *client) subscribedMode() bool { return !cl.out.resp3 && cl.subscribed() }

// subscribedModeError is Redis's refusal of other commands in subscribed mode.
func subscribedModeError(name string) string {
	return fmt.Sprintf("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", name)
}

func cmdSubscribe(c *call)    { c.subscribe(psChannel, c.args[1:]) }
func cmdPSubscribe(c *call)   { c.subscribe(psPattern, c.args[1:]) }
func cmdSSubscribe(c *call)   { c.subscribe(psShard, c.args[1:]) }
func cmdUnsubscribe(c *call)  { c.unsubscribe(psChannel, c.args[1:]) }
func cmdPUnsubscribe(c *call) { c.unsubscribe(psPattern, c.args[1:]) }
func cmdSUnsubscribe(c *call) { c.unsubscribe(psShard, c.args[1:]) }

// cmdPublish answers PUBLISH channel message with the number of clients
// that received it (a client subscribed to the channel and to a matching
// pattern counts twice, as in Redis).
func cmdPublish(c *call) { c.w.integer(c.s.pubsub.publish(psChannel, c.args[1], c.args[2])) }

// cmdSPublish is SPUBLISH: one node holds every slot, so shard channels
// are a namespace of their own.
func cmdSPublish(c *call) { c.w.integer(c.s.pubsub.publish(psShard, c.args[1], c.args[2])) }

var pubsubHelp = []string{
	"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
	"SHARDCHANNELS [<pattern>]",
	"    Return the currently active shard level channels matching a <pattern> (default: '*').",
	"SHARDNUMSUB [<shardchannel> ...]",
	"    Return the number of subscribers for the specified shard level channel(s)",
	"HELP",
	"    Print this help.",
}

// cmdPubsub is PUBSUB CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS,
// SHARDNUMSUB and HELP.
func cmdPubsub(c *call) {
	h, w := c.s.pubsub, c.w
	sub, n := strings.ToUpper(string(c.args[1])), len(c.args)
	switch {
	case (sub == "HELP" || sub == "NUMPAT") && n != 2:
		wrongArgs(w, "pubsub|"+strings.ToLower(sub)) // their arity is 2 in Redis's table
	case sub != "HELP" && sub != "NUMPAT" && sub != "CHANNELS" && sub != "SHARDCHANNELS" && sub != "NUMSUB" && sub != "SHARDNUMSUB":
		unknownSubcommand(w, c.args[1], "PUBSUB")
	case sub == "HELP" && n == 2:
		w.bulkStrings(pubsubHelp...)
	case (sub == "CHANNELS" || sub == "SHARDCHANNELS") && (n == 2 || n == 3):
		k := psChannel
		if sub == "SHARDCHANNELS" {
			k = psShard
		}
		h.mu.Lock()
		var names []string
		for name := range h.subs[k] {
			if n == 2 || globMatch(c.args[2], []byte(name)) {
				names = append(names, name)
			}
		}
		h.mu.Unlock()
		slices.Sort(names)
		w.bulkStrings(names...)
	case sub == "NUMSUB" || sub == "SHARDNUMSUB":
		k := psChannel
		if sub == "SHARDNUMSUB" {
			k = psShard
		}
		w.array(2 * (n - 2)) // an array in RESP3 too (Redis 7.0)
		h.mu.Lock()
		for _, name := range c.args[2:] {
			w.bulk(name)
			w.integer(int64(len(h.subs[k][string(name)])))
		}
		h.mu.Unlock()
	case sub == "NUMPAT" && n == 2:
		h.mu.Lock()
		w.integer(int64(len(h.patterns)))
		h.mu.Unlock()
	default:
		w.error(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try PUBSUB HELP.", printable(c.args[1])))
	}
}

// counts are INFO's pubsub_channels, pubsub_patterns and
// pubsubshard_channels.
func (h *pubsubHub) counts() (channels, patterns, shard int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[psChannel]), len(h.patterns), len(h.subs[psShard])
}
