package redisstore

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/redis/go-redis/v9"
)

// ClientTimeout bounds dialing and the wait for a pooled connection of a
// client built by NewClient. Each command's reads and writes are bounded by
// ratelimit.DefaultMaxWait, the longest a limiter waits for a store that
// answers: a shorter client timeout would cut a busy machine's late answers
// that the limiter still waits for. The limiter's own bound, passed as a
// context deadline, is the one that applies.
const ClientTimeout = time.Second

// NewClient builds a client from a URL:
//
//	redis://[user:password@]host:port[/db]             single node
//	rediss://...                                       single node over TLS
//	redis://host1:7000,host2:7001,host3:7002           cluster (any comma list)
//	redis+cluster://host:7000                          cluster from one seed node
//	redis+sentinel://[:password@]h1:26379,h2:26379/mymaster[/db]   sentinel
//
// The client honours context deadlines, so a hung server costs a check no
// more than its budget.
func NewClient(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redisstore: parse %q: %w", redactURL(rawURL), errors.Unwrap(err))
	}
	scheme, mode, _ := strings.Cut(u.Scheme, "+")
	if scheme != "redis" && scheme != "rediss" {
		return nil, fmt.Errorf("redisstore: %q: scheme must be redis, rediss, redis+cluster or redis+sentinel", redactURL(rawURL))
	}
	hosts := strings.Split(u.Host, ",")
	if u.Host == "" {
		return nil, fmt.Errorf("redisstore: %q: no host", redactURL(rawURL))
	}
	opts := &redis.UniversalOptions{
		Addrs:                 hosts,
		DialTimeout:           ClientTimeout,
		ReadTimeout:           ratelimit.DefaultMaxWait,
		WriteTimeout:          ratelimit.DefaultMaxWait,
		PoolTimeout:           ClientTimeout,
		ContextTimeoutEnabled: true,
		MaxRetries:            1,
		// A refused connection is reported at once, not retried: the
		// limiter's failure policy and circuit breakers take it from there.
		DialerRetries:      1,
		DialerRetryTimeout: 50 * time.Millisecond,
	}
	if u.User != nil {
		opts.Username = u.User.Username()
		opts.Password, _ = u.User.Password()
		if opts.Password == "" {
			// redis://:password@host and redis://password@host both mean a password.
			opts.Password, opts.Username = opts.Username, ""
		}
	}
	if scheme == "rediss" {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: strings.Split(hosts[0], ":")[0]}
	}
	path := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case mode == "sentinel":
		if path[0] == "" {
			return nil, fmt.Errorf("redisstore: %q: sentinel URL needs the master name as its path", redactURL(rawURL))
		}
		opts.MasterName, path = path[0], path[1:]
		opts.SentinelPassword = opts.Password
	case mode == "cluster" || len(hosts) > 1:
		opts.IsClusterMode = true
	case mode != "":
		return nil, fmt.Errorf("redisstore: %q: unknown mode %q (want cluster or sentinel)", redactURL(rawURL), mode)
	}
	if len(path) > 0 && path[0] != "" {
		db, err := strconv.Atoi(path[0])
		if err != nil || opts.IsClusterMode {
			return nil, fmt.Errorf("redisstore: %q: bad database %q", redactURL(rawURL), path[0])
		}
		opts.DB = db
	}
	return redis.NewUniversalClient(opts), nil
}

// EnvURL is the environment variable NewClientFromEnv reads.
const EnvURL = "REDIS_URL"

// ErrNoURL is returned by NewClientFromEnv when REDIS_URL is unset.
var ErrNoURL = errors.New("redisstore: REDIS_URL is not set")

// NewClientFromEnv builds a client from $REDIS_URL.
func NewClientFromEnv() (redis.UniversalClient, error) {
	raw := os.Getenv(EnvURL)
	if raw == "" {
		return nil, ErrNoURL
	}
	return NewClient(raw)
}

// redactURL hides a password in a URL for error messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if at := strings.LastIndex(raw, "@"); at >= 0 {
			return "redis://xxxxx@" + raw[at+1:]
		}
		return raw
	}
	return u.Redacted()
}
