package resp

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Client-side caching: CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR
// and CLIENT TRACKINGINFO, as Redis 7.0 has them.
//
// A tracking client is told when a key it may have cached changes: in the
// default mode, each key a read-only command of its read (with OPTIN only
// after CLIENT CACHING YES, with OPTOUT unless CLIENT CACHING NO), once,
// until it reads the key again; with BCAST, every key under its prefixes
// (every key without one). The message is RESP3's push
// `>2 invalidate [keys]` on the connection itself, or, with REDIRECT, on
// the connection named: a push when that one speaks RESP3, else a message
// of the channel __redis__:invalidate when it is subscribed to it. A
// flush is `invalidate` with a null.
//
// Invariant: a client told nothing holds no stale value. A read records
// its keys before it reads them, and the invalidation is sent after the
// change is visible (kvstore's OnApplied, on the goroutine that applied
// the group): a read that saw the old value was recorded before the change
// was told, so it is told; one recorded after was read after it. Every
// writer counts, whatever its transport (HTTP, TCP JSON, the RESP
// listener), the expiry and flushes too. The invalidation reaches the
// client's outbox after the reply it read the old value into (outboxes are
// written after the replies already made).
//
// Not served: NOLOOP (refused: the engine does not say who wrote a
// change). Differences: a RESP3 connection that is only a redirect target
// hears invalidations once it has an outbox (it subscribed, tracks or
// monitors: a connection's outbox is made by its own goroutine); BCAST
// messages go once per applied group, not once per event-loop turn; a
// served blocking command's reply may follow the invalidation its own
// write caused.

// defaultMaxTrackedKeys bounds the default mode's table (Redis's
// tracking-table-max-keys, settable with CONFIG SET; 0: no bound): past
// it keys are invalidated and forgotten.
const defaultMaxTrackedKeys = 1_000_000

// tracking is a connection's tracking state. Its owner changes it under
// tracker.mu (the applying goroutine reads other connections' there).
type tracking struct {
	on, bcast, optin, optout bool
	redirect                 int64
	prefixes                 []string
}

// tracker is the server's table of tracked keys and tracking clients.
type tracker struct {
	n       atomic.Int32 // clients with tracking on
	maxKeys atomic.Int64 // tracking-table-max-keys
	mu      sync.Mutex
	keys    map[string]map[int64]struct{}
	clients map[int64]*client
	hook    sync.Once
}

// appliedWatcher is a store that tells which keys each applied group
// changed (kvstore.DB.OnApplied).
type appliedWatcher interface {
	OnApplied(fn func(keys [][]byte, flushed bool)) (remove func())
}

// clientTracking answers CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST]
// [PREFIX p]... [OPTIN] [OPTOUT], with Redis 7.0's errors.
func clientTracking(c *call) {
	w, cl, s := c.w, c.cl, c.s
	var opt tracking
	var hasRedirect bool
	for j := 3; j < len(c.args); j++ {
		more := len(c.args) - 1 - j
		switch a := strings.ToLower(string(c.args[j])); {
		case a == "redirect" && more > 0:
			j++
			if hasRedirect {
				w.error("ERR A client can only redirect to a single other client")
				return
			}
			id, ok := parseStrictInt(c.args[j])
			if !ok {
				w.error("ERR value is not an integer or out of range")
				return
			}
			if s.clientByID(id) == nil {
				w.error("ERR The client ID you want redirect to does not exist")
				return
			}
			opt.redirect, hasRedirect = id, true
		case a == "bcast":
			opt.bcast = true
		case a == "optin":
			opt.optin = true
		case a == "optout":
			opt.optout = true
		case a == "noloop":
			w.error("ERR NOLOOP is not supported by devkit kv: a client is told of its own writes too")
			return
		case a == "prefix" && more > 0:
			j++
			opt.prefixes = append(opt.prefixes, string(c.args[j]))
		default:
			w.error("ERR syntax error")
			return
		}
	}
	cur := cl.trk
	switch strings.ToLower(string(c.args[2])) {
	case "on":
		switch {
		case !opt.bcast && len(opt.prefixes) > 0:
			w.error("ERR PREFIX option requires BCAST mode to be enabled")
			return
		case cur.on && cur.bcast != opt.bcast:
			w.error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		case opt.bcast && (opt.optin || opt.optout):
			w.error("ERR OPTIN and OPTOUT are not compatible with BCAST")
			return
		case opt.optin && opt.optout:
			w.error("ERR You can't specify both OPTIN mode and OPTOUT mode")
			return
		case cur.on && (opt.optin && cur.optout || opt.optout && cur.optin):
			w.error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if opt.bcast {
			if len(opt.prefixes) == 0 {
				opt.prefixes = []string{""} // every key, as Redis registers it
			}
			if msg := prefixCollision(cur.prefixes, opt.prefixes); msg != "" {
				w.error(msg)
				return
			}
			// A set in byte order, as Redis keeps them (TRACKINGINFO lists them so).
			opt.prefixes = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(cur.prefixes), opt.prefixes...))))
		}
		opt.on = true
		// Its own outbox carries the invalidations, or, redirected, the
		// tracking-redir-broken message.
		s.subscriberOf(cl)
		s.tracker.hook.Do(func() {
			if aw, ok := s.store.(appliedWatcher); ok {
				aw.OnApplied(s.invalidate)
			}
		})
		s.setTracking(cl, opt)
	case "off":
		s.setTracking(cl, tracking{})
	default:
		w.error("ERR syntax error")
		return
	}
	w.ok()
}

// prefixCollision is Redis's refusal of BCAST prefixes where one starts
// another (or equals it): each new one against those the client has, in
// byte order, then against the new ones after it ("" when none).
func prefixCollision(have, add []string) string {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range add {
		for _, h := range have {
			if overlap(h, p) {
				return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + h + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range add[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// setTracking changes cl's tracking (off: the zero value) for everyone.
func (s *Server) setTracking(cl *client, t tracking) {
	tr := &s.tracker
	tr.mu.Lock()
	was := cl.trk.on
	cl.trk = t
	switch {
	case t.bcast:
		cl.trackFlags.Store(2)
	case t.on:
		cl.trackFlags.Store(1)
	default:
		cl.trackFlags.Store(0)
	}
	switch {
	case t.on && !was:
		tr.clients[cl.id] = cl
		tr.n.Add(1)
	case !t.on && was:
		delete(tr.clients, cl.id) // its keys go when next changed (nothing is sent to it)
		tr.n.Add(-1)
	}
	tr.mu.Unlock()
	if !t.on {
		cl.caching = 0
	}
}

// clientCaching answers CLIENT CACHING YES|NO.
func clientCaching(c *call) {
	cl, w := c.cl, c.w
	if !cl.trk.on {
		w.error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch strings.ToLower(string(c.args[2])) {
	case "yes":
		if !cl.trk.optin {
			w.error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
		cl.caching = 1
	case "no":
		if !cl.trk.optout {
			w.error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
		cl.caching = -1
	default:
		w.error("ERR syntax error")
		return
	}
	w.ok()
}

// clientTrackingInfo answers CLIENT TRACKINGINFO.
func clientTrackingInfo(c *call) {
	cl, w := c.cl, c.w
	t := cl.trk
	flags := []string{"off"}
	if t.on {
		flags[0] = "on"
	}
	if t.bcast {
		flags = append(flags, "bcast")
	}
	if t.optin {
		flags = append(flags, "optin")
		if cl.caching == 1 {
			flags = append(flags, "caching-yes")
		}
	}
	if t.optout {
		flags = append(flags, "optout")
		if cl.caching == -1 {
			flags = append(flags, "caching-no")
		}
	}
	if t.on && t.redirect != 0 {
		if c.s.clientByID(t.redirect) == nil {
			flags = append(flags, "broken_redirect")
		}
	}
	w.mapLen(3)
	w.bulkString("flags")
	w.setLen(len(flags))
	for _, f := range flags {
		w.bulkString(f)
	}
	w.bulkString("redirect")
	switch {
	case !t.on:
		w.integer(-1)
	default:
		w.integer(t.redirect)
	}
	w.bulkString("prefixes")
	w.array(len(t.prefixes))
	for _, p := range t.prefixes {
		w.bulkString(p)
	}
}

// trackRead records the keys a read-only command of cl is about to read,
// when cl tracks them (before the read: see the invariant). A script's
// reads are tracked as Redis 7.0 does: its declared keys, once one of its
// commands reads (scriptCtx.exec), not EVAL_RO's own.
func (s *Server) trackRead(cl *client, cmd *command, args [][]byte) {
	if cmd.flags&flagReadonly == 0 || cmd.group == "scripting" {
		return
	}
	s.trackKeys(cl, cmd.keysAt(args))
}

// trackKeys records keys for cl when its mode tracks this read.
func (s *Server) trackKeys(cl *client, keys [][]byte) {
	t := cl.trk
	if !t.on || t.bcast || (t.optin && cl.caching != 1) || (t.optout && cl.caching == -1) || len(keys) == 0 {
		return
	}
	tr := &s.tracker
	tr.mu.Lock()
	for _, k := range keys {
		ids := tr.keys[string(k)]
		if ids == nil {
			ids = map[int64]struct{}{}
			tr.keys[string(k)] = ids
		}
		ids[cl.id] = struct{}{}
	}
	evicted := tr.overLimitLocked()
	tr.mu.Unlock()
	if ps := cl.ps; ps != nil {
		// A goroutine connection's push writer must not send an
		// invalidation ahead of this read's reply: its flush sends both,
		// the reply first (an event loop's connection always does).
		ps.mu.Lock()
		ps.held = true
		ps.mu.Unlock()
	}
	s.tellEvicted(evicted)
}

// overLimitLocked drops keys past tracking-table-max-keys and returns
// them with their holders (tr.mu held).
func (tr *tracker) overLimitLocked() map[string]map[int64]struct{} {
	limit := tr.maxKeys.Load()
	if limit <= 0 || int64(len(tr.keys)) <= limit {
		return nil
	}
	evicted := map[string]map[int64]struct{}{}
	for k, ids := range tr.keys {
		if int64(len(tr.keys)) <= limit {
			break
		}
		evicted[k] = ids
		delete(tr.keys, k)
	}
	return evicted
}

// tellEvicted tells the holders of keys dropped from the table that they
// changed: they drop them, as they would not hear of their next change.
func (s *Server) tellEvicted(evicted map[string]map[int64]struct{}) {
	if len(evicted) == 0 {
		return
	}
	tr := &s.tracker
	type msg struct {
		cl  *client
		trk tracking
		key []byte
	}
	var out []msg
	tr.mu.Lock()
	for k, ids := range evicted {
		for id := range ids {
			if cl := tr.clients[id]; cl != nil && !cl.trk.bcast {
				out = append(out, msg{cl, cl.trk, []byte(k)})
			}
		}
	}
	tr.mu.Unlock()
	for _, m := range out {
		s.sendInvalidation(m.cl, m.trk, [][]byte{m.key})
	}
}

// setMaxTrackedKeys is CONFIG SET tracking-table-max-keys.
func (s *Server) setMaxTrackedKeys(n int64) {
	tr := &s.tracker
	tr.maxKeys.Store(n)
	tr.mu.Lock()
	evicted := tr.overLimitLocked()
	tr.mu.Unlock()
	s.tellEvicted(evicted)
}

// invalidate is the store's OnApplied callback: each changed key's
// holders, and the broadcast clients whose prefixes it falls under, are
// told; a flush tells every tracking client.
func (s *Server) invalidate(keys [][]byte, flushed bool) {
	if s.tracker.n.Load() == 0 {
		if flushed { // a flush empties the table, holders or not (Redis)
			s.tracker.mu.Lock()
			clear(s.tracker.keys)
			s.tracker.mu.Unlock()
		}
		return
	}
	s.tellKeys(keys, flushed)
}

// tellKeys sends the invalidation messages for keys (and a flush), as
// Redis words them: in the default mode one message per key; in BCAST
// mode one per prefix with the keys under it (Redis sends those once per
// event-loop turn, here once per applied group); a flush one null to every
// tracking client.
func (s *Server) tellKeys(keys [][]byte, flushed bool) {
	tr := &s.tracker
	type msg struct {
		cl   *client
		trk  tracking
		keys [][]byte // nil: a flush
	}
	var out []msg
	bcast := map[[2]int64]int{} // (client id, prefix index) -> its message in out
	tr.mu.Lock()
	if flushed {
		clear(tr.keys)
		for _, cl := range tr.clients {
			out = append(out, msg{cl: cl, trk: cl.trk})
		}
	}
	for _, k := range keys {
		if ids, ok := tr.keys[string(k)]; ok {
			for id := range ids {
				if cl := tr.clients[id]; cl != nil && !cl.trk.bcast {
					out = append(out, msg{cl: cl, trk: cl.trk, keys: [][]byte{k}})
				}
			}
			delete(tr.keys, string(k))
		}
		for _, cl := range tr.clients {
			if !cl.trk.bcast {
				continue
			}
			p := prefixOf(cl.trk.prefixes, k)
			if p < 0 {
				continue
			}
			at, ok := bcast[[2]int64{cl.id, int64(p)}]
			if !ok {
				at = len(out)
				bcast[[2]int64{cl.id, int64(p)}] = at
				out = append(out, msg{cl: cl, trk: cl.trk, keys: [][]byte{}})
			}
			out[at].keys = append(out[at].keys, k)
		}
	}
	tr.mu.Unlock()
	for _, m := range out {
		s.sendInvalidation(m.cl, m.trk, m.keys)
	}
}

// prefixOf is the index of the BCAST prefix key falls under, or -1 (a
// BCAST client has one at least: "" for every key).
func prefixOf(prefixes []string, key []byte) int {
	for i, p := range prefixes {
		if bytes.HasPrefix(key, []byte(p)) {
			return i
		}
	}
	return -1
}

// sendInvalidation tells cl (tracking t) that keys changed (nil: a flush),
// on its own connection or the one it redirects to.
func (s *Server) sendInvalidation(cl *client, t tracking, keys [][]byte) {
	target := cl
	if t.redirect != 0 {
		if target = s.clientByID(t.redirect); target == nil {
			// Gone: a RESP3 client is told, as Redis tells it.
			if ps := s.outboxOf(cl); ps != nil && cl.proto.Load() == 3 {
				w := replyWriter{resp3: true}
				w.pushLen(2)
				w.bulkString("tracking-redir-broken")
				w.integer(t.redirect)
				ps.push(w.buf, s.pubsub.limits)
			}
			return
		}
	}
	ps := s.outboxOf(target)
	if ps == nil {
		return
	}
	w := replyWriter{resp3: target.proto.Load() == 3}
	switch {
	case w.resp3:
		w.pushLen(2)
		w.bulkString("invalidate")
	case t.redirect == 0 || !s.pubsub.subscribedTo(ps, trackingChannel):
		return // a RESP2 client hears it only through a redirect's channel
	default:
		w.array(3)
		w.bulkString("message")
		w.bulkString(trackingChannel)
	}
	if keys == nil {
		w.null()
	} else {
		w.bulks(keys)
	}
	ps.push(w.buf, s.pubsub.limits)
}

// trackingChannel is the channel a RESP2 redirect target subscribes to.
const trackingChannel = "__redis__:invalidate"

// counts are INFO's tracking_total_keys (keys in the table),
// tracking_total_items (their holders) and tracking_total_prefixes (the
// distinct BCAST prefixes).
func (tr *tracker) counts() (keys, items, prefixes int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	keys = len(tr.keys)
	for _, ids := range tr.keys {
		items += len(ids)
	}
	seen := map[string]bool{}
	for _, cl := range tr.clients {
		if !cl.trk.bcast {
			continue
		}
		for _, p := range cl.trk.prefixes {
			seen[p] = true
		}
	}
	return keys, items, len(seen)
}
