//go:build unix

package resp_test

import (
	"context"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// MONITOR shows what a real redis-server 7.0 shows, line for line (the
// time and the client's address aside): plain commands, a script's
// commands after its EVAL or FCALL ("[0 lua]"), MULTI/EXEC in the order
// they ran and an aborted EXEC, AUTH and HELLO's password redacted,
// arguments quoted as sdscatrepr quotes them, and nothing of CONFIG or
// of commands refused before they ran. A RESET monitor gets no more.
func TestRedisDiff_MonitorShowsWhatRedisShows(t *testing.T) {
	redisAddr := startRedis(t)
	ourAddr := start(t, servertest.OpenDB(t), resp.Options{})
	mons := [2]rawPeer{{"redis", dialRaw(t, redisAddr)}, {"ours", dialRaw(t, ourAddr)}}
	peers := [2]rawPeer{{"redis", dialRaw(t, redisAddr)}, {"ours", dialRaw(t, ourAddr)}}
	sameBytes(t, peers, words("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return redis.call('set', 'foo', 'bar') end)"))
	sameBytes(t, mons, words("MONITOR"))
	cmds := [][]string{
		words("SET", "foo", "bar"), words("GET", "foo"), words("NOSUCHCOMMAND", "x"), words("GET"),
		words("EVAL", "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', 'n')", "1", "foo", "bar"),
		words("FCALL", "f", "0"), words("EVALSHA", "0000000000000000000000000000000000000000", "0"),
		words("MULTI"), words("SET", "foo", "in multi"), words("INCR", "n"), words("EXEC"),
		words("MULTI"), words("NOSUCHCOMMAND"), words("EXEC"),
		words("MULTI"), words("KEYS", "nosuch*"), words("DBSIZE"), words("EXEC"), // run between EXEC's atomic updates
		words("AUTH", "not-a-password"), words("AUTH", "user", "not-a-password"),
		words("CONFIG", "GET", "maxclients"),
		words("SET", "quoted \"key\"", "line\nbreak\ttab\x01\xff\\"),
		words("DEL", "foo", "n", "quoted \"key\""),
	}
	sameBytes(t, peers, cmds[:len(cmds)-3]...)
	for _, p := range peers { // its reply names each server's version: not compared
		p.c.send("HELLO 2 AUTH default not-a-password SETNAME app\r\n")
		if r, err := readRESP(p.c.r); err != nil || !strings.HasPrefix(r, "*14\r\n") {
			t.Fatalf("%s: HELLO = %q, %v", p.name, r, err)
		}
	}
	sameBytes(t, peers, cmds[len(cmds)-3:]...)
	stamp := regexp.MustCompile(`^\+\d+\.\d{6} \[0 (lua|127\.0\.0\.1:\d+)\] `)
	var got [2][]string
	for i, m := range mons {
		for {
			l, err := m.c.r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v after %q", m.name, err, got[i])
			}
			prefix := stamp.FindString(l)
			if prefix == "" {
				t.Fatalf("%s: line %q is not a monitor line", m.name, l)
			}
			who := "[client] "
			if strings.Contains(prefix, "[0 lua]") {
				who = "[lua] "
			}
			line := who + strings.TrimSpace(l[len(prefix):])
			got[i] = append(got[i], line)
			if strings.HasPrefix(strings.ToLower(line), `[client] "del"`) {
				break
			}
		}
	}
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Errorf("monitor lines differ:\n redis:\n  %s\n ours:\n  %s", strings.Join(got[0], "\n  "), strings.Join(got[1], "\n  "))
	}
	// The monitor is flagged O in CLIENT LIST (an admin command: no line);
	// RESET ends it.
	for _, p := range peers {
		p.c.send("CLIENT LIST\r\n")
		if r, err := readRESP(p.c.r); err != nil || !strings.Contains(r, "flags=O ") {
			t.Errorf("%s: CLIENT LIST with a monitor: %q, %v; want a flags=O line", p.name, r, err)
		}
	}
	sameBytes(t, mons, words("RESET"), words("SET", "after", "reset"), words("GET", "after"))
}

// The attack: a monitor that never reads while another client runs big
// commands. No command waits for it; once the lines waiting for it pass
// the output limit it is disconnected and leaves the monitors; the server
// serves the others meanwhile. A monitor that only listens is not closed
// by the idle timeout (as Redis exempts it).
func TestMonitor_AMonitorThatNeverReadsIsDroppedAndCommandsStayFast(t *testing.T) {
	ctx := context.Background()
	const hard = 4 << 20
	addr := start(t, servertest.OpenDB(t), resp.Options{PubSubBufferHard: hard, PubSubBufferSoft: -1, IdleTimeout: 300 * time.Millisecond})
	stuck, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if tc, ok := stuck.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	if _, err := io.WriteString(stuck, "MONITOR\r\n"); err != nil {
		t.Fatal(err)
	}
	c := goRedis(t, addr)
	waitFor(t, "the monitor", func() bool {
		l, _ := c.ClientList(ctx).Result()
		return strings.Contains(l, "flags=O ")
	})
	time.Sleep(time.Second) // past the idle timeout: a monitor stays
	if l, _ := c.ClientList(ctx).Result(); !strings.Contains(l, "flags=O ") {
		t.Fatalf("the monitor was closed by the idle timeout: %s", l)
	}
	payload := strings.Repeat("x", 64<<10)
	var slowest time.Duration
	sent := 0
	for ; sent < 4*hard/len(payload); sent++ { // four times the limit
		t0 := time.Now()
		if err := c.Set(ctx, "k", payload, 0).Err(); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(t0))
	}
	if slowest > 2*time.Second {
		t.Fatalf("the slowest of %d SETs took %v", sent, slowest)
	}
	waitFor(t, "the stuck monitor's connection to close", func() bool {
		l, _ := c.ClientList(ctx).Result()
		return !strings.Contains(l, "flags=O ") && strings.Count(l, "\n") == 1
	})
	if err := c.Set(ctx, "k", "after", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d SETs of %d KiB, slowest %v", sent, len(payload)>>10, slowest)
}
