//go:build unix

package resp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

func TestRedisDiff_CommandGetKeysAndFlagsReportsRedisKeySpecFlags(t *testing.T) {
	p := newPair(t, resp.Options{})
	gkf := func(args ...any) []any { return append([]any{"command", "getkeysandflags"}, args...) }
	p.same(
		gkf("get", "a"), gkf("set", "a", "b"), gkf("del", "a", "b"), gkf("mset", "a", "1", "b", "2"),
		gkf("mget", "a", "b"), gkf("getdel", "a"), gkf("incr", "a"), gkf("append", "a", "b"),
		gkf("copy", "a", "b"), gkf("rename", "a", "b"), gkf("expire", "a", "1"), gkf("lpush", "a", "b"),
		gkf("rpoplpush", "a", "b"), gkf("sadd", "a", "b"), gkf("hset", "a", "b", "c"), gkf("zadd", "a", "1", "b"),
		gkf("exists", "a"), gkf("getex", "a"), gkf("setnx", "a", "b"), gkf("getset", "a", "b"),
		gkf("lmove", "a", "b", "left", "right"), gkf("type", "a"), gkf("ttl", "a"), gkf("persist", "a"),
		gkf("unlink", "a"), gkf("touch", "a"), gkf("strlen", "a"), gkf("setrange", "a", "1", "b"),
		gkf("getrange", "a", "0", "1"), gkf("msetnx", "a", "1", "b", "2"), gkf("smove", "a", "b", "c"),
		gkf("nosuch", "a"), gkf("get"), gkf("ping", "x"), cmd("command", "getkeysandflags"),
	)
	if got := reply(p.ours, "command", "help"); !strings.Contains(got, "GETKEYSANDFLAGS <full-command>") {
		t.Errorf("COMMAND HELP does not list GETKEYSANDFLAGS: %s", got)
	}
}

func TestRedisDiff_WaitWithoutReplicasAnswersZero(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(cmd("wait", "0", "0"), cmd("wait", "x", "0"), cmd("wait", "0", "-1"), cmd("wait", "0", "x"),
		cmd("wait", "1", "20"), cmd("wait"), cmd("wait", "1"))
	// Redis would block until the timeout (for ever with 0); there is no
	// replica to wait for, so we answer at once.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	t0 := time.Now()
	if n, err := p.ours.Do(ctx, "WAIT", 1, 0).Int(); err != nil || n != 0 {
		t.Fatalf("WAIT 1 0 = %d, %v; want 0", n, err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("WAIT 1 0 took %v; want an answer at once", d)
	}
}

func TestRedisDiff_SelectAnswersAsRedisWithOneDatabase(t *testing.T) {
	p := &pair{t: t, redis: protoClient(t, startRedis(t, "--databases", "1")), ours: protoClient(t, start(t, servertest.OpenDB(t), resp.Options{}))}
	p.same(cmd("select", "0"), cmd("select", "1"), cmd("select", "-1"), cmd("select", "x"), cmd("select", "16"),
		cmd("select"), cmd("multi"), cmd("select", "1"), cmd("select", "0"), cmd("exec"))
}

// PUBLISH to a channel nobody listens on answers 0 on both servers (the
// rate limiter publishes its resets; before, devkit kv refused the command).
func TestRedisDiff_PublishWithoutSubscribersAnswersZero(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(cmd("publish", "ch", "hello"), cmd("publish", "ch"), cmd("publish"))
}
