// Package ratelimit implements `devkit ratelimit`: one-shot checks and
// inspection against a shared Redis store, the rate-limiting reverse proxy,
// and the policy linter. One file per verb: XOptions (what the flags, args
// and environment gave, plus the dependencies from the cmdutil.Factory),
// NewCmdX(f, runF) and xRun(ctx, opts). --redis/REDIS_URL and --prefix are
// read into the options before runF; the store is opened by the run.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
)

// StoreOptions are the flags every store-backed verb shares.
type StoreOptions struct {
	// RedisURL is --redis, else $REDIS_URL ("": no shared store).
	RedisURL string
	Prefix   string
	// Getenv reads the environment for options built without the flags
	// (the verbs have read REDIS_URL into RedisURL already).
	Getenv func(string) string
	// WaitReplicas and WaitTimeout are redisstore.Options' (proxy and
	// serve: --wait-replicas, --wait-timeout).
	WaitReplicas int
	WaitTimeout  time.Duration
	// Connect opens the Redis client (the factory's RedisClient;
	// redisstore.NewClient when nil).
	Connect func(url string) (redis.UniversalClient, error)
}

// NewCmd builds `devkit ratelimit` and its verbs.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := newRatelimitNoun(f)
	cmd.AddCommand(
		NewCmdCheck(f, nil),
		NewCmdInfo(f, nil),
		NewCmdReset(f, nil),
		NewCmdTop(f, nil),
		NewCmdHealth(f, nil),
		NewCmdProxy(f, nil),
		NewCmdServe(f, nil),
		NewCmdLint(f, nil),
	)
	return cmd
}

// storeFrom reads ratelimit's persistent --redis and --prefix from cmd (a
// verb whose flags are parsed) and REDIS_URL.
func storeFrom(f *cmdutil.Factory, cmd *cobra.Command) *StoreOptions {
	so := &StoreOptions{Prefix: redisstore.DefaultPrefix, Getenv: f.Getenv, Connect: f.RedisClient}
	so.RedisURL, _ = cmd.Flags().GetString("redis")
	if p := cmd.Flags().Lookup("prefix"); p != nil {
		so.Prefix = p.Value.String()
	}
	so.RedisURL = so.url()
	return so
}

// newRatelimitNoun builds the noun and its persistent flags, without verbs.
func newRatelimitNoun(_ *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ratelimit",
		Short: "Multi-tenant HTTP rate limiting: checks, inspection, a limiting proxy",
		Long: `devkit ratelimit checks and inspects rate limits held in Redis (single node,
sentinel or cluster) and runs a rate-limiting reverse proxy driven by a policy file.

The store is given by --redis URL or the REDIS_URL environment variable:
  redis://host:6379/0                       single node
  redis://h1:7000,h2:7001,h3:7002           cluster (comma list of nodes)
  redis+sentinel://h1:26379,h2:26379/mymaster   sentinel`,
	}
	cmd.PersistentPreRun = func(cmd *cobra.Command, args []string) {
		// go-redis logs dial failures on its own; every verb reports store
		// errors itself, so its messages go to slog at debug level instead.
		redis.SetLogger(debugLogger{})
	}
	cmd.PersistentFlags().String("redis", "", "Redis URL (default $REDIS_URL)")
	cmd.PersistentFlags().String("prefix", redisstore.DefaultPrefix, "prefix of every Redis key")
	return cmd
}

// debugLogger passes go-redis's internal messages to slog at debug level.
type debugLogger struct{}

func (debugLogger) Printf(ctx context.Context, format string, v ...any) {
	slog.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

// errNoStore explains how to give a shared store.
var errNoStore = errors.New("no shared store: a one-shot command has nothing to share in memory.\n" +
	"Give a Redis with --redis redis://127.0.0.1:6379 or set REDIS_URL (cluster: a comma list of nodes)")

// url returns the Redis URL from the flag or the environment.
func (so *StoreOptions) url() string {
	if so.RedisURL != "" {
		return so.RedisURL
	}
	if so.Getenv != nil {
		return so.Getenv(redisstore.EnvURL)
	}
	return ""
}

// openRedis opens the shared store or says how to give one (usage error).
func (so *StoreOptions) openRedis() (*redisstore.Store, func(), error) {
	raw := so.url()
	if raw == "" {
		return nil, nil, cmdutil.UsageError(errNoStore)
	}
	store, client, err := so.openStore(raw)
	if err != nil {
		return nil, nil, err
	}
	return store, func() { client.Close() }, nil
}

// openStore checks --prefix, opens the Redis client at raw with Connect and
// the store over it; its errors are usage errors. The caller closes the
// client.
func (so *StoreOptions) openStore(raw string) (*redisstore.Store, redis.UniversalClient, error) {
	if err := redisstore.CheckPrefix(so.Prefix); err != nil {
		return nil, nil, cmdutil.UsageError(fmt.Errorf("--prefix: %w", err))
	}
	connect := so.Connect
	if connect == nil {
		connect = redisstore.NewClient
	}
	client, err := connect(raw)
	if err != nil {
		return nil, nil, cmdutil.UsageError(err)
	}
	if so.WaitReplicas > 0 {
		if _, ok := client.(*redis.ClusterClient); ok {
			client.Close()
			return nil, nil, cmdutil.UsageErrorf("--wait-replicas: not for a Redis Cluster (single node or Sentinel only)")
		}
	}
	return redisstore.New(client, redisstore.Options{Prefix: so.Prefix, WaitReplicas: so.WaitReplicas, WaitTimeout: so.WaitTimeout}), client, nil
}

// commandTimeout bounds one-shot store calls.
const commandTimeout = 5 * time.Second

// connect opens the Redis store and a context bounded by the command
// timeout, for one inspection command; done releases both.
func (so *StoreOptions) connect(parent context.Context) (store *redisstore.Store, ctx context.Context, done func(), err error) {
	store, closeStore, err := so.openRedis()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := withTimeout(parent)
	return store, ctx, func() { cancel(); closeStore() }, nil
}

func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, commandTimeout)
}

func human(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}
