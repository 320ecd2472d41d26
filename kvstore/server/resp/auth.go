package resp

// Password guessing is slowed, never a right password: AUTH checks the
// password at once and answers a right one at once, while a wrong one holds
// the connection — its reply and every command after it — for a delay that
// grows with the failures of the connection and of its source address, and
// the connection is closed after maxAuthFailures failures in a row. The
// failures of every address are kept in a table of bounded size.

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

const (
	// maxAuthFailures closes a connection after that many wrong
	// passwords in a row.
	maxAuthFailures = 10
	// authBaseDelay is the hold after a first failure; it doubles with
	// each failure up to authMaxDelay.
	authBaseDelay = time.Millisecond
	authMaxDelay  = 2 * time.Second
	// authMaxHold bounds how far ahead an address's failures are queued
	// (see authGuard.fail), so a held connection is served again soon.
	authMaxHold = 10 * time.Second
	// authForget is how long after its last failure an address starts
	// afresh.
	authForget = time.Minute
	// maxAuthAddrs bounds the addresses tracked.
	maxAuthAddrs = 16384
)

// authGuard tracks wrong passwords by source address (an IPv6 address by
// its /64, which one host usually holds whole).
type authGuard struct {
	mu    sync.Mutex
	addrs map[netip.Prefix]*addrFailures
}

type addrFailures struct {
	fails int
	last  time.Time
	next  time.Time // the end of the last hold handed out
}

func newAuthGuard() *authGuard { return &authGuard{addrs: map[netip.Prefix]*addrFailures{}} }

// addrKey is the table key of a remote address ("host:port").
func addrKey(remote string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		// Not an IP (a Unix socket): one bucket for every such peer.
		host, _, _ := net.SplitHostPort(remote)
		if a, err := netip.ParseAddr(host); err == nil {
			ap = netip.AddrPortFrom(a, 0)
		} else {
			return netip.Prefix{}
		}
	}
	a := ap.Addr().Unmap()
	bits := a.BitLen()
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// fail records a wrong password from remote, the connFails-th in a row on
// its connection, and returns until when the connection is held: a delay
// doubling with the greater of the connection's and the address's
// failures, after the holds already handed out to that address (so many
// connections from one address do not guess in parallel), at most
// authMaxHold ahead.
func (g *authGuard) fail(remote string, connFails int, now time.Time) time.Time {
	key := addrKey(remote)
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.addrs[key]
	if a != nil && now.Sub(a.last) > authForget {
		a.fails, a.next = 0, time.Time{}
	}
	if a == nil {
		g.evict(now)
		a = &addrFailures{}
		g.addrs[key] = a
	}
	a.fails++
	a.last = now
	n := max(a.fails, connFails)
	delay := authMaxDelay
	if n <= 20 {
		delay = min(authMaxDelay, authBaseDelay<<(n-1))
	}
	until := now.Add(delay)
	if a.next.After(now) {
		until = a.next.Add(delay)
	}
	until = minTime(until, now.Add(authMaxHold))
	a.next = until
	return until
}

// evict makes room when the table is full: in one pass it drops the
// forgotten addresses and, until an eighth of the table is free, others
// (map order), so that the pass's cost is shared by the next maxAuthAddrs/8
// new addresses rather than paid by each.
func (g *authGuard) evict(now time.Time) {
	if len(g.addrs) < maxAuthAddrs {
		return
	}
	for k, a := range g.addrs {
		if now.Sub(a.last) > authForget || len(g.addrs) > maxAuthAddrs-maxAuthAddrs/8 {
			delete(g.addrs, k)
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// authenticate checks a password in constant time.
func (s *Server) authenticate(password []byte) bool {
	return subtle.ConstantTimeCompare(password, []byte(s.opts.Password)) == 1
}

// cmdAuth answers AUTH [username] password as Redis 7 does with
// requirepass (the user "default" only); a wrong password holds the
// connection (authGuard).
func cmdAuth(c *call) {
	args := c.args[1:]
	if len(args) > 2 {
		c.fail(errSyntax)
		return
	}
	if c.s.opts.Password == "" && len(args) == 1 {
		c.w.error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if c.login(len(args) == 1 || string(args[0]) == "default", args[len(args)-1]) {
		c.w.ok()
		return
	}
	c.w.error(wrongPass)
}

const wrongPass = "WRONGPASS invalid username-password pair or user is disabled."

// login checks password (with userOK: the user named is "default"): without
// --requirepass the default user takes any; with it, right authenticates
// the connection, wrong holds it and, after maxAuthFailures, closes it
// (authGuard). The caller answers.
func (c *call) login(userOK bool, password []byte) bool {
	if c.s.opts.Password == "" {
		return userOK
	}
	cl := c.cl
	if c.s.authenticate(password) && userOK {
		cl.authed, cl.authFails = true, 0
		return true
	}
	cl.authFails++
	cl.holdUntil = c.s.auth.fail(cl.addr, cl.authFails, time.Now())
	if cl.authFails >= maxAuthFailures {
		cl.log.Warn("closing the connection after repeated wrong passwords", "failures", cl.authFails)
		cl.quit = true
	}
	return false
}

// cmdHello answers Redis 6's HELLO [protover [AUTH username password]
// [SETNAME clientname]] as Redis 7.0 does: it authenticates and names the
// connection as asked, switches it to the protocol asked (2: RESP2, 3:
// RESP3; without one it stays) and answers the server's description, a map
// (RESP2's flat array). Options are checked in Redis's order, and a wrong
// password counts as AUTH's does; a HELLO that fails changes nothing.
func cmdHello(c *call) {
	w, cl := c.w, c.cl
	args := c.args[1:]
	proto := int64(2)
	if cl.out.resp3 {
		proto = 3
	}
	if len(args) > 0 {
		v, ok := parseStrictInt(args[0])
		if !ok {
			w.error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			w.error("NOPROTO unsupported protocol version")
			return
		}
		proto, args = v, args[1:]
	}
	for j := 0; j < len(args); j++ {
		more := len(args) - 1 - j
		switch opt := string(args[j]); {
		case strings.EqualFold(opt, "AUTH") && more >= 2:
			if !c.login(string(args[j+1]) == "default", args[j+2]) {
				w.error(wrongPass)
				return
			}
			j += 2
		case strings.EqualFold(opt, "SETNAME") && more >= 1:
			if !setClientName(w, cl, args[j+1]) {
				return
			}
			j++
		default:
			w.error(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", printable(args[j])))
			return
		}
	}
	if !cl.authed {
		w.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	// The description is already in the new protocol, as Redis's is (w is
	// EXEC's writer inside a transaction: the replies after it too).
	cl.out.resp3, w.resp3 = proto == 3, proto == 3
	cl.proto.Store(int32(proto))
	w.mapLen(7)
	for _, s := range []string{"server", "redis", "version", compatVersion, "proto"} {
		w.bulkString(s)
	}
	w.integer(proto)
	w.bulkString("id")
	w.integer(cl.id)
	for _, s := range []string{"mode", "standalone", "role", "master", "modules"} {
		w.bulkString(s)
	}
	w.array(0)
}
