package resp

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MONITOR, as Redis 7.0 feeds its monitors: every command the server runs,
// from any connection, as one status line
//
//	+1700000000.123456 [0 127.0.0.1:50321] "set" "k" "v"
//
// with each argument quoted as Redis's sdscatrepr quotes it, after the
// command ran (a command refused before it runs is not shown; one queued
// by MULTI shows when EXEC runs it). EVAL, EVALSHA and FCALL show before
// they run, so that the commands of their script ("[0 lua]") follow them.
// Server administration (CONFIG, SAVE, BGSAVE, SHUTDOWN, MONITOR, CLIENT
// LIST and UNBLOCK) is never shown, and the arguments of AUTH and HELLO's AUTH are "(redacted)".
//
// A monitor's lines go through the same outbox as a subscriber's messages
// (pubsub.go): bounded by the pub/sub output limits, written between the
// connection's replies, never in front of one already written.

// monitorHub is the outboxes of the monitoring connections.
type monitorHub struct {
	n    atomic.Int32 // len(list): the fast path of every command reads it
	mu   sync.Mutex
	list []*subscriber
}

func (h *monitorHub) add(ps *subscriber) {
	h.mu.Lock()
	h.list = append(h.list, ps)
	h.n.Store(int32(len(h.list)))
	h.mu.Unlock()
}

func (h *monitorHub) remove(cl *client) {
	h.mu.Lock()
	h.list = slices.DeleteFunc(h.list, func(ps *subscriber) bool { return ps.cl == cl })
	h.n.Store(int32(len(h.list)))
	h.mu.Unlock()
}

// cmdMonitor answers MONITOR: the connection gets every command run from
// now on. A second MONITOR is not answered, and MONITOR inside EXEC is
// refused, as in Redis.
func cmdMonitor(c *call) {
	cl := c.cl
	if c.tx != nil {
		c.w.error("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	if cl.monitoring.Load() {
		return
	}
	cl.monitoring.Store(true)
	c.s.monitors.add(c.s.subscriberOf(cl)) // the outbox the lines go through
	c.w.ok()
}

// stopMonitoring takes the connection off the monitors (RESET, close).
func (s *Server) stopMonitoring(cl *client) {
	if cl.monitoring.Swap(false) {
		s.monitors.remove(cl)
	}
}

// feedMonitors shows a command run by cl (fromScript: by a script cl runs)
// to the monitors; its caller checked that there is one.
func (s *Server) feedMonitors(cl *client, fromScript bool, cmd *command, args [][]byte) {
	if cmd.flags&flagSkipMonitor == 0 && !(cmd.name == "client" && len(args) > 1 && adminClientSubcommand(args[1])) {
		s.feedMonitorsNow(cl, fromScript, cmd.name, args)
	}
}

// adminClientSubcommand: the CLIENT subcommands Redis 7.0 flags admin
// (not shown to monitors).
func adminClientSubcommand(sub []byte) bool {
	switch strings.ToLower(string(sub)) {
	case "kill", "list", "no-evict", "pause", "unblock", "unpause":
		return true
	}
	return false
}

// feedMonitorsNow shows a command whatever its flags (EVAL, FCALL: before
// they run).
func (s *Server) feedMonitorsNow(cl *client, fromScript bool, name string, args [][]byte) {
	line := monitorLine(time.Now(), cl.addr, fromScript, name, args)
	lim := s.pubsub.limits
	s.monitors.mu.Lock()
	for _, ps := range s.monitors.list {
		ps.push(line, lim)
	}
	s.monitors.mu.Unlock()
}

// monitorLine is the line a monitor receives for one command.
func monitorLine(now time.Time, addr string, fromScript bool, name string, args [][]byte) []byte {
	b := make([]byte, 0, 64+16*len(args))
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	usec := strconv.AppendInt(nil, int64(now.Nanosecond()/1000), 10)
	b = append(b, "000000"[len(usec):]...)
	b = append(b, usec...)
	if fromScript {
		b = append(b, " [0 lua] "...)
	} else {
		b = append(b, " [0 "...)
		b = append(b, addr...)
		b = append(b, "] "...)
	}
	redactFrom := len(args)
	switch name {
	case "auth":
		redactFrom = 1
	case "hello":
		for i := 1; i+2 < len(args); i++ {
			if strings.EqualFold(string(args[i]), "AUTH") {
				redactFrom = -i // the two arguments after AUTH
				break
			}
		}
	}
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		if (redactFrom > 0 && i >= redactFrom) || (redactFrom < 0 && (i == -redactFrom+1 || i == -redactFrom+2)) {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

// appendRepr appends s quoted as Redis's sdscatrepr does: \\ \" \n \r \t
// \a \b escaped, other bytes outside printable ASCII as \xHH.
func appendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range s {
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if c >= ' ' && c < 0x7f {
				b = append(b, c)
			} else {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
			}
		}
	}
	return append(b, '"')
}
