package resp

import (
	"fmt"
	"testing"
	"time"
)

// The address table stays within maxAuthAddrs however many addresses
// fail; an IPv6 /64 is one address; an address starts afresh a minute
// after its last failure; and the holds of one address follow each other.
func TestAuthGuard_BoundedPerAddressAndGrowing(t *testing.T) {
	g := newAuthGuard()
	now := time.Unix(1_800_000_000, 0)
	for i := range maxAuthAddrs + 5000 {
		g.fail(fmt.Sprintf("10.%d.%d.%d:5000", i>>16&255, i>>8&255, i&255), 1, now)
	}
	if n := len(g.addrs); n > maxAuthAddrs {
		t.Fatalf("%d addresses tracked, want at most %d", n, maxAuthAddrs)
	}

	g = newAuthGuard()
	first := g.fail("[2001:db8::1]:5000", 1, now)
	second := g.fail("[2001:db8::2]:6000", 1, now) // the same /64, another connection
	if len(g.addrs) != 1 {
		t.Fatalf("%d entries for one /64", len(g.addrs))
	}
	if d1, d2 := first.Sub(now), second.Sub(now); d1 != authBaseDelay || d2 != first.Sub(now)+2*authBaseDelay {
		t.Fatalf("holds %v then %v: want %v, then queued after it and doubled", d1, d2, authBaseDelay)
	}
	var last time.Time
	for range 40 {
		last = g.fail("[2001:db8::3]:7000", 1, now)
	}
	if d := last.Sub(now); d != authMaxHold {
		t.Fatalf("after 42 failures the hold ends %v ahead, want the bound %v", d, authMaxHold)
	}
	if d := g.fail("[2001:db8::4]:7000", 1, now.Add(authForget+time.Second)).Sub(now.Add(authForget + time.Second)); d != authBaseDelay {
		t.Fatalf("a minute after its last failure an address is held %v, want %v", d, authBaseDelay)
	}
	if d := g.fail("127.0.0.1:1", 9, now).Sub(now); d != authBaseDelay<<8 {
		t.Fatalf("a connection's 9th failure in a row is held %v, want %v", d, authBaseDelay<<8)
	}
}
