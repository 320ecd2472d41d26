package kv

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server"
	"github.com/devkit-go/devkit/kvstore/server/resp"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// ServeOptions are the inputs of `devkit kv serve`.
type ServeOptions struct {
	IO *cmdutil.IOStreams

	DataDir  string
	HTTPAddr string
	TCPAddr  string
	RESPAddr string

	Sync                string
	SyncInterval        time.Duration
	MaxKeySize          int
	MaxValueSize        int
	SegmentSize         int64
	CompactionThreshold int64

	MaxConns         int
	MaxConnsPerIP    int
	HandshakeTimeout time.Duration
	IdleTimeout      time.Duration
	MaxLineBytes     int
	ShutdownTimeout  time.Duration
	// IdlePoll is how long a RESP event loop polls before it sleeps; 0: never.
	IdlePoll time.Duration
	// MaxArgs, MaxQueuedCommands and MaxWatchedKeys bound a RESP command's
	// arguments, a MULTI's queue and one connection's WATCHed keys.
	MaxArgs           int
	MaxQueuedCommands int
	MaxWatchedKeys    int
	// BusyScriptTime is Redis's busy-reply-threshold; ScriptMaxMemory
	// bounds what one Lua script allocates.
	BusyScriptTime  time.Duration
	ScriptMaxMemory int64
	// PubSubBufferHard, PubSubBufferSoft and PubSubBufferSoftTime bound
	// the messages waiting for one subscriber (Redis's
	// client-output-buffer-limit pubsub).
	PubSubBufferHard     int
	PubSubBufferSoft     int
	PubSubBufferSoftTime time.Duration

	LogFormat string
	LogLevel  string

	// RequirePass is the password every transport asks for (RESP AUTH, TCP
	// JSON auth, HTTP bearer token); empty: none.
	RequirePass string
	AllowFlush  bool
	TLSCert     string
	TLSKey      string

	// Ready, when set, is called with the bound addresses once every
	// listener accepts (tests use it with port 0).
	Ready func(server.Addrs)
}

// NewCmdServe builds `devkit kv serve`; runF, when not nil, receives the options instead of serveRun.
func NewCmdServe(f *cmdutil.Factory, runF func(context.Context, *ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the KV server: HTTP, TCP (newline-delimited JSON) and Redis protocol listeners",
		Long: `Run the durable key-value server on the data directory.

Listeners: HTTP (--http), newline-delimited JSON over TCP (--tcp, what the devkit kv
client commands use) and the Redis protocol, RESP2 and RESP3 (--resp, off by default). An
address of "" turns a listener off. A write is answered only after the engine
acknowledged it under --sync. Logs go to stderr.

--data "" runs a memory-only server, a cache: no data directory, no log, no
snapshots, no file of any kind; a write is answered once it is in memory and
every key is lost when the server stops. SAVE and BGSAVE answer an error there
(devkit kv backup and migrate still copy the keys out), and INFO persistence
says memory_only:1. --sync and the log's flags need a data directory.

On SIGINT or SIGTERM the server stops accepting, answers the requests in flight
(within --shutdown-timeout), closes the engine and exits 0. If the engine cannot
open (another process holds the directory, corruption) it exits 1 with the reason.

--requirepass (or $` + PasswordEnv + `) protects every listener: RESP clients send AUTH,
TCP JSON clients an auth request (the client commands: --password or the same
variable), HTTP clients "Authorization: Bearer <password>" (/health stays open).
--tls-cert and --tls-key make every listener speak TLS. FLUSHDB is refused unless
--allow-flush is given.`,
		Example: `  devkit kv serve
  devkit kv serve --data /var/lib/kv --resp 127.0.0.1:6380 --sync periodic
  devkit kv serve --http "" --tcp 127.0.0.1:5000
  devkit kv serve --data "" --resp 127.0.0.1:6380    # memory-only: a cache, nothing on disk
  DEVKIT_KV_PASSWORD=s3cret devkit kv serve --resp :6380 --tls-cert cert.pem --tls-key key.pem`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.DataDir, "data", "./data", "data `DIR` (created if missing; one server at a time); \"\": memory-only, nothing on disk")
	fs.StringVar(&opts.HTTPAddr, "http", server.DefaultHTTPAddr, "HTTP listen `ADDR`; \"\" turns it off")
	fs.StringVar(&opts.TCPAddr, "tcp", server.DefaultTCPAddr, "TCP JSON listen `ADDR`; \"\" turns it off")
	fs.StringVar(&opts.RESPAddr, "resp", "", "Redis protocol (RESP2, RESP3 after HELLO 3) listen `ADDR`; off when \"\"")
	fs.StringVar(&opts.Sync, "sync", "always", "durability: always (fsync before each ack, group commit), periodic or none")
	cmdutil.DurationVar(fs, &opts.SyncInterval, "sync-interval", kvstore.DefaultSyncInterval, "fsync period under --sync periodic")
	fs.IntVar(&opts.MaxKeySize, "max-key-size", kvstore.DefaultMaxKeySize, "largest key, in bytes")
	fs.IntVar(&opts.MaxValueSize, "max-value-size", kvstore.DefaultMaxValueSize, "largest value, in bytes (bounds HTTP bodies and RESP arguments too)")
	fs.Int64Var(&opts.SegmentSize, "segment-size", kvstore.DefaultSegmentSize, "log segment size, in bytes")
	fs.Int64Var(&opts.CompactionThreshold, "compaction-threshold", kvstore.DefaultCompactionThreshold, "least log growth, in bytes, since the last snapshot that starts one (beyond it: once the log holds as much history as there is live data); negative: never")
	fs.IntVar(&opts.MaxConns, "max-conns", 1024, "open connections per listener (RESP: 10000 when left at the default); at the limit the longest idle one makes room")
	fs.IntVar(&opts.MaxConnsPerIP, "max-conns-per-ip", 0, "open connections of one source address per listener (0: half of --max-conns)")
	cmdutil.DurationVar(fs, &opts.HandshakeTimeout, "handshake-timeout", 10*time.Second, "close a new connection that has not sent a whole first request (HTTP: its headers) this long")
	cmdutil.DurationVar(fs, &opts.IdleTimeout, "idle-timeout", 5*time.Minute, "close a connection idle this long (HTTP keep-alive: at most 2m)")
	fs.IntVar(&opts.MaxLineBytes, "max-line-bytes", 0, "longest TCP JSON request line (0: room for the largest value in base64)")
	cmdutil.DurationVar(fs, &opts.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long to wait for in-flight requests at shutdown")
	cmdutil.DurationVar(fs, &opts.IdlePoll, "idle-poll", resp.DefaultIdlePoll, "longest a RESP event loop that just served requests polls before it sleeps (it then reads the next request without a wake-up; the loop shortens the poll, down to none, while its clients come back later than that); 0: sleep at once, for laptops and busy machines; at most "+maxIdlePoll.String())
	fs.IntVar(&opts.MaxArgs, "max-args", resp.DefaultMaxArgs, "most arguments of one RESP command (more: Redis's protocol error, and the connection is closed)")
	fs.IntVar(&opts.MaxQueuedCommands, "max-queued-commands", resp.DefaultMaxQueuedCommands, "most commands one RESP MULTI may queue (more: an error, and EXEC aborts)")
	fs.IntVar(&opts.MaxWatchedKeys, "max-watched-keys", resp.DefaultMaxWatchedKeys, "most keys one RESP connection may WATCH")
	cmdutil.DurationVar(fs, &opts.BusyScriptTime, "busy-reply-threshold", resp.DefaultBusyScriptTime, "Redis's busy-reply-threshold (lua-time-limit): a Lua script running longer makes other RESP clients get BUSY and may be stopped with SCRIPT KILL or FUNCTION KILL; 0: never busy")
	fs.Int64Var(&opts.ScriptMaxMemory, "script-max-memory", resp.DefaultScriptMaxMemory, "bytes one Lua script may allocate before it is stopped with an error; 0: no bound")
	fs.IntVar(&opts.PubSubBufferHard, "pubsub-buffer-hard", resp.DefaultPubSubBufferHard, "bytes of messages waiting for one pub/sub subscriber past which it is disconnected (Redis's client-output-buffer-limit pubsub hard limit); 0: no bound")
	fs.IntVar(&opts.PubSubBufferSoft, "pubsub-buffer-soft", resp.DefaultPubSubBufferSoft, "bytes of messages waiting for one subscriber that disconnect it when they stay above for --pubsub-buffer-soft-time; 0: no bound")
	cmdutil.DurationVar(fs, &opts.PubSubBufferSoftTime, "pubsub-buffer-soft-time", resp.DefaultPubSubBufferSoftTime, "how long a subscriber may stay above --pubsub-buffer-soft")
	fs.StringVar(&opts.LogFormat, "log-format", "text", "log format on stderr: text or json")
	fs.StringVar(&opts.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&opts.RequirePass, "requirepass", "", "password every listener asks for (env "+PasswordEnv+"; the variable keeps it out of ps)")
	fs.BoolVar(&opts.AllowFlush, "allow-flush", false, "let FLUSHDB/FLUSHALL delete every key")
	fs.StringVar(&opts.TLSCert, "tls-cert", "", "serve every listener over TLS with the certificate in `FILE` (PEM; needs --tls-key)")
	fs.StringVar(&opts.TLSKey, "tls-key", "", "the private key of --tls-cert, in `FILE` (PEM)")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if !fs.Changed("max-conns") {
			opts.MaxConns = 0 // each listener's own default
		}
		if !fs.Changed("requirepass") {
			if v, ok := f.LookupEnv(PasswordEnv); ok {
				opts.RequirePass = v
			}
		}
		if opts.IdlePoll > maxIdlePoll {
			return cmdutil.UsageErrorf("--idle-poll %s: at most %s (a loop keeps a CPU busy that long after each request; a plain number is seconds)", opts.IdlePoll, maxIdlePoll)
		}
		for _, l := range []struct {
			name string
			v    int
		}{{"max-args", opts.MaxArgs}, {"max-queued-commands", opts.MaxQueuedCommands}, {"max-watched-keys", opts.MaxWatchedKeys}} {
			if l.v < 1 {
				return cmdutil.UsageErrorf("--%s %d: at least 1", l.name, l.v)
			}
		}
		if (opts.TLSCert == "") != (opts.TLSKey == "") {
			return cmdutil.UsageErrorf("--tls-cert and --tls-key go together")
		}
		if opts.DataDir == "" {
			// A flag about the log on a server that has none is a mistake
			// in the command line: say so rather than ignore it.
			for _, name := range []string{"sync", "sync-interval", "segment-size", "compaction-threshold"} {
				if fs.Changed(name) {
					return cmdutil.UsageErrorf("--%s needs a data directory: --data \"\" keeps everything in memory, with no log", name)
				}
			}
		}
		return nil
	}
	return cmd
}

// newLogger builds the slog logger for --log-format and --log-level.
func newLogger(opts *ServeOptions) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(opts.LogLevel)); err != nil {
		return nil, cmdutil.UsageErrorf("--log-level %q: want debug, info, warn or error", opts.LogLevel)
	}
	ho := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(opts.LogFormat) {
	case "text":
		return slog.New(slog.NewTextHandler(opts.IO.ErrOut, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(opts.IO.ErrOut, ho)), nil
	}
	return nil, cmdutil.UsageErrorf("--log-format %q: want text or json", opts.LogFormat)
}

func serveRun(ctx context.Context, opts *ServeOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	log, err := newLogger(opts)
	if err != nil {
		return err
	}
	policy, err := kvstore.ParseSyncPolicy(opts.Sync)
	if err != nil {
		return cmdutil.UsageErrorf("--sync: %w", err)
	}
	if opts.HTTPAddr == "" && opts.TCPAddr == "" && opts.RESPAddr == "" {
		return cmdutil.UsageErrorf("every listener is off: give --http, --tcp or --resp an address")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one kills the process at once
	// instead of waiting for the drain.
	context.AfterFunc(ctx, stop)
	// SHUTDOWN over RESP stops the server as a signal does.
	ctx, shutdown := context.WithCancel(ctx)
	defer shutdown()

	// Bind first: a port conflict is reported at once, not after the
	// engine's recovery.
	cfg := serverConfig(opts, log)
	cfg.RESP.OnShutdown = func(context.Context) { shutdown() }
	memoryOnly := opts.DataDir == ""
	if !memoryOnly {
		// Redis 7 functions survive restarts: a file beside the engine's log.
		cfg.RESP.FunctionsFile = filepath.Join(opts.DataDir, resp.FunctionsFileName)
		// and a backup carries them with its checkpoint.
		cfg.TCP.BackupFiles = []string{cfg.RESP.FunctionsFile}
	}
	if opts.TLSCert != "" {
		pair, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	bound, err := server.Bind(ctx, cfg)
	if err != nil {
		return err
	}
	cfg.Bound = bound
	db, err := kvstore.Open(opts.DataDir, kvstore.Options{
		Sync:                policy,
		SyncInterval:        opts.SyncInterval,
		MaxKeySize:          opts.MaxKeySize,
		MaxValueSize:        opts.MaxValueSize,
		SegmentSize:         opts.SegmentSize,
		CompactionThreshold: opts.CompactionThreshold,
		MemoryOnly:          memoryOnly,
		Logger:              log,
	})
	if err != nil {
		bound.Close()
		return fmt.Errorf("cannot open the engine: %w", err)
	}
	if memoryOnly {
		log.Warn("memory-only engine (--data \"\"): nothing is written to disk and every key is lost when the server stops")
	} else {
		log.Info("engine open", "dir", opts.DataDir, "keys", db.Len(), "sync", policy.String(),
			"replayed_records", db.Stats().ReplayedRecords, "torn_tail_bytes", db.Stats().TornTailBytes)
	}

	srv := server.New(db, cfg)
	if err := srv.Listen(ctx); err != nil {
		db.Close()
		return err
	}
	if opts.Ready != nil {
		opts.Ready(srv.Addrs())
	}
	serveErr := srv.Serve(ctx)
	if err := db.Close(); err != nil {
		log.Error("closing the engine failed", "err", err)
		return fmt.Errorf("close the engine: %w", err)
	}
	if serveErr != nil {
		log.Error("shutdown was not clean", "err", serveErr)
		return serveErr
	}
	log.Info("stopped cleanly; engine closed")
	return nil
}

// serverConfig maps the flags onto the listeners' limits.
func serverConfig(opts *ServeOptions, log *slog.Logger) server.Config {
	maxLine := opts.MaxLineBytes
	if maxLine <= 0 {
		// A value in base64 plus its key, escaped, and the JSON around them.
		maxLine = opts.MaxValueSize/3*4 + 4 + 6*opts.MaxKeySize + 1<<10
		maxLine = max(maxLine, tcpjson.DefaultMaxLineBytes)
	}
	cfg := server.Config{
		HTTPAddr:        opts.HTTPAddr,
		TCPAddr:         opts.TCPAddr,
		RESPAddr:        opts.RESPAddr,
		HTTPMaxConns:    opts.MaxConns,
		HTTPIdleTimeout: min(opts.IdleTimeout, server.DefaultHTTPIdleTimeout),
		ShutdownTimeout: opts.ShutdownTimeout,
		Logger:          log,
		Password:        opts.RequirePass,
	}
	cfg.HTTPMaxConnsPerIP = opts.MaxConnsPerIP
	cfg.HTTPReadHeaderTimeout = opts.HandshakeTimeout
	cfg.TCP.MaxConnsPerIP, cfg.RESP.MaxConnsPerIP = opts.MaxConnsPerIP, opts.MaxConnsPerIP
	cfg.TCP.HandshakeTimeout, cfg.RESP.HandshakeTimeout = opts.HandshakeTimeout, opts.HandshakeTimeout
	cfg.RESP.AllowFlush = opts.AllowFlush
	cfg.HTTP.MaxValueBytes = opts.MaxValueSize
	cfg.HTTP.MaxKeyBytes = opts.MaxKeySize
	cfg.TCP.MaxLineBytes = maxLine
	cfg.TCP.MaxConns = opts.MaxConns
	cfg.TCP.IdleTimeout = opts.IdleTimeout
	cfg.RESP.MaxBulkBytes = max(opts.MaxValueSize, opts.MaxKeySize) + 1
	cfg.RESP.MaxConns = opts.MaxConns
	cfg.RESP.IdleTimeout = opts.IdleTimeout
	cfg.RESP.IdlePoll = opts.IdlePoll
	cfg.RESP.MaxArgs = opts.MaxArgs
	cfg.RESP.MaxQueuedCommands = opts.MaxQueuedCommands
	cfg.RESP.MaxWatchedKeys = opts.MaxWatchedKeys
	cfg.RESP.BusyScriptTime = opts.BusyScriptTime
	if opts.BusyScriptTime == 0 {
		cfg.RESP.BusyScriptTime = -1 // never: the option's zero is its default
	}
	cfg.RESP.ScriptMaxMemory = opts.ScriptMaxMemory
	if opts.ScriptMaxMemory == 0 {
		cfg.RESP.ScriptMaxMemory = -1
	}
	if opts.IdlePoll == 0 {
		cfg.RESP.IdlePoll = -1 // never: the option's zero is its default
	}
	cfg.RESP.PubSubBufferHard, cfg.RESP.PubSubBufferSoft = noBoundIfZero(opts.PubSubBufferHard), noBoundIfZero(opts.PubSubBufferSoft)
	cfg.RESP.PubSubBufferSoftTime = opts.PubSubBufferSoftTime
	return cfg
}

// noBoundIfZero maps a flag's 0 ("no bound") to the option's negative
// (whose zero is its default).
func noBoundIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// maxIdlePoll bounds --idle-poll.
const maxIdlePoll = 10 * time.Millisecond
