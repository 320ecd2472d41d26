package ratelimit

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil/cmdtest"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
)

// TestArgv_Options: what each ratelimit verb's flags, args and environment
// (REDIS_URL, DEVKIT_RATELIMIT_ADMIN_TOKEN) give its run function, and the
// command lines refused before it runs (exit 2).
func TestArgv_Options(t *testing.T) {
	none := &StoreOptions{Prefix: redisstore.DefaultPrefix}
	fromEnv := &StoreOptions{RedisURL: "redis://env:6379", Prefix: redisstore.DefaultPrefix}
	fromFlag := &StoreOptions{RedisURL: "redis://flag:6379", Prefix: "app:"}
	env := map[string]string{redisstore.EnvURL: "redis://env:6379", AdminTokenEnv: "s3cret"}
	req := RequestOptions{Method: "GET", Path: "/", IP: "203.0.113.1"}
	check := CheckOptions{Store: none, Key: "k", Limit: 5, Window: time.Minute, Algorithm: "fixed-window", Cost: 1, Request: req}
	checkTuned := CheckOptions{Store: fromFlag, Key: "k", Limit: 2, Window: 1500 * time.Millisecond, Algorithm: "token-bucket",
		Burst: 10, Block: time.Hour, Cost: 3, JSON: true, Request: req}
	checkPolicy := CheckOptions{Store: fromEnv, Algorithm: "fixed-window", Cost: 1,
		Request: RequestOptions{Policy: "p.yaml", Method: "POST", Path: "/auth/login", Headers: []string{"X-A: 1", "X-B: 2"}, IP: "10.0.0.1"}}
	checkEnv := check
	checkEnv.Store = fromEnv
	proxy := ProxyOptions{Store: none, Listen: ":8080", Upstream: "http://u", Policy: "p.yaml", WatchInterval: 2 * time.Second, GCPercent: gcPercent{v: DefaultGCPercent}}
	proxyEnv := proxy
	proxyEnv.Store, proxyEnv.AdminToken = fromEnv, "s3cret"
	proxyFlags := proxy
	proxyFlags.Store, proxyFlags.Fail, proxyFlags.Admin, proxyFlags.AdminToken = fromFlag, "closed", ":9090", "flagtok"
	proxyFlags.ReadHeaderTimeout, proxyFlags.ReadIdleTimeout, proxyFlags.WriteIdleTimeout = 5*time.Second, 90*time.Second, 30*time.Second
	proxyFlags.IdleTimeout, proxyFlags.RequestTimeout = time.Minute, time.Hour
	proxyFlags.TLSCert, proxyFlags.TLSKey = "c.pem", "k.pem"
	proxyFlags.WaitReplicas, proxyFlags.WaitTimeout = 1, 100*time.Millisecond
	proxyFlags.GCPercent = gcPercent{v: 200, set: true}
	serve := ProxyOptions{Store: fromEnv, Listen: ":8089", AuthPath: DefaultAuthPath, Policy: "p.yaml", WatchInterval: 2 * time.Second, AdminToken: "s3cret", GCPercent: gcPercent{v: DefaultGCPercent}}
	proxyAuth := proxy
	proxyAuth.AuthPath = "/auth"

	cmdtest.RunTable(t, NewCmd(cmdtest.Factory(nil)), []cmdtest.Case{
		{Name: "check defaults", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdCheck, "check", "k", "--limit", "5", "--window", "1m"), Want: check},
		{Name: "check store from REDIS_URL", Env: env, Parse: cmdtest.Parse(newRatelimitNoun, NewCmdCheck, "check", "k", "--limit", "5", "--window", "60"), Want: checkEnv},
		{Name: "check flags win over REDIS_URL", Env: env, Parse: cmdtest.Parse(newRatelimitNoun, NewCmdCheck, "--redis", "redis://flag:6379", "--prefix", "app:",
			"check", "k", "--limit", "2", "--window", "1.5", "--algorithm", "token-bucket", "--burst", "10", "--block", "1h", "--cost", "3", "--json"), Want: checkTuned},
		{Name: "check a described request", Env: env, Parse: cmdtest.Parse(newRatelimitNoun, NewCmdCheck, "check", "--policy", "p.yaml", "--method", "POST",
			"--path", "/auth/login", "--header", "X-A: 1", "--header", "X-B: 2", "--ip", "10.0.0.1"), Want: checkPolicy},
		{Name: "check needs --limit and --window", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdCheck, "check", "k", "--limit", "5"), Code: 2, Stderr: "--window"},
		{Name: "check needs a key", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdCheck, "check", "--limit", "5", "--window", "1m"), Code: 2, Stderr: "give KEY"},
		{Name: "check KEY and --policy", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdCheck, "check", "k", "--policy", "p.yaml"), Code: 2, Stderr: "not both"},
		{Name: "check --window not a duration", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdCheck, "check", "k", "--limit", "5", "--window", "a while"), Code: 2, Stderr: "not a duration"},
		{Name: "check two keys", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdCheck, "check", "a", "b"), Code: 2},

		{Name: "info key", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdInfo, "info", "k", "--json"), Want: InfoOptions{Store: none, Key: "k", JSON: true, Request: req}},
		{Name: "info a described request", Env: env, Parse: cmdtest.Parse(newRatelimitNoun, NewCmdInfo, "info", "--policy", "p.yaml", "--path", "/x"),
			Want: InfoOptions{Store: fromEnv, Request: RequestOptions{Policy: "p.yaml", Method: "GET", Path: "/x", IP: "203.0.113.1"}}},
		{Name: "info needs a key", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdInfo, "info"), Code: 2, Stderr: "give KEY"},
		{Name: "info KEY and --policy", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdInfo, "info", "k", "--policy", "p.yaml"), Code: 2},

		{Name: "reset", Env: env, Parse: cmdtest.Parse(newRatelimitNoun, NewCmdReset, "reset", "k", "--json"), Want: ResetOptions{Store: fromEnv, Key: "k", JSON: true}},
		{Name: "reset needs a key", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdReset, "reset"), Code: 2},

		{Name: "top defaults", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdTop, "top"), Want: TopOptions{Store: none, N: 10}},
		{Name: "top -n --json", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdTop, "top", "-n", "20", "--json"), Want: TopOptions{Store: none, N: 20, JSON: true}},
		{Name: "top -n not a number", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdTop, "top", "-n", "x"), Code: 2},

		{Name: "health", Env: env, Parse: cmdtest.Parse(newRatelimitNoun, NewCmdHealth, "health", "--json"), Want: HealthOptions{Store: fromEnv, JSON: true}},
		{Name: "health takes no args", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdHealth, "health", "x"), Code: 2},

		{Name: "proxy defaults", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdProxy, "proxy", "--listen", ":8080", "--upstream", "http://u", "--policy", "p.yaml"),
			Want: proxy, Unwired: []string{"Ready"}},
		{Name: "proxy store and admin token from the environment", Env: env, Parse: cmdtest.Parse(newRatelimitNoun, NewCmdProxy, "proxy", "--listen", ":8080", "--upstream", "http://u", "--policy", "p.yaml"),
			Want: proxyEnv, Unwired: []string{"Ready"}},
		{Name: "proxy flags win over the environment", Env: env, Parse: cmdtest.Parse(newRatelimitNoun, NewCmdProxy, "--redis", "redis://flag:6379", "--prefix", "app:", "proxy",
			"--listen", ":8080", "--upstream", "http://u", "--policy", "p.yaml", "--fail", "closed", "--admin", ":9090", "--admin-token", "flagtok",
			"--read-header-timeout", "5s", "--read-idle-timeout", "90s", "--write-idle-timeout", "30s", "--idle-timeout", "1m", "--request-timeout", "1h",
			"--tls-cert", "c.pem", "--tls-key", "k.pem", "--wait-replicas", "1", "--wait-timeout", "100ms", "--gc-percent", "200"),
			Want: proxyFlags, Unwired: []string{"Ready"}},
		{Name: "proxy --read-idle-timeout not a duration", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdProxy, "proxy", "--listen", ":8080", "--upstream", "http://u",
			"--policy", "p.yaml", "--read-idle-timeout", "soon"), Code: 2, Stderr: "not a duration"},
		{Name: "proxy needs --listen --upstream --policy", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdProxy, "proxy", "--listen", ":8080"), Code: 2, Stderr: "--upstream, --policy"},

		{Name: "proxy --auth-path", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdProxy, "proxy", "--listen", ":8080", "--upstream", "http://u", "--policy", "p.yaml",
			"--auth-path", "/auth"), Want: proxyAuth, Unwired: []string{"Ready"}},

		{Name: "serve", Env: env, Parse: cmdtest.Parse(newRatelimitNoun, NewCmdServe, "serve", "--listen", ":8089", "--policy", "p.yaml"),
			Want: serve, Unwired: []string{"Ready"}},
		{Name: "serve needs --listen --policy", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdServe, "serve"), Code: 2, Stderr: "--listen, --policy"},
		{Name: "serve --auth-path not a path", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdServe, "serve", "--listen", ":1", "--policy", "p.yaml",
			"--auth-path", "auth"), Code: 2, Stderr: "absolute path"},

		{Name: "lint", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdLint, "lint", "--policy", "p.yaml"), Want: LintOptions{Policy: "p.yaml"}},
		{Name: "lint needs --policy", Parse: cmdtest.Parse(newRatelimitNoun, NewCmdLint, "lint"), Code: 2, Stderr: "--policy"},
	})
}

// TestArgv_StoreFromFactory: a store verb connects through the factory's
// RedisClient with the URL its options name.
func TestArgv_StoreFromFactory(t *testing.T) {
	f := cmdtest.Factory(map[string]string{redisstore.EnvURL: "redis://env:6379"})
	var gotURL string
	refused := errors.New("connect refused by the test")
	f.RedisClient = func(url string) (redis.UniversalClient, error) { gotURL = url; return nil, refused }
	r := cmdtest.Run(f, newRatelimitNoun, NewCmdReset, "reset", "k")
	if r.Code != 0 || r.Opts == nil {
		t.Fatalf("exit %d %q", r.Code, r.Stderr)
	}
	if err := resetRun(t.Context(), r.Opts); !errors.Is(err, refused) {
		t.Fatalf("resetRun: %v, want the factory's error", err)
	}
	if gotURL != "redis://env:6379" {
		t.Errorf("connected to %q", gotURL)
	}
}
