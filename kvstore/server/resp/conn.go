package resp

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

func cmdPing(c *call) {
	if c.cl.subscribedMode() && len(c.args) <= 2 {
		// In subscribed mode PING answers as a message would (RESP2).
		c.w.array(2)
		c.w.bulkString("pong")
		if len(c.args) == 2 {
			c.w.bulk(c.args[1])
		} else {
			c.w.bulkString("")
		}
		return
	}
	switch len(c.args) {
	case 1:
		c.w.simple("PONG")
	case 2:
		c.w.bulk(c.args[1])
	default:
		wrongArgs(c.w, c.cmd.name)
	}
}

func cmdEcho(c *call) { c.w.bulk(c.args[1]) }

func cmdQuit(c *call) {
	c.w.ok()
	c.cl.quit = true
}

func cmdSelect(c *call) {
	n, ok := parseStrictInt(c.args[1])
	switch {
	case !ok:
		c.fail(errNotInteger)
	case n != 0:
		c.w.error("ERR DB index is out of range")
	default:
		c.w.ok()
	}
}

func cmdClient(c *call) {
	w, cl := c.w, c.cl
	sub := strings.ToUpper(string(c.args[1]))
	switch sub {
	case "SETNAME":
		if len(c.args) != 3 {
			wrongArgs(w, "client|setname")
			return
		}
		if setClientName(w, cl, c.args[2]) {
			w.ok()
		}
	case "GETNAME":
		if name := cl.name.Load(); name == nil || *name == "" {
			w.null()
		} else {
			w.bulkString(*name)
		}
	case "SETINFO":
		if len(c.args) != 4 {
			wrongArgs(w, "client|setinfo")
			return
		}
		w.ok()
	case "ID":
		w.integer(cl.id)
	case "INFO":
		w.verbatim(c.s.clientLine(cl, time.Now()))
	case "LIST":
		w.verbatim(c.s.clientList())
	case "UNBLOCK":
		cmdClientUnblock(c)
	case "TRACKING":
		if len(c.args) < 3 {
			wrongArgs(w, "client|tracking")
			return
		}
		clientTracking(c)
	case "CACHING":
		if len(c.args) != 3 {
			wrongArgs(w, "client|caching")
			return
		}
		clientCaching(c)
	case "GETREDIR":
		if len(c.args) != 2 {
			wrongArgs(w, "client|getredir")
			return
		}
		if cl.trk.on {
			w.integer(cl.trk.redirect)
		} else {
			w.integer(-1)
		}
	case "TRACKINGINFO":
		if len(c.args) != 2 {
			wrongArgs(w, "client|trackinginfo")
			return
		}
		clientTrackingInfo(c)
	case "REPLY":
		cmdClientReply(c)
	default:
		unknownSubcommand(w, c.args[1], "CLIENT")
	}
}

// setClientName names cl as CLIENT SETNAME and HELLO SETNAME do, or
// answers Redis's error for a name it refuses.
func setClientName(w *replyWriter, cl *client, name []byte) bool {
	if bytes.ContainsAny(name, " \n\r") {
		w.error("ERR Client names cannot contain spaces, newlines or special characters.")
		return false
	}
	n := string(name)
	cl.name.Store(&n)
	return true
}

// cmdClientReply answers CLIENT REPLY ON|OFF|SKIP as Redis does: OFF and
// SKIP answer nothing; OFF drops every reply until ON, SKIP the next
// command's. Pub/sub messages and (un)subscribe confirmations still go.
// cmdReset answers RESET as Redis 7.0 does: the connection is as a new
// one is — out of MULTI (its queue discarded) and WATCH, unsubscribed from
// every channel, pattern and shard channel (without confirmations), back
// on RESP2, nameless, CLIENT REPLY ON, and, under --requirepass, logged
// out. It runs in MULTI (never queued), in RESP2's subscribed mode and
// before AUTH, and answers +RESET (in the protocol it restores).
func cmdReset(c *call) {
	cl := c.cl
	if cl.multi {
		cl.resetMulti()
	}
	cl.watched = nil
	if ps := cl.ps; ps != nil {
		c.s.pubsub.leaveEvery(cl)
	}
	c.s.stopMonitoring(cl)
	if cl.trk.on {
		c.s.setTracking(cl, tracking{})
	}
	cl.out.resp3, c.w.resp3 = false, false
	cl.proto.Store(2)
	cl.name.Store(nil)
	cl.replyOff, cl.replySkip, cl.replySkipNext = false, false, false
	cl.authed = c.s.opts.Password == ""
	c.w.simple("RESET")
}

func cmdClientReply(c *call) {
	if len(c.args) != 3 {
		wrongArgs(c.w, "client|reply")
		return
	}
	cl := c.cl
	switch strings.ToUpper(string(c.args[2])) {
	case "ON":
		cl.replyOff, cl.replySkip = false, false
		c.w.ok()
	case "OFF":
		cl.replyOff = true
	case "SKIP":
		cl.replySkipNext = !cl.replyOff
	default:
		c.fail(errSyntax)
	}
}

// dropReply drops the reply the command cmd wrote from mark on when
// CLIENT REPLY says so, and arms a SKIP for the next command.
func (cl *client) dropReply(cmd *command, mark int) {
	if (cl.replyOff || cl.replySkip) && !(cmd.group == "pubsub" && cmd.flags&flagPubSub != 0) && len(cl.out.buf) >= mark {
		cl.out.buf = cl.out.buf[:mark]
	}
	cl.replySkip, cl.replySkipNext = cl.replySkipNext, false
}

// cmdClientUnblock answers CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when the
// client was in a blocking command, which then answers as if it had timed
// out (or with an UNBLOCKED error), else 0.
func cmdClientUnblock(c *call) {
	if len(c.args) != 3 && len(c.args) != 4 {
		c.w.error(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try CLIENT HELP.", printable(c.args[1])))
		return
	}
	id, ok := parseStrictInt(c.args[2])
	if !ok {
		c.fail(errNotInteger)
		return
	}
	mode := unblockTimeout
	if len(c.args) == 4 {
		switch strings.ToUpper(string(c.args[3])) {
		case "TIMEOUT":
		case "ERROR":
			mode = unblockError
		default:
			c.w.error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	c.w.integer(boolInt64(c.s.blocks.unblockClient(id, mode)))
}

// clientList is CLIENT LIST: one line per connection, in id order.
func (s *Server) clientList() string {
	now := time.Now()
	var b strings.Builder
	for _, cl := range s.clientsSnapshot() {
		b.WriteString(s.clientLine(cl, now))
	}
	return b.String()
}

// clientLine is one line of CLIENT LIST in Redis's field names.
func (s *Server) clientLine(cl *client, now time.Time) string {
	name := ""
	if p := cl.name.Load(); p != nil {
		name = *p
	}
	last := "NULL"
	if cmd := cl.lastCmd.Load(); cmd != nil {
		last = cmd.name
	}
	idle := now.Sub(time.Unix(0, cl.lastActive.Load()))
	flags := "" // in Redis's order: O, P, x
	if cl.monitoring.Load() {
		flags += "O"
	}
	subs, psubs, ssubs := cl.subs.Load(), cl.psubs.Load(), cl.ssubs.Load()
	if subs+psubs+ssubs > 0 {
		flags += "P"
	}
	if cl.multiLen.Load() >= 0 {
		flags += "x"
	}
	if t := cl.trackFlags.Load(); t != 0 {
		flags += [...]string{"", "t", "tB"}[t]
	}
	if flags == "" {
		flags = "N"
	}
	return "id=" + strconv.FormatInt(cl.id, 10) +
		" addr=" + cl.addr + " laddr=" + cl.laddr +
		" name=" + name +
		" age=" + strconv.FormatInt(int64(now.Sub(cl.created)/time.Second), 10) +
		" idle=" + strconv.FormatInt(int64(idle/time.Second), 10) +
		" flags=" + flags + " db=0" +
		" sub=" + strconv.Itoa(int(subs)) + " psub=" + strconv.Itoa(int(psubs)) + " ssub=" + strconv.Itoa(int(ssubs)) +
		" multi=" + strconv.FormatInt(cl.multiLen.Load(), 10) +
		" cmd=" + last + " user=default resp=" + strconv.Itoa(max(2, int(cl.proto.Load()))) + "\n"
}
