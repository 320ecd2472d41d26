package kv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil/cmdtest"
	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server"
	"github.com/devkit-go/devkit/kvstore/server/resp"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// TestArgv_Options: what each kv verb's flags, args and environment give
// its run function, and the command lines refused before it runs (exit 2).
func TestArgv_Options(t *testing.T) {
	client := ClientOptions{Addr: server.DefaultTCPAddr, Timeout: 5 * time.Second}
	envAddr := map[string]string{AddrEnv: "10.0.0.5:5000", PasswordEnv: "s3cret"}
	withEnv := ClientOptions{Addr: "10.0.0.5:5000", Password: "s3cret", Timeout: 5 * time.Second}
	noTimeout := ClientOptions{Addr: server.DefaultTCPAddr}
	serve := ServeOptions{DataDir: "./data", HTTPAddr: server.DefaultHTTPAddr, TCPAddr: server.DefaultTCPAddr,
		Sync: "always", SyncInterval: kvstore.DefaultSyncInterval, MaxKeySize: kvstore.DefaultMaxKeySize,
		MaxValueSize: kvstore.DefaultMaxValueSize, SegmentSize: kvstore.DefaultSegmentSize,
		CompactionThreshold: kvstore.DefaultCompactionThreshold, HandshakeTimeout: 10 * time.Second,
		IdleTimeout: 5 * time.Minute, ShutdownTimeout: server.DefaultShutdownTimeout, IdlePoll: resp.DefaultIdlePoll,
		LogFormat: "text", LogLevel: "info", MaxArgs: resp.DefaultMaxArgs, MaxQueuedCommands: resp.DefaultMaxQueuedCommands,
		MaxWatchedKeys: resp.DefaultMaxWatchedKeys, BusyScriptTime: resp.DefaultBusyScriptTime, ScriptMaxMemory: resp.DefaultScriptMaxMemory,
		PubSubBufferHard: resp.DefaultPubSubBufferHard, PubSubBufferSoft: resp.DefaultPubSubBufferSoft, PubSubBufferSoftTime: resp.DefaultPubSubBufferSoftTime}
	serveNoPoll := serve
	serveLimits := serve
	serveLimits.MaxArgs, serveLimits.MaxQueuedCommands, serveLimits.MaxWatchedKeys = 10, 20, 30
	serveNoPoll.IdlePoll = 0
	serveTuned := serve
	serveTuned.DataDir, serveTuned.RESPAddr, serveTuned.HTTPAddr, serveTuned.Sync = "/d", ":6380", "", "periodic"
	serveTuned.SyncInterval, serveTuned.MaxConns, serveTuned.IdleTimeout, serveTuned.ShutdownTimeout = 250*time.Millisecond, 1024, 90*time.Second, 1500*time.Millisecond
	serveTuned.RequirePass, serveTuned.AllowFlush, serveTuned.TLSCert, serveTuned.TLSKey = "pw", true, "c.pem", "k.pem"
	servePubSub := serve
	servePubSub.PubSubBufferHard, servePubSub.PubSubBufferSoft, servePubSub.PubSubBufferSoftTime = 1<<20, 0, 5*time.Second
	serveEnv := serve
	serveEnv.RequirePass = "s3cret"

	cmdtest.RunTable(t, NewCmd(cmdtest.Factory(nil)), []cmdtest.Case{
		{Name: "serve pub/sub limits", Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve", "--pubsub-buffer-hard", "1048576",
			"--pubsub-buffer-soft", "0", "--pubsub-buffer-soft-time", "5s"), Want: servePubSub, Unwired: []string{"Ready"}},
		{Name: "serve defaults", Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve"), Want: serve, Unwired: []string{"Ready"}},
		{Name: "serve flags", Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve", "--data", "/d", "--resp", ":6380", "--http", "",
			"--sync", "periodic", "--sync-interval", "250ms", "--max-conns", "1024", "--idle-timeout", "90", "--shutdown-timeout", "1.5",
			"--requirepass", "pw", "--allow-flush", "--tls-cert", "c.pem", "--tls-key", "k.pem"), Want: serveTuned, Unwired: []string{"Ready"}},
		{Name: "serve password from the environment", Env: envAddr, Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve"), Want: serveEnv, Unwired: []string{"Ready"}},
		{Name: "serve --requirepass wins over the environment", Env: envAddr, Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve", "--requirepass", ""), Want: serve, Unwired: []string{"Ready"}},
		{Name: "serve --tls-cert without --tls-key", Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve", "--tls-cert", "c.pem"), Code: 2, Stderr: "go together"},
		{Name: "serve --idle-timeout not a duration", Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve", "--idle-timeout", "1e3"), Code: 2, Stderr: "not a duration"},
		{Name: "serve --idle-poll 0", Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve", "--idle-poll", "0"), Want: serveNoPoll, Unwired: []string{"Ready"}},
		{Name: "serve --idle-poll in seconds, past the bound", Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve", "--idle-poll", "20"), Code: 2, Stderr: "at most 10ms"},
		{Name: "serve RESP limits", Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve", "--max-args", "10", "--max-queued-commands", "20", "--max-watched-keys", "30"), Want: serveLimits, Unwired: []string{"Ready"}},
		{Name: "serve --max-queued-commands 0", Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve", "--max-queued-commands", "0"), Code: 2, Stderr: "at least 1"},
		{Name: "serve takes no args", Parse: cmdtest.Parse(newKVNoun, NewCmdServe, "serve", "x"), Code: 2},

		{Name: "get defaults", Parse: cmdtest.Parse(newKVNoun, NewCmdGet, "get", "k"), Want: GetOptions{ClientOptions: client, Key: "k"}},
		{Name: "get addr and password from the environment", Env: envAddr, Parse: cmdtest.Parse(newKVNoun, NewCmdGet, "get", "k"), Want: GetOptions{ClientOptions: withEnv, Key: "k"}},
		{Name: "get flags win over the environment", Env: envAddr, Parse: cmdtest.Parse(newKVNoun, NewCmdGet, "get", "k", "--addr", "h:1", "--password", "p", "--timeout", "2"),
			Want: GetOptions{ClientOptions: ClientOptions{Addr: "h:1", Password: "p", Timeout: 2 * time.Second}, Key: "k"}},
		{Name: "get empty DEVKIT_KV_ADDR keeps the default", Env: map[string]string{AddrEnv: ""}, Parse: cmdtest.Parse(newKVNoun, NewCmdGet, "get", "k"), Want: GetOptions{ClientOptions: client, Key: "k"}},
		{Name: "get --tls --tls-ca", Parse: cmdtest.Parse(newKVNoun, NewCmdGet, "get", "k", "--tls", "--tls-ca", "ca.pem"),
			Want: GetOptions{ClientOptions: ClientOptions{Addr: server.DefaultTCPAddr, Timeout: 5 * time.Second, TLS: true, TLSCA: "ca.pem"}, Key: "k"}},
		{Name: "get needs one key", Parse: cmdtest.Parse(newKVNoun, NewCmdGet, "get"), Code: 2, Stderr: "devkit: kv get: accepts 1 arg(s), received 0\nUsage: devkit kv get KEY [flags]\nRun 'devkit kv get --help' for details."},
		{Name: "get --timeout soon", Parse: cmdtest.Parse(newKVNoun, NewCmdGet, "get", "k", "--timeout", "soon"), Code: 2},

		{Name: "set", Parse: cmdtest.Parse(newKVNoun, NewCmdSet, "set", "k", "-"), Want: SetOptions{ClientOptions: client, Key: "k", Value: "-"}},
		{Name: "set needs a value", Parse: cmdtest.Parse(newKVNoun, NewCmdSet, "set", "k"), Code: 2},

		{Name: "del", Parse: cmdtest.Parse(newKVNoun, NewCmdDel, "del", "a", "b"), Want: DelOptions{ClientOptions: client, Keys: []string{"a", "b"}}},
		{Name: "del needs a key", Parse: cmdtest.Parse(newKVNoun, NewCmdDel, "del"), Code: 2},

		{Name: "keys defaults", Parse: cmdtest.Parse(newKVNoun, NewCmdKeys, "keys"), Want: KeysOptions{ClientOptions: client}},
		{Name: "keys flags", Parse: cmdtest.Parse(newKVNoun, NewCmdKeys, "keys", "--prefix", "user:", "--limit", "10", "--json", "--base64"),
			Want: KeysOptions{ClientOptions: client, Prefix: "user:", Limit: 10, JSON: true, Base64: true}},
		{Name: "keys --limit negative", Parse: cmdtest.Parse(newKVNoun, NewCmdKeys, "keys", "--limit", "-1"), Code: 2, Stderr: "--limit -1"},

		{Name: "ping", Parse: cmdtest.Parse(newKVNoun, NewCmdPing, "ping"), Want: PingOptions{ClientOptions: client}},
		{Name: "ping takes no args", Parse: cmdtest.Parse(newKVNoun, NewCmdPing, "ping", "x"), Code: 2},

		{Name: "stats", Parse: cmdtest.Parse(newKVNoun, NewCmdStats, "stats", "--json"), Want: StatsOptions{ClientOptions: client, JSON: true}},

		{Name: "bench defaults", Parse: cmdtest.Parse(newKVNoun, NewCmdBench, "bench"),
			Want: BenchOptions{ClientOptions: client, Clients: 50, Duration: 10 * time.Second, ValueSize: 100, Keys: 10000, WritePercent: 50}},
		{Name: "bench flags", Parse: cmdtest.Parse(newKVNoun, NewCmdBench, "bench", "--clients", "4", "--duration", "1.5", "--value-size", "0", "--keys", "1", "--write-percent", "100", "--json"),
			Want: BenchOptions{ClientOptions: client, Clients: 4, Duration: 1500 * time.Millisecond, Keys: 1, WritePercent: 100, JSON: true}},
		{Name: "bench --clients 0", Parse: cmdtest.Parse(newKVNoun, NewCmdBench, "bench", "--clients", "0"), Code: 2},
		{Name: "bench --duration 0", Parse: cmdtest.Parse(newKVNoun, NewCmdBench, "bench", "--duration", "0"), Code: 2},
		{Name: "bench --write-percent 101", Parse: cmdtest.Parse(newKVNoun, NewCmdBench, "bench", "--write-percent", "101"), Code: 2},

		{Name: "backup", Parse: cmdtest.Parse(newKVNoun, NewCmdBackup, "backup", "--out", "b", "--json"), Want: BackupOptions{ClientOptions: noTimeout, Out: "b", JSON: true}},
		{Name: "backup --timeout", Parse: cmdtest.Parse(newKVNoun, NewCmdBackup, "backup", "--out", "b", "--timeout", "1m"),
			Want: BackupOptions{ClientOptions: ClientOptions{Addr: server.DefaultTCPAddr, Timeout: time.Minute}, Out: "b"}},
		{Name: "backup needs --out", Parse: cmdtest.Parse(newKVNoun, NewCmdBackup, "backup"), Code: 2, Stderr: "--out DIR is required"},

		{Name: "migrate defaults", Parse: cmdtest.Parse(newKVNoun, NewCmdMigrate, "migrate", "--to", "redis://h:6379"),
			Want: MigrateOptions{ClientOptions: noTimeout, To: "redis://h:6379", PageSize: 1000, Workers: 8}},
		{Name: "migrate flags", Env: envAddr, Parse: cmdtest.Parse(newKVNoun, NewCmdMigrate, "migrate", "--to", "redis://h", "--prefix", "s:", "--page-size", "10", "--workers", "1", "--json"),
			Want: MigrateOptions{ClientOptions: ClientOptions{Addr: "10.0.0.5:5000", Password: "s3cret"}, To: "redis://h", Prefix: "s:", PageSize: 10, Workers: 1, JSON: true}},
		{Name: "migrate needs --to", Parse: cmdtest.Parse(newKVNoun, NewCmdMigrate, "migrate"), Code: 2},
		{Name: "migrate --page-size 0", Parse: cmdtest.Parse(newKVNoun, NewCmdMigrate, "migrate", "--to", "redis://h", "--page-size", "0"), Code: 2},

		{Name: "verify defaults", Parse: cmdtest.Parse(newKVNoun, NewCmdVerify, "verify"), Want: VerifyOptions{DataDir: "./data"}},
		{Name: "verify flags", Parse: cmdtest.Parse(newKVNoun, NewCmdVerify, "verify", "--data", "/d", "--json"), Want: VerifyOptions{DataDir: "/d", JSON: true}},
		{Name: "repair defaults", Parse: cmdtest.Parse(newKVNoun, NewCmdRepair, "repair"), Want: RepairOptions{DataDir: "./data"}},
		{Name: "repair flags", Parse: cmdtest.Parse(newKVNoun, NewCmdRepair, "repair", "--data", "/d", "--json"), Want: RepairOptions{DataDir: "/d", JSON: true}},
		{Name: "verify DIR", Parse: cmdtest.Parse(newKVNoun, NewCmdVerify, "verify", "/d"), Want: VerifyOptions{DataDir: "/d"}},
		{Name: "verify DIR and the same --data", Parse: cmdtest.Parse(newKVNoun, NewCmdVerify, "verify", "/d", "--data", "/d"), Want: VerifyOptions{DataDir: "/d"}},
		{Name: "verify DIR and another --data", Parse: cmdtest.Parse(newKVNoun, NewCmdVerify, "verify", "/d", "--data", "/e"), Code: 2, Stderr: `two data directories: "/d" and --data "/e"`},
		{Name: "verify two DIRs", Parse: cmdtest.Parse(newKVNoun, NewCmdVerify, "verify", "/d", "/e"), Code: 2, Stderr: "Usage: devkit kv verify [DIR] [flags]"},
		{Name: "repair DIR", Parse: cmdtest.Parse(newKVNoun, NewCmdRepair, "repair", "/d", "--json"), Want: RepairOptions{DataDir: "/d", JSON: true}},
		{Name: "repair two DIRs", Parse: cmdtest.Parse(newKVNoun, NewCmdRepair, "repair", "/d", "/e"), Code: 2},
	})
}

// TestArgv_ClientFromFactory: a client verb dials through the factory's
// KVClient with the address and password its options name.
func TestArgv_ClientFromFactory(t *testing.T) {
	f := cmdtest.Factory(map[string]string{AddrEnv: "10.0.0.5:5000", PasswordEnv: "s3cret"})
	var gotAddr, gotPassword string
	refused := errors.New("dial refused by the test")
	f.KVClient = func(_ context.Context, addr string, o tcpjson.DialOptions) (*tcpjson.Client, error) {
		gotAddr, gotPassword = addr, o.Password
		return nil, refused
	}
	r := cmdtest.Run(f, newKVNoun, NewCmdGet, "get", "k")
	if r.Code != 0 || r.Opts == nil {
		t.Fatalf("exit %d %q", r.Code, r.Stderr)
	}
	if err := getRun(t.Context(), r.Opts); !errors.Is(err, refused) {
		t.Fatalf("getRun: %v, want the factory's dial error", err)
	}
	if gotAddr != "10.0.0.5:5000" || gotPassword != "s3cret" {
		t.Errorf("dialled %q with password %q", gotAddr, gotPassword)
	}
}

// The RESP limit flags reach the server's options.
func TestServerConfig_RESPLimits(t *testing.T) {
	cfg := serverConfig(&ServeOptions{MaxValueSize: 1 << 20, MaxKeySize: 4096, MaxArgs: 10, MaxQueuedCommands: 20, MaxWatchedKeys: 30}, nil)
	if cfg.RESP.MaxArgs != 10 || cfg.RESP.MaxQueuedCommands != 20 || cfg.RESP.MaxWatchedKeys != 30 {
		t.Errorf("RESP limits %d, %d, %d; want 10, 20, 30", cfg.RESP.MaxArgs, cfg.RESP.MaxQueuedCommands, cfg.RESP.MaxWatchedKeys)
	}
}

// --idle-poll 0 turns the poll off: the RESP option's zero is its default,
// so the server is given a negative value.
func TestServerConfig_IdlePollZeroIsNever(t *testing.T) {
	for _, tc := range []struct{ flag, want time.Duration }{{0, -1}, {resp.DefaultIdlePoll, resp.DefaultIdlePoll}, {time.Millisecond, time.Millisecond}} {
		cfg := serverConfig(&ServeOptions{IdlePoll: tc.flag, MaxValueSize: 1 << 20, MaxKeySize: 4096}, nil)
		if cfg.RESP.IdlePoll != tc.want {
			t.Errorf("--idle-poll %v: RESP IdlePoll %v, want %v", tc.flag, cfg.RESP.IdlePoll, tc.want)
		}
	}
}

// The pub/sub output limits reach the server, 0 as "no bound".
func TestServerConfig_PubSubLimitsZeroIsNoBound(t *testing.T) {
	cfg := serverConfig(&ServeOptions{MaxValueSize: 1 << 20, MaxKeySize: 4096, PubSubBufferHard: 1 << 20, PubSubBufferSoft: 0, PubSubBufferSoftTime: 5 * time.Second}, nil)
	if cfg.RESP.PubSubBufferHard != 1<<20 || cfg.RESP.PubSubBufferSoft != -1 || cfg.RESP.PubSubBufferSoftTime != 5*time.Second {
		t.Errorf("pub/sub limits %d, %d, %v; want 1048576, -1 (no bound), 5s", cfg.RESP.PubSubBufferHard, cfg.RESP.PubSubBufferSoft, cfg.RESP.PubSubBufferSoftTime)
	}
}
