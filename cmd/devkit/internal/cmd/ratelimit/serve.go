package ratelimit

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// DefaultAuthPath is the path serve answers auth checks on.
const DefaultAuthPath = "/ratelimit/auth"

// NewCmdServe builds `devkit ratelimit serve`: the policy engine for a data
// plane that already runs (nginx auth_request), with no upstream of its own.
// runF, when not nil, receives the options instead of the run.
func NewCmdServe(f *cmdutil.Factory, runF func(context.Context, *ProxyOptions) error) *cobra.Command {
	opts := &ProxyOptions{IO: f.IOStreams, WatchInterval: 2 * time.Second, GCPercent: gcPercent{v: DefaultGCPercent}}
	cmd := &cobra.Command{
		Use:   "serve --listen ADDR --policy FILE",
		Short: "Decide for nginx auth_request (and forward-auth proxies) from a policy, with no upstream",
		Long: `serve answers the rate-limit decisions of a proxy that forwards the traffic
itself: nginx's auth_request asks GET --auth-path with the original request's
method and URI in X-Original-Method and X-Original-URI (or X-Forwarded-Method
and X-Forwarded-Uri) and its client's headers; the answer is 204 when the
request may pass and 429 (or ?deny_status=403 for nginx) when it is denied,
with the X-RateLimit-*, RateLimit-Policy, RateLimit and Retry-After fields
nginx copies back with auth_request_set and add_header. Only peers listed in
the policy's identity.trusted_proxies are answered; others get 403.

Several nginx instances with one serve each share their limits through
--redis (or REDIS_URL). See docs/ratelimit.md for the nginx configuration.
--grpc-addr also serves Envoy's rate limit service API
(envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) over gRPC, with
descriptor entries path, method, remote_address, user, tenant and plan decided
by the same policy and store; see docs/ratelimit.md for the Envoy configuration.
Other paths answer 404; --admin serves the admin API as for proxy.`,
		Example: `  devkit ratelimit serve --listen 127.0.0.1:8089 --policy policy.yaml --redis redis://127.0.0.1:6379
  devkit ratelimit serve --listen 127.0.0.1:8089 --grpc-addr 127.0.0.1:8081 --policy policy.yaml --redis redis://127.0.0.1:6379`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Store = storeFrom(f, cmd)
			if opts.AdminToken == "" {
				opts.AdminToken = f.Getenv(AdminTokenEnv)
			}
			if err := requireFlags(cmd, "listen", "policy"); err != nil {
				return err
			}
			if opts.AuthPath == "" || opts.AuthPath[0] != '/' {
				return cmdutil.UsageErrorf("--auth-path: want an absolute path, such as %s", DefaultAuthPath)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return proxyRun(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Listen, "listen", "", "address to answer auth checks on, e.g. 127.0.0.1:8089")
	fs.StringVar(&opts.AuthPath, "auth-path", DefaultAuthPath, "path of the auth endpoint")
	fs.StringVar(&opts.GRPCAddr, "grpc-addr", "", "also serve Envoy's rate limit service (gRPC) on this address, e.g. 127.0.0.1:8081")
	fs.StringVar(&opts.Policy, "policy", "", "policy file (YAML)")
	fs.StringVar(&opts.Fail, "fail", "", "when the store is down: open or closed (default: the policy's, else open)")
	fs.StringVar(&opts.Admin, "admin", "", "address of the admin API (metrics, health, inspection); a port alone binds 127.0.0.1; off when empty")
	fs.StringVar(&opts.AdminToken, "admin-token", "", "bearer token the admin API requires (default $"+AdminTokenEnv+")")
	timeoutFlags(cmd, opts)
	return cmd
}
