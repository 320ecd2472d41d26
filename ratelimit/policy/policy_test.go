package policy_test

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

const examples = "../../examples/policies/"

func decide(t *testing.T, p *policy.Policy, method, target, peer string, headers map[string]string) (policy.Decision, bool) {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = peer
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return p.Decide(r, p.Identity.Identify(r))
}

func TestSaaSExample_ReproducesTheSeedSetup(t *testing.T) {
	p, err := policy.Load(examples + "saas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gw := "127.0.0.1:40000" // the trusted gateway
	cases := []struct {
		method, path, plan string
		rule               string
		want               ratelimit.Limit
	}{
		{"POST", "/auth/login", "enterprise", "login", ratelimit.Limit{Name: "login", Rate: 5, Period: 15 * time.Minute, Block: time.Hour}},
		{"POST", "/auth/register", "pro", "register", ratelimit.Limit{Name: "register", Rate: 3, Period: time.Hour, Block: 24 * time.Hour}},
		{"POST", "/auth/forgot-password", "", "auth", ratelimit.Limit{Name: "auth", Rate: 10, Period: 5 * time.Minute, Block: 30 * time.Minute}},
		{"GET", "/api/projects", "free", "api", ratelimit.Limit{Name: "api-free-get", Rate: 100, Period: time.Minute, Block: 5 * time.Minute}},
		{"POST", "/api/projects", "free", "api", ratelimit.Limit{Name: "api-free-post", Rate: 20, Period: time.Minute, Block: 5 * time.Minute}},
		{"DELETE", "/api/projects/1", "pro", "api", ratelimit.Limit{Name: "api-pro-delete", Rate: 50, Period: time.Minute, Block: 5 * time.Minute}},
		{"PATCH", "/api/projects/1", "enterprise", "api", ratelimit.Limit{Name: "api-enterprise-patch", Rate: 1000, Period: time.Minute, Block: 5 * time.Minute}},
		{"GET", "/api/projects", "platinum", "api", ratelimit.Limit{Name: "api-free-get", Rate: 100, Period: time.Minute, Block: 5 * time.Minute}},
		{"HEAD", "/api/projects", "enterprise", "api", ratelimit.Limit{Name: "api-enterprise-get", Rate: 5000, Period: time.Minute, Block: 5 * time.Minute}},
		{"OPTIONS", "/api/projects", "enterprise", "api", ratelimit.Limit{Name: "api-enterprise-any", Rate: 5000, Period: time.Minute, Block: 5 * time.Minute}},
	}
	for _, c := range cases {
		d, ok := decide(t, p, c.method, c.path, gw, map[string]string{"X-Workspace-Plan": c.plan, "X-Workspace-ID": "ws_1"})
		if !ok || d.Rule.Name != c.rule || len(d.Request.Limits) != 1 || d.Request.Limits[0] != c.want {
			t.Errorf("%s %s (%s): rule %v limits %+v, want %s %+v", c.method, c.path, c.plan, d.Rule, d.Request.Limits, c.rule, c.want)
		}
	}
	if d, ok := decide(t, p, "GET", "/health", gw, nil); ok || d.Rule == nil || !d.Rule.Skip {
		t.Errorf("/health is limited: %+v", d)
	}
	d, _ := decide(t, p, "POST", "/auth/register", gw, nil)
	if d.Request.Fail != ratelimit.FailClosed {
		t.Errorf("register fails %v, want closed", d.Request.Fail)
	}
}

func TestSaaSExample_WorkspacesAndAuthKeys(t *testing.T) {
	p, err := policy.Load(examples + "saas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	key := func(method, path, ws, user string) string {
		d, _ := decide(t, p, method, path, "10.1.2.3:5000", map[string]string{
			"X-Forwarded-For": "198.51.100.7", "X-Workspace-ID": ws, "X-User-ID": user, "X-Workspace-Plan": "pro"})
		return d.Request.Key
	}
	if a, b := key("POST", "/api/projects", "ws_a", "alice"), key("POST", "/api/projects", "ws_b", "alice"); a == b {
		t.Errorf("workspaces share a key: %s", a)
	}
	if a, b := key("POST", "/api/projects/1", "ws_a", "alice"), key("POST", "/api/items/1", "ws_a", "alice"); a == b {
		t.Errorf("routes share a key: %s", a)
	}
	// The key holds the template: ids do not mint keys.
	if a, b := key("GET", "/api/items/1", "ws_a", "alice"), key("GET", "/api/items/"+strings.Repeat("x", 2000), "ws_a", "alice"); a != b || strings.Contains(a, "xxx") {
		t.Errorf("two ids of one route: %s vs %.80s", a, b)
	}
	if got := key("POST", "/auth/login", "ws_a", "alice"); got != "login|ip=198.51.100.7" {
		t.Errorf("login key %q: want the client address only, no tenant", got)
	}
	if a, b := key("POST", "/auth/login", "ws_a", "x"), key("POST", "/auth/login", "ws_b", "y"); a != b {
		t.Errorf("login budget differs by workspace: %s vs %s", a, b)
	}
	// A header value cannot forge another identity's key.
	forged := key("GET", "/api/x", "ws_a|ip=1.2.3.4", "bob")
	if strings.Count(forged, "|ip=") != 1 || strings.ContainsAny(forged, "{}") {
		t.Errorf("forged key %q", forged)
	}
}

func TestTiersExample_TokenBucketPerTier(t *testing.T) {
	p, err := policy.Load(examples + "tiers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for plan, want := range map[string]ratelimit.Limit{
		"internal":  {Algorithm: ratelimit.TokenBucket, Rate: 100, Period: time.Second, Burst: 5000},
		"pro":       {Algorithm: ratelimit.TokenBucket, Rate: 10, Period: time.Second, Burst: 600},
		"free":      {Algorithm: ratelimit.TokenBucket, Rate: 2, Period: time.Second, Burst: 120},
		"":          {Algorithm: ratelimit.TokenBucket, Rate: 1, Period: 2 * time.Second, Burst: 30},
		"made-up":   {Algorithm: ratelimit.TokenBucket, Rate: 1, Period: 2 * time.Second, Burst: 30},
		"anonymous": {Algorithm: ratelimit.TokenBucket, Rate: 1, Period: 2 * time.Second, Burst: 30},
	} {
		d, ok := decide(t, p, "POST", "/upload", "127.0.0.1:1", map[string]string{"X-Tier": plan, "X-Request-Cost": "7"})
		got := d.Request.Limits
		if !ok || len(got) != 1 || got[0].Algorithm != want.Algorithm || got[0].Rate != want.Rate || got[0].Period != want.Period || got[0].Burst != want.Burst {
			t.Errorf("tier %q: %+v, want %+v", plan, got, want)
		}
		if d.Request.Cost != 7 {
			t.Errorf("tier %q: cost %d, want 7 from X-Request-Cost", plan, d.Request.Cost)
		}
	}
	d, _ := decide(t, p, "POST", "/upload", "127.0.0.1:1", map[string]string{"X-Request-Cost": "1000000"})
	if d.Request.Cost != 50 {
		t.Errorf("cost not capped by max_cost: %d", d.Request.Cost)
	}
	d, _ = decide(t, p, "POST", "/auth/reset-password", "127.0.0.1:1", nil)
	if d.Request.Limits[0].Algorithm != ratelimit.SlidingLog {
		t.Errorf("password reset: %+v", d.Request.Limits)
	}
}

func TestParse_ErrorsNameFileLineAndField(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown key", "rules:\n  - name: a\n    paths: [/]\n    limitz: []\n", `p.yaml:4: rules[0].limitz: unknown field (want name, paths,`},
		{"bad duration", "rules:\n  - name: a\n    paths: [/]\n    limits:\n      - {limit: 5, window: ten}\n", `p.yaml:5: rules[0].limits[0].window: "ten" is not a duration`},
		{"bad algorithm", "rules:\n  - name: a\n    paths: [/]\n    limits:\n      - limit: 5\n        window: 1m\n        algorithm: leaky\n", `p.yaml:7: rules[0].limits[0].algorithm: unknown algorithm "leaky"`},
		{"zero limit", "rules:\n  - name: a\n    paths: [/]\n    limits:\n      - {window: 1m}\n", `p.yaml:5: rules[0].limits[0].limit: limit must be a positive`},
		{"tenant on global", "rules:\n  - name: a\n    paths: [/]\n    scope: global\n    key: [ip, tenant]\n    limits: [{limit: 1, window: 1s}]\n", `p.yaml:5: rules[0].key[1]: a global rule does not key on the tenant`},
		{"duplicate", "rules:\n  - name: a\n    paths: [/]\n    skip: true\n  - name: a\n    paths: [/x]\n    skip: true\n", `p.yaml:5: rules[1].name: duplicate rule name "a"`},
		{"no default plan", "rules:\n  - name: a\n    paths: [/]\n    plans:\n      free:\n        GET: [{limit: 1, window: 1s}]\n", `set defaults.plan`},
		{"bad cidr", "identity:\n  trusted_proxies: [10.0.0.0/33]\nrules:\n  - {name: a, paths: [/], skip: true}\n", `p.yaml:2: identity.trusted_proxies[0]: "10.0.0.0/33" is not an address or CIDR`},
		{"syntax", "rules: [\n", `p.yaml:`},
		{"empty", "", `no rules`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := policy.Parse("dir/p.yaml", []byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

func TestClientAddr_ForwardedFor(t *testing.T) {
	cfg := policy.IdentityConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32")}, IPv6Prefix: 64}
	cases := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"untrusted peer: XFF spoof ignored", "203.0.113.9", []string{"1.1.1.1"}, "203.0.113.9"},
		{"trusted peer: rightmost untrusted hop", "10.0.0.1", []string{"6.6.6.6, 198.51.100.7"}, "198.51.100.7"},
		{"trusted chain skipped from the right", "10.0.0.1", []string{"6.6.6.6, 198.51.100.7, 192.0.2.1", "10.9.9.9"}, "198.51.100.7"},
		{"all hops trusted: leftmost", "10.0.0.1", []string{"10.0.0.5, 10.0.0.6"}, "10.0.0.5"},
		{"no XFF from trusted peer", "10.0.0.1", nil, "10.0.0.1"},
		{"garbage hop stops the walk", "10.0.0.1", []string{"6.6.6.6, not-an-ip, 10.0.0.7"}, "10.0.0.7"},
		{"IPv4-mapped peer", "::ffff:10.0.0.1", []string{"198.51.100.7"}, "198.51.100.7"},
	}
	for _, c := range cases {
		got := cfg.ClientAddr(netip.MustParseAddr(c.peer).Unmap(), c.xff)
		if got.String() != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestIdentify_IPv6GroupedAndHeadersFromTrustedOnly(t *testing.T) {
	cfg := policy.IdentityConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, IPv6Prefix: 64,
		PlanHeader: "X-Plan"}
	id := func(peer, xff, plan string) policy.Identity {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = peer
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		r.Header.Set("X-Plan", plan)
		return cfg.Identify(r)
	}
	a, b := id("[2001:db8:1:2::1]:5000", "", "x"), id("[2001:db8:1:2:ffff::9]:5000", "", "x")
	if a.IP != "2001:db8:1:2::/64" || a.IP != b.IP {
		t.Errorf("one /64 gives %q and %q", a.IP, b.IP)
	}
	if c := id("[2001:db8:1:3::1]:5000", "", ""); c.IP == a.IP {
		t.Errorf("another /64 shares the group %q", c.IP)
	}
	if got := id("10.0.0.1:1", "2001:db8:aa:bb:1::1", "pro"); got.IP != "2001:db8:aa:bb::/64" || got.Plan != "pro" {
		t.Errorf("via trusted proxy: %+v", got)
	}
	if got := id("203.0.113.5:1", "", "enterprise"); got.Plan != "" {
		t.Errorf("untrusted client chose its plan: %+v", got)
	}
}

func TestMatch_PathPrefixOnSegments(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`
rules:
  - {name: login, paths: [/auth/login], methods: [post], limits: [{limit: 1, window: 1s}]}
  - {name: api, paths: [/api/], limits: [{limit: 1, window: 1s}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, want string }{
		{"POST", "/auth/login", "login"}, {"POST", "/auth/login/sso", "login"}, {"POST", "/auth/loginx", ""},
		{"GET", "/auth/login", ""}, {"GET", "/api/x", "api"}, {"GET", "/apix", ""},
	} {
		r := p.Match(httptest.NewRequest(c.method, c.path, nil))
		got := ""
		if r != nil {
			got = r.Name
		}
		if got != c.want {
			t.Errorf("%s %s matched %q, want %q", c.method, c.path, got, c.want)
		}
	}
}

// Forwarded (RFC 7239) for= values, quoted, with ports and IPv6 brackets,
// read from the right like X-Forwarded-For; an obfuscated or unknown hop
// stops the walk.
func TestClientAddr_ForwardedHeader(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`
identity: {trusted_proxies: [10.0.0.0/8], client_header: Forwarded, ipv6_prefix: 128}
rules:
  - {name: r, paths: [/], key: [ip], limits: [{limit: 1, window: 1s}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ peer, fwd, want string }{
		{"10.0.0.1:1", `for=198.51.100.7;proto=https`, "198.51.100.7"},
		{"10.0.0.1:1", `for=6.6.6.6, for="[2001:db8::17]:4711", for=10.0.0.9:8080`, "2001:db8::17"},
		{"10.0.0.1:1", `for=6.6.6.6, for=unknown, for=10.0.0.9`, "10.0.0.9"},
		{"10.0.0.1:1", `For="_hidden"`, "10.0.0.1"},
		{"203.0.113.5:1", `for=1.1.1.1`, "203.0.113.5"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.peer
		r.Header.Set("Forwarded", c.fwd)
		r.Header.Set("X-Forwarded-For", "9.9.9.9") // not the configured header: ignored
		if got := p.Identity.Identify(r).IP; got != c.want {
			t.Errorf("peer %s Forwarded %q: client %s, want %s", c.peer, c.fwd, got, c.want)
		}
	}
}

// TestIdentify_PeerAddressSpellings: the client address an untrusted peer
// is keyed by is its address's canonical form, however RemoteAddr spells
// it, and for IPv4 peers written canonically it is taken from RemoteAddr
// without building a string (the denial path allocates nothing for it).
func TestIdentify_PeerAddressSpellings(t *testing.T) {
	cfg := policy.IdentityConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, IPv6Prefix: 64}
	for remote, want := range map[string]string{
		"203.0.113.9:4000":     "203.0.113.9",
		"1.2.3.4:1":            "1.2.3.4",
		"255.255.255.255:9":    "255.255.255.255",
		"1.02.3.4:5":           "", // not an address ParseAddr accepts
		"1.2.3:5":              "",
		"1.2.3.4.5:6":          "",
		"[::ffff:1.2.3.4]:80":  "1.2.3.4",
		"[2001:db8::1]:443":    "2001:db8::/64",
		"[::1]:1":              "::/64",
		"203.0.113.9":          "203.0.113.9", // no port
		"999.1.1.1:80":         "",
		"10.1.2.3:80":          "10.1.2.3", // trusted, no forwarded chain
		"garbage":              "",
		"12345678.1.2.3:80000": "",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		if got := cfg.Identify(r).IP; got != want {
			t.Errorf("RemoteAddr %q: IP %q, want %q", remote, got, want)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "203.0.113.9:4000"
	if n := testing.AllocsPerRun(100, func() { cfg.Identify(r) }); n != 0 {
		t.Errorf("Identify of an IPv4 peer: %v allocations, want 0", n)
	}
}
