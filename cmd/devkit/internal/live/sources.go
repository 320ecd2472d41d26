package live

import (
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/devkit-go/devkit/supervisor"
)

// Endpoints are the addresses a stack's YAML gives for its KV server and
// gateway admin API.
type Endpoints struct {
	KVURL      string
	GatewayURL string
}

// EndpointsOf finds the KV server and the gateway in cfg: a process whose
// arguments run `kv serve` gives its --http address, one that runs
// `ratelimit proxy` its --admin address; failing that, the host of an
// HTTP ready probe. A config without them gives empty URLs, and flags fill
// them in.
func EndpointsOf(cfg *supervisor.Config) Endpoints {
	var e Endpoints
	if cfg == nil {
		return e
	}
	names := make([]string, 0, len(cfg.Processes))
	for name := range cfg.Processes {
		names = append(names, name)
	}
	slices.Sort(names) // the same answer every time when two processes qualify
	for _, name := range names {
		p := cfg.Processes[name]
		switch {
		case e.KVURL == "" && runs(p.Args, "kv", "serve"):
			e.KVURL = baseURL(flagValue(p.Args, "--http"), p.Ready)
		case e.GatewayURL == "" && runs(p.Args, "ratelimit", "proxy"):
			e.GatewayURL = baseURL(flagValue(p.Args, "--admin"), p.Ready)
		}
	}
	return e
}

// runs reports whether args hold the verb path noun verb (after any
// leading flags).
func runs(args []string, noun, verb string) bool {
	i := slices.Index(args, noun)
	return i >= 0 && i+1 < len(args) && args[i+1] == verb
}

// flagValue returns the value of --name in args (--name V or --name=V).
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// baseURL turns a listen address into the URL a client on this machine
// uses: an unspecified host (":4000", "0.0.0.0:4000") is reached on
// loopback. Without an address, the ready probe's URL gives the host.
func baseURL(addr string, ready *supervisor.ReadyProbe) string {
	if addr == "" && ready != nil && ready.HTTP != "" {
		if u, err := url.Parse(ready.HTTP); err == nil && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	if addr == "" {
		return ""
	}
	if strings.Contains(addr, "://") {
		return strings.TrimRight(addr, "/")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}
