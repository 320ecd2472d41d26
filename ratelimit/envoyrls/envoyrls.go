// Package envoyrls serves Envoy's rate limit service API
// (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, the gRPC
// API of envoyproxy/ratelimit) from a devkit policy, so that Envoy
// instances share the limits a gateway or an nginx in front would apply.
// It is a package of its own so that programs without gRPC never link it.
//
// Each descriptor describes one request in the policy's words, and is
// decided as the gateway decides that request: its rule by path and
// method, its key by the rule's key parts, its limits by plan and method.
// The entries a descriptor may hold:
//
//	path            the request path (":path", a query is ignored); default "/"
//	method          the request method (":method"); default GET
//	remote_address  the client address (Envoy's remote_address action)
//	user, tenant, plan   the identity, as the policy's identity headers give it
//
// Any other entry key is an error (INVALID_ARGUMENT), so that a mistyped
// Envoy configuration is seen, not silently unlimited. The domain is not
// part of the key: one server serves one policy. Only peers in the
// policy's identity.trusted_proxies are answered (PERMISSION_DENIED
// otherwise): the descriptors say who the client is.
package envoyrls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/middleware"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// Descriptor entry keys.
const (
	EntryPath          = "path"
	EntryMethod        = "method"
	EntryRemoteAddress = "remote_address"
	EntryUser          = "user"
	EntryTenant        = "tenant"
	EntryPlan          = "plan"
)

// Service implements RateLimitServiceServer over a limiter and the policy
// in force.
type Service struct {
	rlsv3.UnimplementedRateLimitServiceServer
	limiter *ratelimit.Limiter
	policy  func() *policy.Policy
}

// New returns the service; policy is called for every request, so a
// reloaded policy applies at once (gateway.Server.Policy).
func New(l *ratelimit.Limiter, policy func() *policy.Policy) *Service {
	return &Service{limiter: l, policy: policy}
}

// ShouldRateLimit decides every descriptor of req, each as one check
// costing req.HitsAddend (0 means the rule's cost, 1 unless its cost
// header says otherwise; a descriptor's own hits_addend wins): OK when
// every one is allowed, OVER_LIMIT when any is denied or refused by a
// fail-closed rule whose store is down. The rate-limit fields of the
// binding check (X-RateLimit-*, RateLimit-Policy, RateLimit, Retry-After
// on a denial) are returned as response_headers_to_add.
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	p := s.policy()
	if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil && !p.Identity.Trusts(pr.Addr.String()) {
		return nil, status.Error(codes.PermissionDenied, "the rate limit service answers trusted proxies only (identity.trusted_proxies)")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no descriptors")
	}
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK,
		Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(req.Descriptors))}
	var binding ratelimit.Result
	haveBinding := false
	for i, d := range req.Descriptors {
		hr, id, err := describe(p, d)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "descriptors[%d]: %v", i, err)
		}
		dec, limited := p.Decide(hr, id)
		st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		resp.Statuses[i] = st
		if !limited {
			continue
		}
		if hits := hitsOf(req, d); hits > 0 {
			dec.Request.Cost = hits
		}
		var res ratelimit.Result
		if err := s.limiter.CheckInto(ctx, &dec.Request, &res); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "descriptors[%d]: %v", i, err)
		}
		refused := res.Source == ratelimit.FromFailClosed || (!res.Allowed && !res.Shadowed)
		if refused {
			st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
			resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
		}
		if res.Source == ratelimit.FromFailOpen || res.Source == ratelimit.FromFailClosed || dec.Request.Shadow {
			continue // nothing the client should see
		}
		st.CurrentLimit = currentLimit(res.Limit)
		st.LimitRemaining = uint32(min(max(res.Remaining, 0), 1<<32-1))
		st.DurationUntilReset = durationpb.New(res.ResetAfter)
		// The binding answer is the first denial, else the one with least left.
		if !haveBinding || (refused && binding.Allowed) || (res.Allowed == binding.Allowed && res.Remaining < binding.Remaining) {
			binding, haveBinding = res, true
		}
	}
	if haveBinding {
		resp.ResponseHeadersToAdd = headersToAdd(&binding)
	}
	return resp, nil
}

// headersToAdd are the rate-limit fields of res, named in lower case as
// HTTP/2 wants them (the names lowered once: rateLimitFields).
func headersToAdd(res *ratelimit.Result) []*corev3.HeaderValue {
	h := make(http.Header, len(rateLimitFields))
	middleware.SetHeaders(h, res)
	values := make([]corev3.HeaderValue, 0, len(rateLimitFields)) // one allocation for every field
	out := make([]*corev3.HeaderValue, 0, len(rateLimitFields))
	for _, f := range rateLimitFields {
		if v := h[f.canonical]; len(v) > 0 && v[0] != "" {
			values = append(values, corev3.HeaderValue{Key: f.lower, Value: v[0]})
			out = append(out, &values[len(values)-1])
		}
	}
	return out
}

// rateLimitFields are the fields middleware.SetHeaders may set, as
// http.Header keys them and in lower case, in the order they are sent.
var rateLimitFields = func() (fields [6]struct{ canonical, lower string }) {
	for i, name := range [...]string{middleware.HeaderLimit, middleware.HeaderRemaining, middleware.HeaderReset,
		middleware.HeaderPolicy, middleware.HeaderRateLimit, middleware.HeaderRetryAfter} {
		fields[i].canonical, fields[i].lower = http.CanonicalHeaderKey(name), strings.ToLower(name)
	}
	return fields
}()

// hitsOf is the cost of a descriptor: its own hits_addend, else the
// request's; 0 leaves the rule's.
func hitsOf(req *rlsv3.RateLimitRequest, d *commonv3.RateLimitDescriptor) int64 {
	if h := d.GetHitsAddend(); h != nil {
		return int64(h.GetValue())
	}
	return int64(req.GetHitsAddend())
}

// describe turns a descriptor into the request and identity it stands for.
func describe(p *policy.Policy, d *commonv3.RateLimitDescriptor) (*http.Request, policy.Identity, error) {
	method, path := http.MethodGet, "/"
	var id policy.Identity
	for _, e := range d.GetEntries() {
		switch k, v := e.GetKey(), e.GetValue(); k {
		case EntryPath, ":path":
			path = v
		case EntryMethod, ":method":
			method = v
		case EntryRemoteAddress:
			a, err := netip.ParseAddr(v)
			if err != nil {
				return nil, id, fmt.Errorf("remote_address %q is not an IP address", v)
			}
			id.IP = p.Identity.Group(a)
		case EntryUser:
			id.User = v
		case EntryTenant:
			id.Tenant = v
		case EntryPlan:
			id.Plan = v
		default:
			return nil, id, fmt.Errorf("unknown descriptor key %q (want path, method, remote_address, user, tenant or plan)", k)
		}
	}
	u, err := url.ParseRequestURI(path)
	if err != nil || !strings.HasPrefix(u.Path, "/") {
		return nil, id, fmt.Errorf("path %q is not a request path", path)
	}
	if method == "" || strings.ContainsAny(method, " \t/") {
		return nil, id, fmt.Errorf("method %q is not an HTTP method", method)
	}
	return &http.Request{Method: method, URL: u, Header: http.Header{}}, id, nil
}

// currentLimit describes a limit as Envoy's API does: so many requests per
// unit, with a multiplier for periods that are a whole number of units.
func currentLimit(l ratelimit.Limit) *rlsv3.RateLimitResponse_RateLimit {
	cl := &rlsv3.RateLimitResponse_RateLimit{Name: l.DisplayName(), RequestsPerUnit: uint32(min(l.Capacity(), 1<<32-1))}
	for _, u := range []struct {
		d    time.Duration
		unit rlsv3.RateLimitResponse_RateLimit_Unit
	}{
		{24 * time.Hour, rlsv3.RateLimitResponse_RateLimit_DAY},
		{time.Hour, rlsv3.RateLimitResponse_RateLimit_HOUR},
		{time.Minute, rlsv3.RateLimitResponse_RateLimit_MINUTE},
		{time.Second, rlsv3.RateLimitResponse_RateLimit_SECOND},
	} {
		if l.Period >= u.d && l.Period%u.d == 0 {
			cl.Unit = u.unit
			if n := l.Period / u.d; n > 1 {
				cl.UnitMultiplier = wrapperspb.UInt32(uint32(min(n, 1<<32-1)))
			}
			return cl
		}
	}
	return cl // UNKNOWN: a period that is not a whole number of seconds
}

// streamWorkers is the number of goroutines the gRPC server keeps to run
// calls (grpc.NumStreamWorkers); a call that finds none idle gets a new
// goroutine, as without workers. A fresh goroutine per call grows its stack
// again on every call (runtime.newstack and copystack were 8 % of serve's
// CPU under 50 clients); a worker keeps its grown stack.
const streamWorkers = 256

// flowWindow is the HTTP/2 flow-control window of each stream and
// connection, fixed (grpc.StaticStreamWindowSize): a check is a few hundred
// bytes, so the window never needs to grow, and gRPC's dynamic window would
// probe for it with a window update and a PING after nearly every request
// of a connection that carries one call at a time, which the client must
// answer: two more frames, and often a write and a read more on each side.
const flowWindow = 1 << 20

// Serve serves the service on ln with a new gRPC server until ctx ends,
// then stops gracefully (within grace, then at once).
func Serve(ctx context.Context, ln net.Listener, svc *Service, grace time.Duration, log *slog.Logger) error {
	srv := grpc.NewServer(grpc.NumStreamWorkers(streamWorkers),
		grpc.StaticStreamWindowSize(flowWindow), grpc.StaticConnWindowSize(flowWindow))
	rlsv3.RegisterRateLimitServiceServer(srv, svc)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if log != nil {
		log.Info("rate limit service listening", "grpc", ln.Addr().String())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("envoyrls: %w", err)
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(grace):
		srv.Stop()
		<-stopped
	}
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("envoyrls: %w", err)
	}
	return nil
}
