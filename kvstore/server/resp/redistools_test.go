//go:build unix

// Unix only: redis-cli and redis-benchmark are Unix programs (there is no
// Windows build of Redis to install), and under CI=true a missing tool fails.

package resp_test

import (
	"context"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

func TestRedisCLI_AgainstOurServer(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	db := servertest.OpenDB(t)
	host, port, _ := net.SplitHostPort(start(t, db, resp.Options{}))
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, cli, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "PONG"},
		{[]string{"SET", "user:1", "alice"}, "OK"},
		{[]string{"GET", "user:1"}, "alice"},
		{[]string{"MSET", "user:2", "bob", "user:3", "carol"}, "OK"},
		{[]string{"DBSIZE"}, "3"},
		{[]string{"EXISTS", "user:1", "nope"}, "1"},
		{[]string{"DEL", "user:3"}, "1"},
		{[]string{"GET", "user:3"}, ""},
	} {
		if got := run(tc.args...); got != tc.want {
			t.Errorf("redis-cli %v = %q, want %q", tc.args, got, tc.want)
		}
	}
	// SCAN's order is the scan order (a hash), not the key order.
	if got := strings.Split(run("--scan", "--pattern", "user:*"), "\n"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"user:1", "user:2"}) {
		t.Errorf("redis-cli --scan = %q", got)
	}
	if got := run("INFO", "keyspace"); !strings.Contains(got, "db0:keys=2") {
		t.Errorf("INFO keyspace = %q", got)
	}
	// Piped commands go through one connection, pipelined.
	cmd := exec.Command(cli, "-h", host, "-p", port)
	cmd.Stdin = strings.NewReader("SET piped 1\nGET piped\nSET bad\n")
	out, _ := cmd.CombinedOutput()
	if got := string(out); !strings.Contains(got, "OK\n1\n") || !strings.Contains(got, "wrong number of arguments") {
		t.Errorf("piped redis-cli output %q", got)
	}
}

func TestRedisBenchmark_RunsWithoutErrors(t *testing.T) {
	bench := requireTool(t, "redis-benchmark")
	db := servertest.OpenDB(t)
	host, port, _ := net.SplitHostPort(start(t, db, resp.Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bench, "-h", host, "-p", port, "-t", "set,get,mset,ping", "-n", "2000", "-c", "10", "-r", "500", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"SET:", "GET:", "MSET", "PING"} {
		if !strings.Contains(text, want) {
			t.Errorf("redis-benchmark output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(strings.ToLower(text), "error") {
		t.Fatalf("redis-benchmark reported errors:\n%s", text)
	}
	if db.Len() == 0 || db.Len() > 500+10 {
		t.Fatalf("engine holds %d keys after the benchmark, want 1..510", db.Len())
	}
}

// TestRedisBenchmark_DefaultTestSet runs each test of redis-benchmark's
// default set on its own: the string and collection tests run to the end
// without an error; each test of a data type devkit kv does not have
// (redis-benchmark stops at the first error reply) ends with Redis's own
// unknown-command error naming the command, and nothing else.
func TestRedisBenchmark_DefaultTestSet(t *testing.T) {
	bench := requireTool(t, "redis-benchmark")
	host, port, _ := net.SplitHostPort(start(t, servertest.OpenDB(t), resp.Options{}))
	for _, tc := range []struct{ test, line string }{
		{"ping_inline", "PING_INLINE: "}, {"ping_mbulk", "PING_MBULK: "}, {"set", "SET: "}, {"get", "GET: "},
		{"incr", "INCR: "}, {"mset", "MSET (10 keys): "},
		{"lpush", "LPUSH: "}, {"rpush", "RPUSH: "}, {"lpop", "LPOP: "}, {"rpop", "RPOP: "},
		{"sadd", "SADD: "}, {"hset", "HSET: "}, {"spop", "SPOP: "}, {"zadd", "ZADD: "},
		{"zpopmin", "ZPOPMIN: "}, {"lrange", "LRANGE_600 (first 600 elements): "},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, bench, "-h", host, "-p", port, "-t", tc.test, "-n", "500", "-c", "5", "-q").CombinedOutput()
		cancel()
		text := string(out)
		supported := !strings.HasPrefix(tc.line, "ERR")
		switch {
		case supported && (err != nil || strings.Contains(text, "Error") || !strings.Contains(text, tc.line) || !strings.Contains(text, "requests per second")):
			t.Errorf("redis-benchmark -t %s: %v\n%s", tc.test, err, text)
		case !supported && (err == nil || !strings.Contains(text, "Error from server: "+tc.line)):
			t.Errorf("redis-benchmark -t %s did not end with %q: %v\n%s", tc.test, tc.line, err, text)
		}
	}
}
