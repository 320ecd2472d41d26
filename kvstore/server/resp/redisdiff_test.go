//go:build unix

package resp_test

// Differential tests: the same commands go to a real redis-server and to
// our server, and the replies (values and error texts) must be equal.
// Redis is the judge users trust, so these tests hold our answers to its.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// startRedis starts a real redis-server without persistence on a free
// 127.0.0.1 port (extra arguments are added to its command line) and
// stops it at cleanup.
func startRedis(t testing.TB, extra ...string) string {
	t.Helper()
	bin := requireTool(t, "redis-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--daemonize", "no", "--logfile", ""}, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(10 * time.Second); ; {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer PING", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reply is a command's answer as text: its value, or its error.
func reply(c *redis.Client, args ...any) string {
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%v", v)
}

// pair is a real redis-server and our server, each with a client.
type pair struct {
	t           *testing.T
	redis, ours *redis.Client
}

// diffProto is the protocol both clients of a pair speak: RESP2 (what
// redis-py, Jedis and node-redis speak by default), and RESP3 (go-redis
// v9's default) when TestRedisDiff_EveryDiffUnderRESP3 runs them again.
var diffProto = 2

func newPair(t *testing.T, opts resp.Options) *pair {
	t.Helper()
	return &pair{t: t, redis: protoClient(t, startRedis(t)), ours: protoClient(t, start(t, servertest.OpenDB(t), opts))}
}

// protoClient is a go-redis client of addr speaking diffProto.
func protoClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: diffProto})
	t.Cleanup(func() { c.Close() })
	return c
}

// same runs each command on both servers and fails on the first pair of
// replies that differ.
func (p *pair) same(cmds ...[]any) {
	p.t.Helper()
	for _, cmd := range cmds {
		want, got := reply(p.redis, cmd...), reply(p.ours, cmd...)
		if want != got {
			p.t.Errorf("%v:\n redis: %s\n ours:  %s", cmd, want, got)
		}
	}
}

func TestRedisDiff_FarFutureAndOverflowingExpiries(t *testing.T) {
	p := newPair(t, resp.Options{})
	set := cmd("set", "k", "v")
	exists := cmd("exists", "k")
	for _, c := range [][]any{
		cmd("expire", "k", "9000000000"),
		cmd("pexpire", "k", "9000000000000"),
		cmd("pexpireat", "k", "9223372036854770000"),
		cmd("expireat", "k", "9223372036854775"),
		cmd("expireat", "k", "9000000000"),
		cmd("set", "k", "v", "exat", "9223372036854775"),
		cmd("set", "k", "v", "pxat", "9223372036854775807"),
		cmd("set", "k", "v", "ex", "9000000000"),
		cmd("getex", "k", "exat", "9000000000"),
		cmd("setex", "k", "9000000000", "v"),
		cmd("psetex", "k", "9000000000000", "v"),
	} {
		p.same(set, c, exists)
		if ttl, err := p.ours.TTL(context.Background(), "k").Result(); err != nil || ttl < 200*365*24*time.Hour {
			t.Errorf("%v: TTL = %v, %v; want over 200 years", c, ttl, err)
		}
	}
	// TTL values are not compared above past April 2262 (see
	// docs/kvstore-server.md): only that the key is kept. Errors are exact.
	for _, c := range [][]any{
		cmd("expire", "k", "9223370399119966"),
		cmd("expire", "k", "9223372036854776"),
		cmd("expire", "k", "10000000000000000"),
		cmd("expire", "k", "18446744073709561"),
		cmd("expire", "k", "-9223372036854776"),
		cmd("expireat", "k", "-9999999999999999"),
		cmd("pexpire", "k", "9223372036854770000"),
		cmd("pexpire", "k", "-9223372036854775808"),
		cmd("set", "k", "v", "ex", "10000000000000000"),
		cmd("set", "k", "v", "ex", "-9999999999999999"),
		cmd("set", "k", "v", "ex", "0"),
		cmd("set", "k", "v", "px", "9223372036854775807"),
		cmd("set", "k", "v", "ex", "9223372036854775"),
		cmd("set", "k", "v", "ex", "abc", "xx", "nx"),
		cmd("set", "k", "v", "ex", "10", "ex", "20"),
		cmd("set", "k", "v", "ex", "10", "px", "20"),
		cmd("set", "k", "v", "keepttl", "ex", "10"),
		cmd("getex", "k", "ex", "10000000000000000"),
		cmd("getex", "k", "ex", "-9999999999999999"),
		cmd("getex", "k", "px", "9223372036854775807"),
		cmd("getex", "k", "persist", "ex", "10"),
		cmd("setex", "k", "10000000000000000", "v"),
		cmd("setex", "k", "0", "v"),
		cmd("psetex", "k", "9223372036854775807", "v"),
		cmd("expire", "k", "10", "nx", "xx"),
		cmd("expire", "k", "10", "gt", "lt"),
		cmd("expire", "k", "abc", "foo"),
		cmd("expire", "k", "abc", "nx"),
	} {
		p.same(set, c, exists, cmd("ttl", "k"))
	}
	p.same(set, cmd("pexpireat", "k", "-9223372036854770000"), exists, cmd("ttl", "k"))
	p.same(set, cmd("expire", "k", "-9223372036854775"), exists)
	p.same(set, cmd("pexpireat", "k", "1999999999999"), cmd("expiretime", "k"), cmd("pexpiretime", "k"))
	p.same(set, cmd("expire", "k", "100"), cmd("expire", "k", "200", "gt"), cmd("ttl", "k"),
		cmd("expire", "k", "50", "gt"), cmd("expire", "k", "50", "lt"), cmd("ttl", "k"))
}

func TestRedisDiff_AuthWithoutAPassword(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(cmd("auth", "x"), cmd("auth", "default", "x"), cmd("auth", "someone", "x"), cmd("auth", "a", "b", "c"))
}

func TestRedisDiff_TransactionsCommandAndErrorTexts(t *testing.T) {
	p := newPair(t, resp.Options{AllowFlush: true})
	// WATCH of a missing key survives FLUSHALL and FLUSHDB (Redis touches
	// only the keys that exist); of an existing key, it does not.
	for _, flush := range []string{"flushall", "flushdb"} {
		p.sameOn(cmd("del", "x"), cmd("watch", "x"), cmd(flush), cmd("multi"), cmd("ping"), cmd("exec"))
		p.sameOn(cmd("set", "x", "1"), cmd("watch", "x"), cmd(flush), cmd("multi"), cmd("ping"), cmd("exec"))
	}
	p.sameOn(cmd("del", "x"), cmd("watch", "x"), cmd("set", "x", "1"), cmd("del", "x"), cmd("multi"), cmd("ping"), cmd("exec"))
	p.sameOn(cmd("set", "x", "1"), cmd("watch", "x"), cmd("expire", "x", "10"), cmd("multi"), cmd("ping"), cmd("exec"))
	p.sameOn(cmd("set", "x", "1"), cmd("watch", "x"), cmd("multi"), cmd("ping"), cmd("exec"))
	// Queue-time rules and texts.
	p.sameOn(cmd("multi"), cmd("watch", "x"), cmd("multi"), cmd("save"), cmd("exec"))
	p.sameOn(cmd("flushall"), cmd("multi"), cmd("set", "a", "1"), cmd("keys", "*"), cmd("dbsize"), cmd("config", "get", "maxmemory"),
		cmd("select", "0"), cmd("exec"))
	p.sameOn(cmd("multi"), cmd("nosuch"), cmd("exec"))
	p.sameOn(cmd("multi"), cmd("get"), cmd("exec"))
	// COMMAND.
	p.same(cmd("command", "foo"), cmd("command", "list", "x"), cmd("command", "list", "filterby", "foo", "x"),
		cmd("command", "list", "filterby", "pattern"), cmd("command", "list", "filterby", "aclcat", "nosuch"),
		cmd("command", "list", "filterby", "module", "nosuch"), cmd("command", "count", "x"),
		cmd("command", "list", "filterby", "pattern", "get*", "filterby", "module", "x"))
	if got := reply(p.ours, "command", "list", "filterby", "pattern", "pexpire*"); got != "[pexpire pexpireat pexpiretime]" {
		t.Errorf("COMMAND LIST FILTERBY PATTERN pexpire* = %s", got)
	}
	if got := reply(p.ours, "command", "list", "filterby", "aclcat", "transaction"); got != "[multi exec watch unwatch discard]" {
		t.Errorf("COMMAND LIST FILTERBY ACLCAT transaction = %s", got)
	}
	// Error texts clients match on.
	p.same(cmd("client", "foo"), cmd("config", "foo"), cmd("config", "set", "foo", "bar"),
		cmd("set", "f", "1"), cmd("incrbyfloat", "f", "inf"), cmd("incrbyfloat", "f", "-inf"), cmd("incrbyfloat", "f", "nan"),
		cmd("set", "f", "inf"), cmd("incrbyfloat", "f", "1"),
		cmd("set", "x", "1"), cmd("expire", "x", "10", "nx", "gt"), cmd("expire", "x", "10", "xx", "nx"))
}

// sameOn runs the commands on one connection of each server (a
// transaction's state is the connection's).
func (p *pair) sameOn(cmds ...[]any) {
	p.t.Helper()
	ctx := context.Background()
	rc, oc := p.redis.Conn(), p.ours.Conn()
	defer rc.Close()
	defer oc.Close()
	for _, c := range cmds {
		want, got := connReply(ctx, rc, c...), connReply(ctx, oc, c...)
		if want != got {
			p.t.Errorf("%v (in %v):\n redis: %s\n ours:  %s", c, cmds, want, got)
		}
	}
}

func connReply(ctx context.Context, c *redis.Conn, args ...any) string {
	v, err := c.Do(ctx, args...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%v", v)
}

func TestRedisDiff_StringAndKeyspaceCommands(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("set", "s", "Hello World"),
		cmd("getrange", "s", "0", "4"), cmd("getrange", "s", "-5", "-1"), cmd("getrange", "s", "-1", "-5"),
		cmd("getrange", "s", "5", "2"), cmd("getrange", "s", "0", "100"), cmd("getrange", "s", "-100", "2"),
		cmd("getrange", "s", "x", "1"), cmd("getrange", "nokey", "0", "-1"), cmd("substr", "s", "1", "3"),
		cmd("getrange", "s", "0"),
		cmd("setrange", "s", "6", "Redis"), cmd("get", "s"), cmd("setrange", "s", "20", "!"), cmd("get", "s"),
		cmd("setrange", "new", "3", "x"), cmd("get", "new"), cmd("setrange", "empty", "5", ""), cmd("exists", "empty"),
		cmd("setrange", "s", "0", ""), cmd("setrange", "s", "-1", "x"), cmd("setrange", "s", "x", "x"),
		cmd("setrange", "s", "9223372036854775807", "x"),
		cmd("msetnx", "a", "1", "b", "2"), cmd("msetnx", "b", "3", "c", "4"), cmd("mget", "a", "b", "c"),
		cmd("msetnx", "a"), cmd("msetnx", "d", "1", "d", "2"), cmd("get", "d"),
		cmd("renamenx", "a", "b"), cmd("renamenx", "a", "z"), cmd("mget", "a", "z"), cmd("renamenx", "nokey", "q"),
		cmd("renamenx", "z", "z"), cmd("rename", "z", "z"),
		cmd("set", "t", "v", "ex", "100"),
		cmd("copy", "t", "t2"), cmd("ttl", "t2"), cmd("copy", "t", "t2"), cmd("copy", "b", "t2", "replace"), cmd("get", "t2"),
		cmd("ttl", "t2"), cmd("copy", "nokey", "x"), cmd("copy", "t", "t"),
		cmd("copy", "t", "x", "db", "x"), cmd("copy", "t", "x", "db", "0", "replace"), cmd("copy", "t", "x", "foo"),
		cmd("copy", "t", "x2", "db"),
		cmd("touch", "a", "b", "b", "nokey"), cmd("unlink", "b", "nokey"),
		// Bits.
		cmd("setbit", "bits", "7", "1"), cmd("setbit", "bits", "7", "1"), cmd("setbit", "bits", "100", "1"),
		cmd("get", "bits"), cmd("getbit", "bits", "7"), cmd("getbit", "bits", "6"), cmd("getbit", "bits", "100000"),
		cmd("getbit", "nokey", "1"), cmd("setbit", "bits", "-1", "1"), cmd("setbit", "bits", "1", "2"),
		cmd("setbit", "bits", "x", "1"), cmd("setbit", "bits", "4294967296", "1"), cmd("getbit", "bits", "-1"),
		cmd("setbit", "bits", "7", "0"), cmd("get", "bits"),
		cmd("set", "foobar", "foobar"),
		cmd("bitcount", "foobar"), cmd("bitcount", "foobar", "0", "0"), cmd("bitcount", "foobar", "1", "1"),
		cmd("bitcount", "foobar", "1", "1", "byte"), cmd("bitcount", "foobar", "5", "30", "bit"),
		cmd("bitcount", "foobar", "-1", "-2"), cmd("bitcount", "foobar", "-1", "-2", "foo"), cmd("bitcount", "foobar", "0"),
		cmd("bitcount", "foobar", "0", "1", "foo"), cmd("bitcount", "foobar", "x", "1"), cmd("bitcount", "nokey"),
		cmd("bitcount", "foobar", "-3", "-1", "bit"), cmd("bitcount", "foobar", "0", "-1", "bit"),
		cmd("set", "bp", "\xff\xf0\x00"),
		cmd("bitpos", "bp", "0"), cmd("bitpos", "bp", "1"), cmd("bitpos", "bp", "1", "2"), cmd("bitpos", "bp", "0", "1"),
		cmd("bitpos", "bp", "1", "2", "-1", "byte"), cmd("bitpos", "bp", "1", "7", "15", "bit"),
		cmd("bitpos", "bp", "0", "0", "11", "bit"), cmd("bitpos", "bp", "0", "0", "3", "bit"), cmd("bitpos", "bp", "1", "5", "bit"),
		cmd("bitpos", "bp", "2"), cmd("bitpos", "bp", "x"), cmd("bitpos", "nokey", "1"), cmd("bitpos", "nokey", "0"),
		cmd("bitpos", "bp", "1", "0", "1", "foo"), cmd("bitpos", "bp", "1", "x"),
		cmd("set", "ones", "\xff\xff"), cmd("bitpos", "ones", "0"), cmd("bitpos", "ones", "0", "0", "-1"),
		cmd("bitpos", "ones", "0", "0", "-1", "bit"), cmd("bitpos", "ones", "0", "3", "bit"), cmd("bitpos", "ones", "1", "-1", "-2"),
		cmd("set", "zeros", "\x00\x00"), cmd("bitpos", "zeros", "1"), cmd("bitpos", "zeros", "0", "9", "bit"),
		cmd("setbit", "ttlbits", "1", "1"), cmd("expire", "ttlbits", "100"), cmd("setbit", "ttlbits", "2", "1"), cmd("ttl", "ttlbits"),
		cmd("setrange", "ttlbits", "1", "x"), cmd("ttl", "ttlbits"),
	)
	// RANDOMKEY: a key that exists; nil when there are none.
	for range 20 {
		k := reply(p.ours, "randomkey")
		if n := reply(p.ours, "exists", k); n != "1" {
			t.Fatalf("RANDOMKEY = %q, which does not exist", k)
		}
	}
	// Only database 0 exists (Redis Cluster's answer).
	if got := reply(p.ours, "copy", "t", "x", "db", "1"); got != "error: ERR DB index is out of range" {
		t.Errorf("COPY ... DB 1 = %s", got)
	}
}

// Redis's test suite runs FUNCTION FLUSH before every unit in external-server
// mode; with no functions loaded, FLUSH and LIST answer as Redis does.
func TestRedisDiff_FunctionFlushAndListWithNoFunctions(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("function", "flush"), cmd("function", "flush", "async"), cmd("function", "FLUSH", "SYNC"),
		cmd("function", "flush", "foo"), cmd("function", "flush", "a", "b"),
		cmd("function", "list"), cmd("function", "list", "libraryname", "x"), cmd("function", "foo"), cmd("function"),
	)
}

// INFO commandstats counts calls, refusals before running (arity) and error
// replies per command as Redis does; the default INFO leaves it out, and
// the cpu section is there.
func TestRedisDiff_InfoCommandstatsAndCPU(t *testing.T) {
	p := newPair(t, resp.Options{})
	usec := regexp.MustCompile(`usec=\d+,usec_per_call=[\d.]+`)
	stats := func(c *redis.Client) string {
		info := reply(c, "info", "commandstats")
		var lines []string
		for _, l := range strings.Split(info, "\r\n") {
			for _, name := range []string{"set", "get", "incr", "mget", "evalsha"} {
				if strings.HasPrefix(l, "cmdstat_"+name+":") {
					lines = append(lines, usec.ReplaceAllString(l, "usec=*"))
				}
			}
		}
		slices.Sort(lines) // Redis lists them in its dict's order
		return strings.Join(lines, "\n")
	}
	for _, c := range []*redis.Client{p.redis, p.ours} {
		for _, args := range [][]any{{"config", "resetstat"}, {"set", "a", "b"}, {"set", "n", "1"}, {"get", "a"},
			{"get"}, {"incr", "a"}, {"incr", "n"}, {"incr", "n"},
			// NOSCRIPT is a failed call in Redis 7.0.15 (its call() counts
			// every command that answered an error).
			{"evalsha", "ffffffffffffffffffffffffffffffffffffffff", "0"}} {
			reply(c, args...)
		}
	}
	if want, got := stats(p.redis), stats(p.ours); want != got || got == "" {
		t.Errorf("INFO commandstats:\n redis: %s\n ours:  %s", want, got)
	}
	if info := reply(p.ours, "info"); strings.Contains(info, "cmdstat_") || !strings.Contains(info, "used_cpu_user:") {
		t.Errorf("default INFO: commandstats in it, or no used_cpu_user:\n%s", info)
	}
	if info := reply(p.ours, "info", "cpu"); !strings.Contains(info, "used_cpu_sys:") || strings.Contains(info, "used_memory") {
		t.Errorf("INFO cpu:\n%s", info)
	}
	for _, field := range []string{"role:master", "connected_slaves:0", "master_repl_offset:0", "second_repl_offset:-1", "repl_backlog_active:0"} {
		if info := reply(p.redis, "info", "replication"); !strings.Contains(info, field) {
			t.Fatalf("redis-server's INFO replication has no %q", field)
		}
		if info := reply(p.ours, "info", "replication"); !strings.Contains(info, field) {
			t.Errorf("INFO replication has no %q:\n%s", field, info)
		}
	}
	reply(p.ours, "config", "resetstat")
	if got := reply(p.ours, "info", "commandstats"); strings.Contains(got, "cmdstat_set") {
		t.Errorf("after CONFIG RESETSTAT:\n%s", got)
	}
}

// OBJECT's answers for strings set by SET (the engine keeps no encoding,
// access time or frequency: IDLETIME, 0 here, is left out).
func TestRedisDiff_ObjectOfStrings(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("set", "i", "1234"), cmd("set", "s", "hello"), cmd("set", "big", strings.Repeat("a", 45)),
		cmd("set", "e44", strings.Repeat("a", 44)), cmd("set", "neg", "-5"), cmd("set", "z", "007"),
		cmd("set", "huge", "12345678901234567890"), cmd("set", "n10000", "10000"), cmd("set", "m1", "-1"),
	)
	for _, k := range []string{"i", "s", "big", "e44", "neg", "z", "huge", "n10000", "m1", "nokey"} {
		p.same(cmd("object", "encoding", k), cmd("object", "refcount", k))
	}
	p.same(cmd("object", "freq", "i"), cmd("object", "freq", "nokey"), cmd("object", "idletime", "nokey"),
		cmd("object", "foo", "i"), cmd("object"), cmd("object", "encoding"), cmd("object", "encoding", "a", "b"))
	if got := reply(p.ours, "object", "idletime", "i"); got != "0" {
		t.Errorf("OBJECT IDLETIME = %s, want 0", got)
	}
}

// COMMAND GETKEYS finds the keys of a command line from the table, with
// Redis 7's errors.
func TestRedisDiff_CommandGetKeys(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("command", "getkeys", "set", "a", "b"), cmd("command", "getkeys", "mset", "a", "1", "b", "2"),
		cmd("command", "getkeys", "mget", "a", "b", "c"), cmd("command", "getkeys", "del", "a", "b"),
		cmd("command", "getkeys", "copy", "a", "b"), cmd("command", "getkeys", "object", "encoding", "k"),
		cmd("command", "getkeys", "expire", "a", "b", "c", "d"), cmd("command", "getkeys", "rename", "a", "b"),
		cmd("command", "getkeys", "ping", "x"), cmd("command", "getkeys", "echo", "x"),
		cmd("command", "getkeys", "get", "a", "b"), cmd("command", "getkeys", "set", "a"),
		cmd("command", "getkeys", "nosuch", "a"), cmd("command", "getkeys", "get"), cmd("command", "getkeys"),
	)
}

func TestRedisDiff_ClientUnblockArgumentErrors(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("client", "unblock", "asd"),
		cmd("client", "unblock", "123456", "later"),
		cmd("client", "unblock", "123456"),
		cmd("client", "unblock", "123456", "error"),
		cmd("client", "unblock", "1", "timeout", "x"),
	)
}
