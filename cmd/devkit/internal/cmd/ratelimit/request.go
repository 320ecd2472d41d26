package ratelimit

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// RequestOptions describe an HTTP request for check and info: with a
// policy, they answer for the rule, key and limits that request would get.
type RequestOptions struct {
	Policy  string
	Method  string
	Path    string
	Headers []string
	// IP is the request's peer address (the client, unless it is a trusted proxy).
	IP string
}

func (o *RequestOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Policy, "policy", "", "policy file: answer for the rule a request described by --method, --path, --header, --ip would get")
	f.StringVar(&o.Method, "method", "GET", "the request's method (with --policy)")
	f.StringVar(&o.Path, "path", "/", "the request's path, as sent (with --policy)")
	f.StringArrayVar(&o.Headers, "header", nil, `a request header "Name: value", repeatable (with --policy)`)
	f.StringVar(&o.IP, "ip", "203.0.113.1", "the peer address the request comes from (with --policy)")
}

// decide loads the policy and maps the described request to its decision;
// limited is false when no rule limits it.
func (o *RequestOptions) decide() (d policy.Decision, limited bool, err error) {
	p, err := policy.Load(o.Policy)
	if err != nil {
		return d, false, err
	}
	if !strings.HasPrefix(o.Path, "/") {
		return d, false, cmdutil.UsageErrorf("--path %q must start with /", o.Path)
	}
	r, err := newRequest(strings.ToUpper(o.Method), o.Path)
	if err != nil {
		return d, false, err
	}
	for _, h := range o.Headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return d, false, cmdutil.UsageErrorf("--header %q: want \"Name: value\"", h)
		}
		r.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	if net.ParseIP(o.IP) == nil {
		return d, false, cmdutil.UsageErrorf("--ip %q is not an IP address", o.IP)
	}
	r.RemoteAddr = net.JoinHostPort(o.IP, "40000")
	d, limited = p.Decide(r, p.Identity.Identify(r))
	return d, limited, nil
}

// newRequest builds the request a server would have parsed from the request
// line "method path HTTP/1.1": a path that could not be sent as is (a space,
// a control byte, a bad escape) or a method that is not a token is a usage
// error naming its flag.
func newRequest(method, path string) (*http.Request, error) {
	if i := strings.IndexFunc(path, func(c rune) bool { return c <= ' ' || c == 0x7f }); i >= 0 {
		return nil, cmdutil.UsageErrorf("--path %q has byte %q at %d, which a request line cannot carry: percent-encode it (a space is %%20)", path, path[i], i)
	}
	if _, err := url.ParseRequestURI(path); err != nil {
		return nil, cmdutil.UsageErrorf("--path %q is not a request path: %v", path, errors.Unwrap(err))
	}
	r, err := http.NewRequest(method, "http://x"+path, http.NoBody)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--method %q is not an HTTP method (a token such as GET or POST)", method)
	}
	r.RequestURI = path
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	return r, nil
}

// describe says which rule a request got, for humans.
func describe(d policy.Decision, method, path string) string {
	switch {
	case d.Rule == nil:
		return fmt.Sprintf("%s %s: no rule matches; not limited", method, path)
	case d.Rule.Skip:
		return fmt.Sprintf("%s %s: rule %s skips; not limited", method, path, d.Rule.Name)
	case len(d.Request.Limits) == 0:
		return fmt.Sprintf("%s %s: rule %s does not limit %s", method, path, d.Rule.Name, method)
	}
	plan := ""
	if d.Plan != "" {
		plan = ", plan " + d.Plan
	}
	return fmt.Sprintf("%s %s: rule %s%s, key %s", method, path, d.Rule.Name, plan, d.Request.Key)
}

// requireFlags reports missing flags as a usage error (exit 2), as every
// devkit command does.
func requireFlags(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return cmdutil.UsageErrorf("required flag(s) %s not set\nRun '%s --help' for usage.", strings.Join(missing, ", "), cmd.CommandPath())
	}
	return nil
}
