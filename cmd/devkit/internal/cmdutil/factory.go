package cmdutil

// The Factory is built once, by the root command, and handed to every verb's
// NewCmdX (cli/cli's shape). A dependency is a constructor, called only by a
// verb's run function after its flags are parsed: `devkit version` never
// dials anything, and a test replaces one constructor without the others.

import (
	"context"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/supervisor"
)

// Factory holds what every devkit command may need: its IO streams, the
// environment, the clock, and constructors of the KV client, the Redis
// store and the supervisor.
type Factory struct {
	IOStreams *IOStreams
	// LookupEnv reads the environment (os.LookupEnv in the binary).
	LookupEnv func(string) (string, bool)
	// Now is the clock.
	Now func() time.Time
	// Executable names the running binary: the supervisor's monitor command.
	Executable func() (string, error)

	// KVClient dials the KV server's TCP listener at addr.
	KVClient func(ctx context.Context, addr string, opts tcpjson.DialOptions) (*tcpjson.Client, error)
	// RedisClient connects to the Redis named by url (single node, cluster
	// or sentinel, see redisstore.NewClient).
	RedisClient func(url string) (redis.UniversalClient, error)
	// Supervisor opens the supervisor home with cfg (nil: records only).
	Supervisor func(home string, cfg *supervisor.Config, opts supervisor.Options) (*supervisor.Supervisor, error)
}

// NewFactory returns the binary's factory: ios, the process environment,
// the wall clock and the real constructors.
func NewFactory(ios *IOStreams) *Factory {
	return &Factory{
		IOStreams:   ios,
		LookupEnv:   os.LookupEnv,
		Now:         time.Now,
		Executable:  os.Executable,
		KVClient:    tcpjson.DialWith,
		RedisClient: redisstore.NewClient,
		Supervisor:  supervisor.New,
	}
}

// Getenv returns the environment variable name, "" when unset.
func (f *Factory) Getenv(name string) string {
	v, _ := f.LookupEnv(name)
	return v
}
