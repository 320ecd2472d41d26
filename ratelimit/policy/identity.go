package policy

// The client address is the direct peer's unless that peer is a trusted
// proxy. Only then is X-Forwarded-For read, from the right, skipping trusted
// hops: the leftmost entries are whatever the client chose to send.

import (
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// IdentityConfig says how a request's client is identified.
type IdentityConfig struct {
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// IPv6Prefix groups IPv6 clients by network (64: one per /64, as one
	// subscriber usually holds a whole /64). 128 keys each address apart.
	IPv6Prefix int
	// UserHeader, TenantHeader and PlanHeader name request headers that
	// carry the user, tenant and plan, as set by an authenticating gateway.
	UserHeader, TenantHeader, PlanHeader string
	// HeadersFromTrustedOnly ignores those headers unless the direct peer
	// is a trusted proxy, so clients cannot pick their own plan.
	HeadersFromTrustedOnly bool
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
	client := c.ClientAddr(peer, r.Header.Values("X-Forwarded-For"))
	id := Identity{IP: c.group(client)}
	if !c.HeadersFromTrustedOnly || c.trusted(peer) {
		id.User = headerValue(r, c.UserHeader)
		id.Tenant = headerValue(r, c.TenantHeader)
		id.Plan = headerValue(r, c.PlanHeader)
	}
	return id
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
	var hops []string
	for _, v := range forwardedFor {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			// Garbage from the hop after the last trusted one: stop at what we know.
			return client
		}
		client = a.Unmap().WithZone("")
		if !c.trusted(client) {
			return client
		}
	}
	return client
}

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
