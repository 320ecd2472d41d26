//go:build unix

package resp_test

import (
	"regexp"
	"strings"
	"testing"

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
		words("AUTH", "not-a-password"), words("AUTH", "user", "not-a-password"),
		words("CONFIG", "GET", "maxclients"),
		words("SET", "quoted \"key\"", "line\nbreak\ttab\x01\xff\\"),
		words("DEL", "foo", "n", "quoted \"key\""),
	}
	sameBytes(t, peers, cmds[:len(cmds)-3]...)
	for _, p := range peers { // its reply names each server's version: not compared
		p.c.send("HELLO 2 AUTH default not-a-password SETNAME app\r\n")
		if r, err := readReply(p.c.r); err != nil || !strings.HasPrefix(r, "*14\r\n") {
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
		if r, err := readReply(p.c.r); err != nil || !strings.Contains(r, "flags=O ") {
			t.Errorf("%s: CLIENT LIST with a monitor: %q, %v; want a flags=O line", p.name, r, err)
		}
	}
	sameBytes(t, mons, words("RESET"), words("SET", "after", "reset"), words("GET", "after"))
}
