package policy

// The client address is the direct peer's unless that peer is a trusted
// proxy. Only then is X-Forwarded-For (or Forwarded) read, from the right,
// skipping trusted hops: the leftmost entries are whatever the client chose
// to send. Identity headers (user, tenant, plan) are believed only from a
// trusted peer, and what goes upstream is what was verified: those headers
// and X-Real-IP are stripped from untrusted peers, and X-Forwarded-For and
// Forwarded are rewritten to the verified chain.

import (
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// IdentityConfig says how a request's client is identified. The zero value
// trusts no peer and believes no identity header.
type IdentityConfig struct {
	// TrustedProxies are the peers whose X-Forwarded-For (or Forwarded) and
	// identity headers are believed.
	TrustedProxies []netip.Prefix
	// IPv6Prefix groups IPv6 clients by network (64: one per /64, as one
	// subscriber usually holds a whole /64). 128 keys each address apart.
	IPv6Prefix int
	// UserHeader, TenantHeader and PlanHeader name request headers that
	// carry the user, tenant and plan, as set by an authenticating gateway.
	UserHeader, TenantHeader, PlanHeader string
	// TrustHeadersFromAnyPeer believes those headers from untrusted peers
	// too (headers_from_trusted_only: false): any client may then pick its
	// plan. Without TrustedProxies the headers are never believed.
	TrustHeadersFromAnyPeer bool
	// ReadForwarded reads the client chain from the RFC 7239 Forwarded
	// header (for=) instead of X-Forwarded-For (identity.client_header).
	ReadForwarded bool
}

// Identity is who sent a request.
type Identity struct {
	IP     string // the client address, or its IPv6 network
	User   string
	Tenant string
	Plan   string
}

// Identify reads the identity of r.
func (c *IdentityConfig) Identify(r *http.Request) Identity {
	peer := peerAddr(r.RemoteAddr)
	client := peer
	if c.trusted(peer) {
		client = c.verifiedChain(peer, r.Header)[0]
	} else if host, ok := ipv4Host(r.RemoteAddr); ok && peer.Is4() {
		// The usual request (an IPv4 peer speaking for itself): its
		// address as written in RemoteAddr is the key already, with no
		// string to build.
		id := c.identity(r, peer, netip.Addr{})
		id.IP = host
		return id
	}
	return c.identity(r, peer, client)
}

// ipv4Host is the host of "a.b.c.d:port" when it is written as
// netip.Addr.String writes an IPv4 address (four decimal octets, no
// leading zeros: what ParseAddr accepts), so that it can stand for the
// address's String.
func ipv4Host(remote string) (string, bool) {
	i := strings.LastIndexByte(remote, ':')
	if i < 7 || i > 15 {
		return "", false
	}
	for j := 0; j < i; j++ {
		if c := remote[j]; c != '.' && (c < '0' || c > '9') {
			return "", false
		}
	}
	return remote[:i], true
}

// IdentifyPeer is Identify for a server that parsed the direct peer's
// address already (once per connection). It also returns the verified
// chain, client first and peer last, appended to buf, for
// SetUpstreamHeadersFrom: a proxy reads X-Forwarded-For once per request.
func (c *IdentityConfig) IdentifyPeer(r *http.Request, peer netip.Addr, buf []netip.Addr) (Identity, []netip.Addr) {
	chain := append(buf[:0], peer)
	if c.trusted(peer) {
		chain = c.verifiedChain(peer, r.Header)
	}
	return c.identity(r, peer, chain[0]), chain
}

func (c *IdentityConfig) identity(r *http.Request, peer, client netip.Addr) Identity {
	id := Identity{IP: c.group(client)}
	if c.believesHeaders(peer) {
		id.User = headerValue(r, c.UserHeader)
		id.Tenant = headerValue(r, c.TenantHeader)
		id.Plan = headerValue(r, c.PlanHeader)
	}
	return id
}

func (c *IdentityConfig) believesHeaders(peer netip.Addr) bool {
	return len(c.TrustedProxies) > 0 && (c.trusted(peer) || c.TrustHeadersFromAnyPeer)
}

func headerValue(r *http.Request, name string) string {
	if name == "" {
		return ""
	}
	return strings.TrimSpace(r.Header.Get(name))
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap().WithZone("")
}

func (c *IdentityConfig) trusted(a netip.Addr) bool {
	return a.IsValid() && slices.ContainsFunc(c.TrustedProxies, func(p netip.Prefix) bool { return p.Contains(a) })
}

// ClientAddr resolves the client address from the direct peer and the
// X-Forwarded-For header values (in order of appearance).
func (c *IdentityConfig) ClientAddr(peer netip.Addr, forwardedFor []string) netip.Addr {
	if !c.trusted(peer) {
		return peer
	}
	return c.chainFrom(peer, xffHops(forwardedFor))[0]
}

// verifiedChain is the client address followed by the proxies that passed
// the request on, ending with the direct peer: the hops of X-Forwarded-For
// (or Forwarded) from the right while they are trusted, and the first
// untrusted one, which is the client.
func (c *IdentityConfig) verifiedChain(peer netip.Addr, h http.Header) []netip.Addr {
	if !c.trusted(peer) {
		return []netip.Addr{peer}
	}
	if c.ReadForwarded {
		return c.chainFrom(peer, forwardedFor(h.Values("Forwarded")))
	}
	return c.chainFrom(peer, xffHops(h.Values("X-Forwarded-For")))
}

// xffHops splits X-Forwarded-For values into their hops, in order.
func xffHops(values []string) []string {
	var hops []string
	for _, v := range values {
		hops = append(hops, strings.Split(v, ",")...)
	}
	return hops
}

// chainFrom walks hops from the right behind the trusted peer (see
// verifiedChain).
func (c *IdentityConfig) chainFrom(peer netip.Addr, hops []string) []netip.Addr {
	chain := []netip.Addr{peer}
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			// Garbage from the hop after the last trusted one: stop at what we know.
			break
		}
		chain = append(chain, a)
		if !c.trusted(a) {
			break
		}
	}
	slices.Reverse(chain)
	return chain
}

// parseHop reads one hop: "IP", "IP:port", "[v6]" or "[v6]:port".
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a.Unmap().WithZone(""), true
		}
	}
	return netip.Addr{}, false
}

// forwardedFor extracts the for= values of Forwarded header values (RFC
// 7239), in order: `for=192.0.2.60;proto=http, for="[2001:db8::17]:4711"`.
// An element without for= yields "" (not an address: the walk stops there).
func forwardedFor(values []string) []string {
	var out []string
	for _, v := range values {
		for _, elem := range strings.Split(v, ",") {
			hop := ""
			for _, pair := range strings.Split(elem, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(k, "for") {
					hop = strings.Trim(strings.TrimSpace(val), `"`)
				}
			}
			out = append(out, hop)
		}
	}
	return out
}

// Group renders a client address as identities hold it: IPv6 masked to
// the configured prefix (IPv6Prefix), "" for an invalid address.
func (c *IdentityConfig) Group(a netip.Addr) string { return c.group(a.Unmap().WithZone("")) }

// group renders an address, IPv6 masked to the configured prefix.
func (c *IdentityConfig) group(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	if a.Is6() && c.IPv6Prefix > 0 && c.IPv6Prefix < 128 {
		p, _ := a.Prefix(c.IPv6Prefix)
		return p.String()
	}
	return a.String()
}

// Trusts reports whether a peer address ("host:port" or "host") is a
// trusted proxy, whose X-Forwarded-For may be believed and passed on.
func (c *IdentityConfig) Trusts(remoteAddr string) bool { return c.trusted(peerAddr(remoteAddr)) }

// SetUpstreamHeaders prepares out, the headers of the request a proxy sends
// upstream for in: identity headers and X-Real-IP are removed unless they
// were believed, and X-Forwarded-For, X-Real-IP and Forwarded are set to
// the verified chain (client first, the direct peer last). proto is "http"
// or "https", as the client spoke to the proxy.
func (c *IdentityConfig) SetUpstreamHeaders(in *http.Request, out http.Header, proto string) {
	peer := peerAddr(in.RemoteAddr)
	c.SetUpstreamHeadersFrom(in, out, proto, peer, c.verifiedChain(peer, in.Header))
}

// SetUpstreamHeadersFrom is SetUpstreamHeaders with the peer and the
// verified chain IdentifyPeer returned for in.
func (c *IdentityConfig) SetUpstreamHeadersFrom(in *http.Request, out http.Header, proto string, peer netip.Addr, chain []netip.Addr) {
	if !c.believesHeaders(peer) {
		for _, h := range []string{c.UserHeader, c.TenantHeader, c.PlanHeader} {
			if h != "" {
				out.Del(h)
			}
		}
	}
	var xff, fwd strings.Builder
	for i, a := range chain {
		if !a.IsValid() {
			continue
		}
		if i > 0 {
			xff.WriteString(", ")
			fwd.WriteString(", ")
		}
		xff.WriteString(a.String())
		fwd.WriteString("for=")
		if a.Is6() {
			fwd.WriteString(`"[` + a.String() + `]"`)
		} else {
			fwd.WriteString(a.String())
		}
		if i == len(chain)-1 {
			fwd.WriteString(";proto=" + proto)
			if host := in.Host; host != "" && !strings.ContainsAny(host, "\";, ") {
				fwd.WriteString(";host=" + host)
			}
		}
	}
	out.Del("X-Forwarded-For")
	out.Del("Forwarded")
	out.Del("X-Real-Ip")
	if xff.Len() > 0 {
		out.Set("X-Forwarded-For", xff.String())
		out.Set("Forwarded", fwd.String())
		out.Set("X-Real-Ip", chain[0].String())
	}
}
