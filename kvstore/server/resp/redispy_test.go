//go:build unix

// Unix only: Debian's python3-redis at /usr/bin/python3 (a missing one fails
// under CI=true), which a Windows runner does not have.

package resp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// systemPython is Debian's python3, the one python3-redis installs into
// (a python3 earlier on PATH, such as pyenv's, does not see it).
const systemPython = "/usr/bin/python3"

// requireRedisPy finds the system python with redis-py, or skips with the
// install hint; under CI=true a missing one fails the test.
func requireRedisPy(t *testing.T) {
	t.Helper()
	err := exec.Command(systemPython, "-c", "import redis").Run()
	if err != nil {
		msg := fmt.Sprintf("%s -c 'import redis' failed (%v): install it with `apt-get install python3-redis`", systemPython, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// runRedisPy runs a redis-py script of testdata against a devkit kv
// server of its own (the script gets its host and port) and returns the
// JSON object it prints.
func runRedisPy(t *testing.T, script string) map[string]any {
	t.Helper()
	requireRedisPy(t)
	host, port, _ := net.SplitHostPort(start(t, servertest.OpenDB(t), resp.Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, systemPython, script, host, port).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("redis-py %s: %v\n%s", script, err, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s output %q: %v", script, out, err)
	}
	return got
}

func TestRedisPy_TransactionsTTLsAndCounters(t *testing.T) {
	got := runRedisPy(t, "testdata/redispy_check.py")
	want := map[string]any{
		"ping": true, "set": true, "get": "hello",
		"tx":    []any{true, 2.0, 12.0, "12", 1.0},
		"watch": "aborted", "balance": "100",
		"ttl": 100.0, "pttl_ok": true, "persist": true, "ttl_after_persist": -1.0,
		"expired": nil, "ttl_missing": -2.0,
		"counter": "1000", "float": "500", "down": "-2000",
		"setnx":  []any{true, false},
		"getset": "1", "getdel": "3",
		"append": 2.0, "strlen": 2.0, "type": "string",
		"incr_text": "value is not an integer or out of range",
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %#v, want %#v", k, got[k], w)
		}
	}
}

func TestRedisPy_CollectionsAndABlockingPop(t *testing.T) {
	got := runRedisPy(t, "testdata/redispy_types.py")
	want := map[string]any{
		"hset": 2.0, "hincrby": 6.0, "hgetall": map[string]any{"user": "ann", "visits": "6"}, "hdel": 1.0,
		"type_hash": "hash", "wrongtype": "WRONGTYPE Operation against a key holding the wrong kind of value",
		"list_tx":    []any{3.0, "j1", []any{"j2", "j3"}},
		"lpop_count": []any{"j2", "j3"}, "lpop_missing": nil,
		"sadd": 2.0, "smembers": []any{"go", "redis"}, "sinter": []any{}, "spop": 2.0, "tags_exists": 0.0,
		"zadd": 3.0, "zincrby": 17.5, "zrevrange": []any{[]any{"bob", 20.0}, []any{"ann", 17.5}},
		"zrangebyscore": []any{"cid"}, "zrank": 2.0, "zpopmin": []any{[]any{"cid", 15.0}},
		"blpop": []any{"queue", "payload"}, "blpop_timeout": nil, "bzpopmin_timeout": nil,
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %#v, want %#v", k, got[k], w)
		}
	}
}

// redis-py's PubSub (subscribe, psubscribe, get_message, a handler on
// run_in_thread, unsubscribing) works against devkit kv.
func TestRedisPy_PubSubMessagesPatternsAndAHandlerThread(t *testing.T) {
	got := runRedisPy(t, "testdata/redispy_pubsub.py")
	msg := func(typ string, pattern, channel, data any) map[string]any {
		return map[string]any{"type": typ, "pattern": pattern, "channel": channel, "data": data}
	}
	want := map[string]any{
		"subscribed":        msg("subscribe", nil, "orders", 1.0),
		"psubscribed":       msg("psubscribe", nil, "audit.*", 2.0),
		"numsub":            []any{[]any{"orders", 1.0}, []any{"none", 0.0}},
		"numpat":            1.0,
		"channels":          []any{"orders"},
		"published":         []any{1.0, 1.0, 0.0},
		"messages":          []any{msg("message", nil, "orders", "o-1"), msg("pmessage", "audit.*", "audit.login", "a-1")},
		"handled":           []any{"e-1"},
		"after_unsubscribe": []any{0.0, 0.0},
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %#v, want %#v", k, got[k], w)
		}
	}
}
