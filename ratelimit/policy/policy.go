// Package policy turns a YAML policy file into rate-limit decisions for HTTP
// requests: which rule a request falls under (normalized path prefix or
// route template, and method), who is limited (client IP, user, tenant,
// route), and which limits apply (per plan and per method, or the same for
// every plan on global routes). Every method is limited: HEAD is charged as
// GET, a method a plan does not list falls back to "*", else to the plan's
// strictest limits; only skip_methods leaves a method unlimited.
//
// A policy is immutable once loaded; reloading builds a new one.
package policy

import (
	"crypto/sha256"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/devkit-go/devkit/internal/yamlerr"
	"github.com/devkit-go/devkit/ratelimit"
)

// Scope says whether a rule's limits depend on the tenant.
type Scope string

const (
	// Global rules (auth routes) key on no tenant and ignore plans: security
	// is not a premium feature.
	Global Scope = "global"
	// Tenant rules key on the tenant, so tenants never share a budget.
	Tenant Scope = "tenant"
)

// KeyPart is one piece of identity a rule keys on.
type KeyPart string

// The key parts a rule may name.
const (
	KeyIP     KeyPart = "ip"     // the client address (IPv6 grouped by prefix)
	KeyUser   KeyPart = "user"   // the user header or callback
	KeyTenant KeyPart = "tenant" // the tenant header or callback
	KeyRoute  KeyPart = "route"  // the route template that matched, "/api/items/{id}"
	KeyPath   KeyPart = "path"   // the normalized request path (unbounded: lint warns)
	KeyMethod KeyPart = "method" // the request method as charged (HEAD as GET)
)

var knownKeyParts = []KeyPart{KeyIP, KeyUser, KeyTenant, KeyRoute, KeyPath, KeyMethod}

// AnyMethod is the method key of a plan's fallback limits.
const AnyMethod = "*"

// DefaultMaxCost caps a cost read from a header when the policy sets none.
const DefaultMaxCost = 1000

// Policy is a loaded policy file.
type Policy struct {
	// Source is the file the policy came from.
	Source string
	// Digest is the SHA-256 of the file's content.
	Digest [sha256.Size]byte
	// Identity says how clients are identified.
	Identity IdentityConfig
	// DefaultPlan applies when a request names no known plan.
	DefaultPlan string
	// Fail is the failure policy of rules that set none (FailDefault: the
	// limiter's). A program may override it after loading.
	Fail ratelimit.FailurePolicy
	// Budget is the decision latency budget; zero means the limiter's default.
	Budget time.Duration
	// CaseSensitive matches paths case-sensitively (defaults.case_sensitive).
	CaseSensitive bool
	// EscapedSlashes is what a proxy does with a path holding an encoded
	// slash or backslash (defaults.escaped_slashes; never empty after
	// Parse).
	EscapedSlashes EscapedSlashes
	Rules          []*Rule
	// Warnings are what lint reports about a valid policy (file:line: ...):
	// raw path keys, methods a plan does not cover, identity headers that
	// are never believed or believed from anyone.
	Warnings []string
}

// Rule is one rule of a policy.
type Rule struct {
	Name    string
	Paths   []string // path prefixes or route templates, matched on segment boundaries
	Methods []string // empty means every method
	// SkipMethods are methods this rule never limits (OPTIONS, by explicit choice).
	SkipMethods []string
	Scope       Scope
	Key         []KeyPart
	Skip        bool // requests under this rule are never limited
	Shadow      bool // decide and count, but let requests through
	// Fail is the rule's own failure policy; FailDefault means the policy's.
	Fail ratelimit.FailurePolicy
	// CostHeader names a request header holding the request's cost.
	CostHeader string
	MaxCost    int64
	// Limits apply to every request of the rule.
	Limits []ratelimit.Limit
	// Plans maps a plan to its limits per method (AnyMethod as fallback).
	Plans map[string]map[string][]ratelimit.Limit
	// Line is where the rule starts in its file.
	Line int

	patterns []pattern
	// strictest is, per plan, the limits of methods the plan does not list
	// when it has no "*": the plan's lowest rate per time.
	strictest map[string][]ratelimit.Limit
}

// Load reads and validates a policy file.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return Parse(path, data)
}

// Error is a mistake in a policy file, located by file, line and field:
//
//	p.yaml:5: rules[0].limits[0].window: "ten" is not a duration
//
// YAML syntax and type errors carry the line of the mistake and its field
// too. It is the supervisor's ConfigError too: one type, from the shared
// internal module's yamlerr, with File, Line (1-based, 0 when unknown), Field
// and Msg.
type Error = yamlerr.Error

// Errors is every error found in one file, one per line; errors.As finds
// the first *Error in it.
type Errors = yamlerr.Errors

// Parse validates a policy read from name. The file is parsed once: the
// node tree gives both the values and the line of every field.
func Parse(name string, data []byte) (*Policy, error) {
	name = filepath.Base(name)
	root, err := yamlerr.Parse(name, data)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, Errors{{File: name, Msg: "empty policy: no rules"}}
	}
	var doc fileDoc
	decodeErrs := yamlerr.Decode(name, root, &doc)
	// The rules are checked even when some values did not decode (those are
	// left zero), so that one run names every mistake in the file.
	c := &compiler{file: name, root: root}
	p := c.compile(&doc)
	if errs := mergeErrors(decodeErrs, c.errs); len(errs) > 0 {
		return nil, errs
	}
	p.Digest = sha256.Sum256(data)
	return p, nil
}

// mergeErrors is every decoding mistake and every rule mistake in file
// order, less the rule mistakes inside the object that holds a value that
// did not decode (the limit, the rule, the defaults): there they follow
// from that mistake (a value that did not decode is zero, a misspelt key
// leaves the right one unset) and add nothing.
func mergeErrors(decodeErrs, compileErrs Errors) Errors {
	if len(decodeErrs) == 0 {
		return compileErrs
	}
	errs := slices.Clone(decodeErrs)
	for _, ce := range compileErrs {
		if !slices.ContainsFunc(decodeErrs, func(de *Error) bool { return within(ce.Field, holder(de.Field)) }) {
			errs = append(errs, ce)
		}
	}
	slices.SortStableFunc(errs, func(a, b *Error) int { return a.Line - b.Line })
	return errs
}

// holder is the object that holds a field: rules[1].limits[0] for
// rules[1].limits[0].window, rules[1] for rules[1].skip. A top-level field
// is its own holder; the whole document ("") holds nothing.
func holder(field string) string {
	if i := strings.LastIndexAny(field, ".["); i > 0 {
		return field[:i]
	}
	return field
}

// within reports whether field is path or inside it.
func within(field, path string) bool {
	rest, ok := strings.CutPrefix(field, path)
	return path != "" && ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

type compiler struct {
	file          string
	root          *yaml.Node
	errs          Errors
	warns         []string
	caseSensitive bool
}

func (c *compiler) at(path []any, format string, a ...any) *Error {
	return &Error{File: c.file, Line: lineOf(c.root, path...), Field: pathString(path...), Msg: fmt.Sprintf(format, a...)}
}

func (c *compiler) warnf(path []any, format string, a ...any) {
	c.warns = append(c.warns, c.at(path, format, a...).Error())
}

func (c *compiler) errorf(path []any, format string, a ...any) {
	c.errs = append(c.errs, c.at(path, format, a...))
}

func (c *compiler) compile(doc *fileDoc) *Policy {
	p := &Policy{Source: c.file, DefaultPlan: doc.Defaults.Plan, Budget: time.Duration(doc.Defaults.Budget), CaseSensitive: doc.Defaults.CaseSensitive}
	c.caseSensitive = p.CaseSensitive
	if doc.Version != 0 && doc.Version != 1 {
		c.errorf([]any{"version"}, "unsupported version %d (want 1)", doc.Version)
	}
	p.Identity = c.identity(&doc.Identity)
	p.Fail = c.fail([]any{"defaults", "fail"}, doc.Defaults.Fail)
	p.EscapedSlashes = c.escapedSlashes(doc.Defaults.EscapedSlashes)
	if len(doc.Rules) == 0 {
		c.errorf([]any{"rules"}, "no rules")
	}
	seen := map[string]bool{}
	for i := range doc.Rules {
		r := c.rule(doc, i)
		if r.Name != "" && seen[r.Name] {
			c.errorf([]any{"rules", i, "name"}, "duplicate rule name %q", r.Name)
		}
		seen[r.Name] = true
		p.Rules = append(p.Rules, r)
	}
	c.identityWarnings(&doc.Identity, &p.Identity)
	p.Warnings = c.warns
	return p
}

func (c *compiler) identity(fi *fileIdentity) IdentityConfig {
	id := IdentityConfig{
		IPv6Prefix: 64, UserHeader: fi.UserHeader, TenantHeader: fi.TenantHeader,
		PlanHeader: fi.PlanHeader, TrustHeadersFromAnyPeer: fi.HeadersFromTrustedOnly != nil && !*fi.HeadersFromTrustedOnly,
	}
	switch strings.ToLower(fi.ClientHeader) {
	case "", "x-forwarded-for":
	case "forwarded":
		id.ReadForwarded = true
	default:
		c.errorf([]any{"identity", "client_header"}, "want X-Forwarded-For or Forwarded, got %q", fi.ClientHeader)
	}
	if fi.IPv6Prefix != nil {
		id.IPv6Prefix = *fi.IPv6Prefix
		if id.IPv6Prefix < 1 || id.IPv6Prefix > 128 {
			c.errorf([]any{"identity", "ipv6_prefix"}, "must be between 1 and 128, got %d", id.IPv6Prefix)
		}
	}
	for i, s := range fi.TrustedProxies {
		pfx, err := parsePrefix(s)
		if err != nil {
			c.errorf([]any{"identity", "trusted_proxies", i}, "%q is not an address or CIDR", s)
			continue
		}
		id.TrustedProxies = append(id.TrustedProxies, pfx)
	}
	return id
}

func (c *compiler) identityWarnings(fi *fileIdentity, id *IdentityConfig) {
	var named []string
	for _, h := range [][2]string{{"user_header", id.UserHeader}, {"tenant_header", id.TenantHeader}, {"plan_header", id.PlanHeader}} {
		if h[1] != "" {
			named = append(named, "identity."+h[0]+" "+h[1])
		}
	}
	if len(named) == 0 {
		return
	}
	switch {
	case len(id.TrustedProxies) == 0:
		c.warnf([]any{"identity"}, "%s named but identity.trusted_proxies is empty: the headers are never believed "+
			"(every client gets the default plan and no tenant); list the gateway that sets them", strings.Join(named, ", "))
	case id.TrustHeadersFromAnyPeer:
		c.warnf([]any{"identity", "headers_from_trusted_only"}, "false: any client can choose its own %s by sending the header; "+
			"remove it (the default is true)", strings.Join(named, ", "))
	}
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (c *compiler) escapedSlashes(s string) EscapedSlashes {
	switch e := EscapedSlashes(s); e {
	case "":
		return EscapedSlashesReject
	case EscapedSlashesReject, EscapedSlashesUnescape, EscapedSlashesKeep:
		return e
	}
	c.errorf([]any{"defaults", "escaped_slashes"}, "%q is not reject, unescape or keep", s)
	return EscapedSlashesReject
}

func (c *compiler) fail(path []any, s string) ratelimit.FailurePolicy {
	if s == "" {
		return ratelimit.FailDefault
	}
	f, err := ratelimit.ParseFailurePolicy(s)
	if err != nil {
		c.errorf(path, "%v", err)
	}
	return f
}

var ruleNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (c *compiler) rule(doc *fileDoc, i int) *Rule {
	fr := &doc.Rules[i]
	at := func(p ...any) []any { return append([]any{"rules", i}, p...) }
	r := &Rule{
		Name: fr.Name, Paths: fr.Paths, Skip: fr.Skip, Shadow: fr.Shadow,
		Scope: Scope(fr.Scope), Line: lineOf(c.root, "rules", i),
		CostHeader: fr.CostHeader, MaxCost: fr.MaxCost,
	}
	if !ruleNameRE.MatchString(r.Name) {
		c.errorf(at("name"), "rule needs a name of letters, digits, '.', '_' or '-', got %q", r.Name)
	}
	if len(r.Paths) == 0 {
		c.errorf(at("paths"), "rule needs at least one path prefix")
	}
	for j, p := range r.Paths {
		if !strings.HasPrefix(p, "/") {
			c.errorf(at("paths", j), "path %q must start with /", p)
			continue
		}
		pat, ok := compilePattern(p, c.caseSensitive)
		if !ok {
			c.errorf(at("paths", j), "path %q: a parameter is a whole segment such as {id}", p)
			continue
		}
		r.patterns = append(r.patterns, pat)
	}
	for j, m := range fr.Methods {
		up := strings.ToUpper(m)
		if !validMethod(up) {
			c.errorf(at("methods", j), "%q is not an HTTP method", m)
		}
		r.Methods = append(r.Methods, up)
	}
	for j, m := range fr.SkipMethods {
		up := strings.ToUpper(m)
		if !validMethod(up) {
			c.errorf(at("skip_methods", j), "%q is not an HTTP method", m)
		}
		r.SkipMethods = append(r.SkipMethods, up)
	}
	r.Fail = c.fail(at("fail"), fr.Fail)
	if r.CostHeader == "" {
		r.CostHeader = doc.Defaults.CostHeader
	}
	if r.MaxCost == 0 {
		r.MaxCost = doc.Defaults.MaxCost
	}
	if r.MaxCost == 0 {
		r.MaxCost = DefaultMaxCost
	}
	if r.MaxCost < 0 {
		c.errorf(at("max_cost"), "must be positive")
	}
	if r.Skip {
		if len(fr.Limits) > 0 || len(fr.Plans) > 0 {
			c.errorf(at("skip"), "a skip rule has no limits")
		}
		return r
	}
	switch r.Scope {
	case "":
		r.Scope = Tenant
		if len(fr.Plans) == 0 {
			r.Scope = Global
		}
	case Global, Tenant:
	default:
		c.errorf(at("scope"), "scope must be global or tenant, got %q", fr.Scope)
	}
	r.Key = c.keyParts(at("key"), fr.Key, r.Scope)
	for j := range fr.Limits {
		name := r.Name
		if len(fr.Limits) > 1 {
			name = fmt.Sprintf("%s-%d", r.Name, j)
		}
		r.Limits = append(r.Limits, c.limit(at("limits", j), &fr.Limits[j], name))
	}
	if len(fr.Plans) > 0 {
		if r.Scope == Global {
			c.errorf(at("plans"), "a global rule has the same limits for every plan; use limits, or scope: tenant")
		}
		r.Plans = map[string]map[string][]ratelimit.Limit{}
		for _, plan := range sortedKeys(fr.Plans) {
			methods := fr.Plans[plan]
			r.Plans[plan] = map[string][]ratelimit.Limit{}
			for _, m := range sortedKeys(methods) {
				method := strings.ToUpper(m)
				if method != AnyMethod && !validMethod(method) {
					c.errorf(at("plans", plan, m), "%q is not an HTTP method or %q", m, AnyMethod)
				}
				for j := range methods[m] {
					name := fmt.Sprintf("%s-%s-%s", r.Name, plan, strings.ToLower(strings.ReplaceAll(method, "*", "any")))
					if len(methods[m]) > 1 {
						name = fmt.Sprintf("%s-%d", name, j)
					}
					r.Plans[plan][method] = append(r.Plans[plan][method], c.limit(at("plans", plan, m, j), &methods[m][j], name))
				}
			}
		}
		c.methodCoverage(r, at)
		if doc.Defaults.Plan == "" {
			c.errorf([]any{"defaults"}, "rule %q has plans: set defaults.plan for requests that name none", r.Name)
		} else if _, ok := r.Plans[doc.Defaults.Plan]; !ok {
			c.errorf(at("plans"), "default plan %q has no limits in rule %q", doc.Defaults.Plan, r.Name)
		}
	}
	if len(r.Limits) == 0 && len(r.Plans) == 0 {
		c.errorf(at("limits"), "rule %q has no limits (give limits or plans, or skip: true)", r.Name)
	}
	if slices.Contains(r.Key, KeyPath) {
		c.warnf(at("key"), "rule %q keys on the raw path: one key per distinct path, so a client can mint keys "+
			"(and Redis memory) at will and spread its requests over them; key on route and list route templates "+
			"such as /api/items/{id} in paths", r.Name)
	}
	return r
}

// coveredMethods are the methods a plan is expected to name (HEAD is GET's).
var coveredMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// methodCoverage picks, per plan without "*", the limits charged to methods
// it does not list (its strictest), and warns about those methods.
func (c *compiler) methodCoverage(r *Rule, at func(...any) []any) {
	r.strictest = map[string][]ratelimit.Limit{}
	for _, plan := range sortedKeys(r.Plans) {
		methods := r.Plans[plan]
		if _, ok := methods[AnyMethod]; ok {
			continue
		}
		var strict string
		for _, m := range sortedKeys(methods) {
			if strict == "" || perSecond(methods[m]) < perSecond(methods[strict]) {
				strict = m
			}
		}
		r.strictest[plan] = methods[strict]
		var missing []string
		for _, m := range coveredMethods {
			if _, ok := methods[m]; ok || slices.Contains(r.SkipMethods, m) {
				continue
			}
			if len(r.Methods) > 0 && !slices.Contains(r.Methods, m) {
				continue
			}
			missing = append(missing, m)
		}
		if len(missing) > 0 {
			c.warnf(at("plans", plan), "plan %q has no limits for %s and no \"*\": those requests are charged under its strictest (%s); "+
				"add them, a \"*\" entry, or skip_methods", plan, strings.Join(missing, ", "), strict)
		}
	}
}

// perSecond is the lowest sustained rate of a list of limits.
func perSecond(limits []ratelimit.Limit) float64 {
	low := math.Inf(1)
	for _, l := range limits {
		low = math.Min(low, float64(l.Rate)/l.Period.Seconds())
	}
	return low
}

func (c *compiler) keyParts(path []any, parts []string, scope Scope) []KeyPart {
	var out []KeyPart
	for j, s := range parts {
		k := KeyPart(strings.ToLower(s))
		if !slices.Contains(knownKeyParts, k) {
			c.errorf(append(path, j), "unknown key part %q (want ip, user, tenant, route, path or method)", s)
			continue
		}
		if k == KeyTenant && scope == Global {
			c.errorf(append(path, j), "a global rule does not key on the tenant")
			continue
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	if scope == Tenant && !slices.Contains(out, KeyTenant) {
		out = append([]KeyPart{KeyTenant}, out...)
	}
	if len(out) == 0 {
		out = []KeyPart{KeyIP}
	}
	return out
}

func (c *compiler) limit(path []any, fl *fileLimit, defaultName string) ratelimit.Limit {
	l := ratelimit.Limit{Name: fl.Name, Rate: fl.Limit, Period: time.Duration(fl.Window), Burst: fl.Burst, Block: time.Duration(fl.Block)}
	if l.Name == "" {
		l.Name = defaultName
	}
	if fl.Algorithm != "" {
		a, err := ratelimit.ParseAlgorithm(fl.Algorithm)
		if err != nil {
			c.errorf(append(path, "algorithm"), "%v", err)
		}
		l.Algorithm = a
	}
	switch {
	case fl.Limit <= 0:
		c.errorf(append(path, "limit"), "limit must be a positive number of requests, got %d", fl.Limit)
	case l.Period <= 0:
		c.errorf(append(path, "window"), "window must be a positive duration such as 1m")
	case fl.Burst != 0 && l.Algorithm != ratelimit.TokenBucket && l.Algorithm != ratelimit.GCRA:
		c.errorf(append(path, "burst"), "burst applies to token-bucket and gcra, not %s", l.Algorithm)
	default:
		if err := l.Validate(); err != nil {
			c.errorf(path, "%v", strings.TrimPrefix(err.Error(), "ratelimit: "))
		}
	}
	return l
}

func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return true
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Limits returns every limit the policy's rules may check, each once (a
// store warms them: Limiter.Warm).
func (p *Policy) Limits() []ratelimit.Limit {
	var out []ratelimit.Limit
	add := func(ls []ratelimit.Limit) {
		for _, l := range ls {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	for _, r := range p.Rules {
		add(r.Limits)
		for _, plan := range sortedKeys(r.Plans) {
			for _, m := range sortedKeys(r.Plans[plan]) {
				add(r.Plans[plan][m])
			}
		}
	}
	return out
}

// Match returns the first rule whose path and method match r, or nil.
func (p *Policy) Match(r *http.Request) *Rule {
	rule, _ := p.match(r.Method, NormalizePath(r.URL.EscapedPath(), p.CaseSensitive))
	return rule
}

// match finds the rule for a method and normalized path, and the most
// specific of its patterns that matched.
func (p *Policy) match(method, path string) (*Rule, *pattern) {
	for _, rule := range p.Rules {
		if len(rule.Methods) > 0 && !slices.Contains(rule.Methods, method) &&
			!(method == http.MethodHead && slices.Contains(rule.Methods, http.MethodGet)) {
			continue
		}
		var best *pattern
		for i := range rule.patterns {
			pat := &rule.patterns[i]
			if pat.match(path) && (best == nil || pat.better(best)) {
				best = pat
			}
		}
		if best != nil {
			return rule, best
		}
	}
	return nil, nil
}

// chargedMethod is the method whose limits a request spends: HEAD is GET's
// unless the plan lists HEAD.
func chargedMethod(method string, methods map[string][]ratelimit.Limit) string {
	if method == http.MethodHead {
		if _, ok := methods[http.MethodHead]; !ok {
			return http.MethodGet
		}
	}
	return method
}

// LimitsFor returns the limits of the rule for a plan and method: the
// rule's own limits, then the plan's limits for the method (or its "*"
// fallback). An unknown plan uses defaultPlan.
func (r *Rule) LimitsFor(plan, method, defaultPlan string) []ratelimit.Limit {
	if len(r.Plans) == 0 {
		return r.Limits
	}
	methods, ok := r.Plans[plan]
	if !ok {
		plan, methods = defaultPlan, r.Plans[defaultPlan]
	}
	perMethod, ok := methods[chargedMethod(method, methods)]
	if !ok {
		perMethod, ok = methods[AnyMethod]
	}
	if !ok {
		perMethod = r.strictest[plan]
	}
	if len(r.Limits) == 0 {
		return perMethod
	}
	return append(slices.Clip(r.Limits), perMethod...)
}

// Decision is what a policy makes of one request.
type Decision struct {
	Rule    *Rule
	Request ratelimit.Request
	// Plan is the plan whose limits apply (empty for global rules).
	Plan string
}

// Decide maps an HTTP request and its identity to a limiter request. It
// returns false when no rule matches or the rule skips.
func (p *Policy) Decide(r *http.Request, id Identity) (Decision, bool) {
	path := NormalizePath(r.URL.EscapedPath(), p.CaseSensitive)
	rule, pat := p.match(r.Method, path)
	if rule == nil || rule.Skip || slices.Contains(rule.SkipMethods, r.Method) {
		return Decision{Rule: rule}, false
	}
	d := Decision{Rule: rule}
	if rule.Scope == Tenant {
		d.Plan = id.Plan
		if _, ok := rule.Plans[d.Plan]; !ok {
			d.Plan = p.DefaultPlan
		}
	}
	d.Request = ratelimit.Request{
		Key:    rule.key(r.Method, path, pat.template, d.Plan, id),
		Limits: rule.LimitsFor(d.Plan, r.Method, p.DefaultPlan),
		Cost:   rule.cost(r),
		Rule:   rule.Name,
		Shadow: rule.Shadow,
		Fail:   rule.Fail,
		// The budget travels with each request, so a reload applies it.
		Budget: p.Budget,
	}
	if d.Request.Fail == ratelimit.FailDefault {
		d.Request.Fail = p.Fail
	}
	return d, len(d.Request.Limits) > 0
}

// key builds the identity key: the rule name then each key part, values
// escaped so that no header value can forge another identity or a hash tag.
func (r *Rule) key(method, path, route, plan string, id Identity) string {
	// The escaped values first, so that the key is built in one allocation.
	var small [8]string
	vals := small[:0]
	size := len(r.Name)
	for _, part := range r.Key {
		var v string
		switch part {
		case KeyIP:
			v = id.IP
		case KeyUser:
			v = id.User
		case KeyTenant:
			v = id.Tenant
		case KeyRoute:
			v = route
		case KeyPath:
			v = path
		case KeyMethod:
			v = method
			if len(r.Plans) > 0 {
				v = chargedMethod(method, r.Plans[plan])
			} else if method == http.MethodHead {
				v = http.MethodGet
			}
		}
		if v == "" {
			v = "-"
		}
		v = url.PathEscape(v)
		vals = append(vals, v)
		size += 2 + len(part) + len(v)
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(r.Name)
	for i, part := range r.Key {
		b.WriteByte('|')
		b.WriteString(string(part))
		b.WriteByte('=')
		b.WriteString(vals[i])
	}
	return b.String()
}

func (r *Rule) cost(req *http.Request) int64 {
	if r.CostHeader == "" {
		return 1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(req.Header.Get(r.CostHeader)), 10, 64)
	if err != nil || n < 1 {
		return 1
	}
	return min(n, r.MaxCost)
}

// Describe writes the effective rules for humans (devkit ratelimit lint).
func (p *Policy) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "policy %s: %d rules", p.Source, len(p.Rules))
	if p.DefaultPlan != "" {
		fmt.Fprintf(&b, ", default plan %s", p.DefaultPlan)
	}
	fail := p.Fail
	if fail == ratelimit.FailDefault {
		fail = ratelimit.FailOpen
	}
	budget := p.Budget
	if budget == 0 {
		budget = ratelimit.DefaultBudget
	}
	fmt.Fprintf(&b, ", fail %s, budget %v\n", fail, budget)
	if len(p.Identity.TrustedProxies) > 0 {
		fmt.Fprintf(&b, "trusted proxies: %v (X-Forwarded-For read from the right)\n", p.Identity.TrustedProxies)
	} else {
		b.WriteString("trusted proxies: none (X-Forwarded-For ignored; the peer address is the client)\n")
	}
	if p.CaseSensitive {
		b.WriteString("paths: normalized (%-escapes, //, dot segments, ;params, trailing /), case-sensitive\n")
	} else {
		b.WriteString("paths: normalized (%-escapes, //, dot segments, ;params, trailing /), case-insensitive\n")
	}
	b.WriteString("methods: HEAD is charged as GET; a method a plan does not list falls back to \"*\", else to the plan's strictest\n")
	for _, r := range p.Rules {
		methods := "any method"
		if len(r.Methods) > 0 {
			methods = strings.Join(r.Methods, ",")
		}
		fmt.Fprintf(&b, "\n%s (line %d): %s %s\n", r.Name, r.Line, strings.Join(r.Paths, " "), methods)
		if r.Skip {
			b.WriteString("  skip: not limited\n")
			continue
		}
		keys := make([]string, len(r.Key))
		for i, k := range r.Key {
			keys[i] = string(k)
		}
		fmt.Fprintf(&b, "  scope %s, key %s", r.Scope, strings.Join(keys, "+"))
		if r.Shadow {
			b.WriteString(", shadow (never denies)")
		}
		if len(r.SkipMethods) > 0 {
			fmt.Fprintf(&b, ", not limited: %s", strings.Join(r.SkipMethods, ","))
		}
		if r.Fail != ratelimit.FailDefault {
			fmt.Fprintf(&b, ", fail %s", r.Fail)
		}
		if r.CostHeader != "" {
			fmt.Fprintf(&b, ", cost from %s (max %d)", r.CostHeader, r.MaxCost)
		}
		b.WriteString("\n")
		for _, l := range r.Limits {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		for _, plan := range sortedKeys(r.Plans) {
			for _, m := range sortedKeys(r.Plans[plan]) {
				for _, l := range r.Plans[plan][m] {
					fmt.Fprintf(&b, "  [%s %s] %s\n", plan, m, l)
				}
			}
		}
	}
	return b.String()
}
