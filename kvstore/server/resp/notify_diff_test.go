//go:build unix

package resp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// keyspaceEvents sets notify-keyspace-events to flags on addr, subscribes
// a second connection to every channel, runs cmds (inline commands) and
// returns their replies and then every message the subscriber got, in
// order, as raw RESP. A PUBLISH to the channel "end" marks the last one;
// "AWAIT n" among cmds first awaits n events (those the server sends on its
// own time, as expired), "SLEEP d" sleeps.
func keyspaceEvents(t *testing.T, addr, flags string, cmds []string) (replies, events []string) {
	t.Helper()
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(15 * time.Second))
		return c, bufio.NewReader(c)
	}
	sub, subR := dial()
	cl, clR := dial()
	do := func(c net.Conn, r *bufio.Reader, line string) string {
		t.Helper()
		if _, err := io.WriteString(c, line+"\r\n"); err != nil {
			t.Fatal(err)
		}
		v, err := readRESP(r)
		if err != nil {
			t.Fatalf("%s: %q: %v", addr, line, err)
		}
		return v
	}
	do(cl, clR, "FLUSHALL")
	if v := do(cl, clR, "CONFIG SET notify-keyspace-events "+flags); v != "+OK\r\n" {
		t.Fatalf("%s: CONFIG SET notify-keyspace-events %s = %q", addr, flags, v)
	}
	do(sub, subR, "PSUBSCRIBE *")
	for _, line := range cmds {
		if n, ok := strings.CutPrefix(line, "AWAIT "); ok {
			for len(events) < int(n[0]-'0') {
				v, err := readRESP(subR)
				if err != nil {
					t.Fatalf("%s: awaiting %s events: %v (so far %q)", addr, n, err, events)
				}
				events = append(events, v)
			}
			continue
		}
		if strings.HasPrefix(line, "SLEEP ") {
			d, _ := time.ParseDuration(strings.TrimPrefix(line, "SLEEP "))
			time.Sleep(d)
			continue
		}
		replies = append(replies, fmt.Sprintf("%s -> %q", line, do(cl, clR, line)))
	}
	do(cl, clR, "PUBLISH end end")
	for {
		v, err := readRESP(subR)
		if err != nil {
			t.Fatalf("%s: reading the events: %v (so far %q)", addr, err, events)
		}
		if strings.Contains(v, "\r\n$3\r\nend\r\n$3\r\nend\r\n") {
			break
		}
		events = append(events, v)
	}
	do(cl, clR, "CONFIG SET notify-keyspace-events \"\"")
	return replies, events
}

// sameEvents runs each case against redis-server and ours and compares
// the replies and the keyspace events, message by message.
func sameEvents(t *testing.T, cases []eventCase) {
	redisAddr := startRedis(t)
	ours := start(t, servertest.OpenDB(t), resp.Options{AllowFlush: true})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantR, wantE := keyspaceEvents(t, redisAddr, tc.flags, tc.cmds)
			gotR, gotE := keyspaceEvents(t, ours, tc.flags, tc.cmds)
			diffLists(t, "reply", wantR, gotR)
			diffLists(t, "event", wantE, gotE)
			if len(wantE) == 0 {
				t.Errorf("redis-server sent no events: the case tests nothing")
			}
		})
	}
}

func diffLists(t *testing.T, what string, want, got []string) {
	t.Helper()
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("%s %d:\n redis: %q\n ours:  %q", what, i, w, g)
		}
	}
}

type eventCase struct {
	name, flags string
	cmds        []string
}

// Each family's writes publish Redis's keyspace and keyevent messages,
// in Redis's order, byte for byte: the generic, string, list, hash, set
// and sorted set commands, the "new" class, a transaction and a script.
func TestRedisDiff_KeyspaceNotificationsMatchRedis(t *testing.T) {
	sameEvents(t, []eventCase{
		{"generic", "KEg", []string{
			"SET a 1", "EXPIRE a 100", "PEXPIRE a 50000 GT", "PEXPIRE a 200000 GT", "EXPIRE a 100 NX", "PERSIST a", "PERSIST a",
			"RENAME a b", "RENAMENX b c", "COPY c d", "COPY c d", "DEL b c d nope", "SET e 1", "EXPIRE e -1",
			"SET f 1", "EXPIREAT f 1", "SET g 1", "GETEX g EX 100", "GETEX g PERSIST", "GETDEL g", "GETDEL g",
			"SET h 1 EX 100", "SETEX i 100 v", "UNLINK h i",
		}},
		{"string", "KE$", []string{
			"SET a 1", "SET a 2 XX", "SET a 3 NX", "SETNX a 4", "SETNX b 1", "GETSET b 2", "MSET c 1 d 2",
			"MSETNX c 1 e 2", "MSETNX e 1 f 2", "APPEND g x", "APPEND g y", "INCR h", "DECR h", "INCRBY h 5",
			"DECRBY h 2", "INCRBYFLOAT h 1.5", "INCR a x", "SETRANGE i 2 ab", "SETRANGE i 0 \"\"", "SETBIT j 3 1",
			"SETBIT j 3 1", "BITFIELD k SET u8 0 200 GET u8 0", "BITFIELD k GET u8 0", "BITOP OR l j k",
			"BITOP AND m nope1 nope2", "SET a 1 EX 100", "PSETEX n 100000 v", "SET a 5 KEEPTTL GET",
		}},
		{"list", "KEl", []string{
			"LPUSH l a b c", "RPUSH l d", "LPUSHX nope x", "RPUSHX l e", "LINSERT l BEFORE a z", "LINSERT l BEFORE nope z",
			"LSET l 0 y", "LREM l 1 y", "LREM l 1 nope", "LTRIM l 0 10", "LPOP l", "RPOP l 2", "LMOVE l m LEFT RIGHT",
			"RPOPLPUSH m l", "LMPOP 2 nope l RIGHT COUNT 10", "RPUSH r x", "RPOPLPUSH r r", "LPOP nope",
			"RPUSH t a b", "LTRIM t 5 10", "BLPOP nope l 0.01", "RPUSH u a", "BRPOP u 1", "RPUSH v a", "BLMOVE v w LEFT LEFT 1",
		}},
		{"list-del", "KEg", []string{"RPUSH l a", "LPOP l", "RPUSH l a b", "LREM l 0 a", "LREM l 0 b", "RPUSH m a", "LMOVE m n LEFT LEFT"}},
		{"hash", "KEhg", []string{
			"HSET h a 1 b 2", "HSET h a 1", "HMSET h c 3", "HSETNX h a 9", "HSETNX h z 9", "HINCRBY h a 5",
			"HINCRBYFLOAT h b 1.5", "HINCRBY h a x", "HDEL h nope", "HDEL h a b", "HDEL h c z", "HINCRBY n f 1",
		}},
		{"set", "KEsg", []string{
			"SADD s a b c", "SADD s a", "SREM s nope", "SREM s a", "SPOP s 0", "SMOVE s t b", "SMOVE s t nope",
			"SMOVE t t b", "SADD u 1 2 3", "SINTERSTORE i s u", "SUNIONSTORE v s u t", "SDIFFSTORE v u u",
			"SDIFFSTORE v nope", "SADD w 1", "SPOP w 10", "SREM t b", "SMOVE s t c",
		}},
		{"zset", "KEzg", []string{
			"ZADD z 1 a 2 b 3 c", "ZADD z 1 a", "ZADD z NX 5 a", "ZADD z XX CH 5 a", "ZADD z INCR 1 a", "ZINCRBY z 2 b",
			"ZADD z GT 0 a", "ZREM z nope", "ZREM z a", "ZREMRANGEBYSCORE z 100 200", "ZREMRANGEBYSCORE z 0 2",
			"ZADD y 1 p 2 q 3 r", "ZREMRANGEBYRANK y 0 0", "ZREMRANGEBYLEX y [q [q", "ZPOPMIN y", "ZPOPMAX z 5",
			"ZADD x 1 a 2 b", "ZRANGESTORE w x 0 -1", "ZRANGESTORE w x 5 6", "ZUNIONSTORE u 2 x nope", "ZINTERSTORE i 2 x nope",
			"ZDIFFSTORE d 1 x", "ZMPOP 1 x MIN COUNT 1", "BZPOPMAX x 1", "BZPOPMIN nope x 0.01",
		}},
		{"new", "En", []string{
			"SET a 1", "SET a 2", "LPUSH l x", "LPUSH l y", "HSET h f v", "SADD s m", "ZADD z 1 m", "INCR i", "APPEND p x",
			"MSET q 1 a 3", "COPY a b", "RPOPLPUSH l l2", "SINTERSTORE t s s", "ZUNIONSTORE zz 1 z", "SETEX e 100 v",
			"SET r1 1", "SET r2 2", "RENAME r1 r2", "RENAMENX r2 a", "COPY r2 a REPLACE", "SORT l STORE l3", "SORT l STORE l3",
			"BITOP NOT bn a", "GETSET a 9", "SET a 1 GET", "SETNX a 1", "HINCRBY h2 f 1", "HSETNX h3 f v", "ZINCRBY z2 1 m",
		}},
		{"transaction-and-script", "KEA", []string{
			"MULTI", "SET a 1", "LPUSH l x", "INCR a", "EXEC",
			"EVAL \"redis.call('set', KEYS[1], 'v'); redis.call('rpush', KEYS[2], 'x'); return redis.call('del', KEYS[1])\" 2 k l",
			"EVAL \"redis.call('hset', KEYS[1], 'f', 'v'); return redis.pcall('incr', KEYS[1])\" 1 h",
		}},
		{"masked", "Kl", []string{"SET a 1", "LPUSH l x", "DEL l"}},
	})
}

// A key that expires publishes "expired", from the background sweep and
// after a read met it (Redis's active and lazy expiry); CONFIG GET gives
// the flags back in Redis's canonical order.
func TestRedisDiff_ExpiredEventsAndNotifyConfig(t *testing.T) {
	sameEvents(t, []eventCase{
		{"expired", "Ex", []string{"PSETEX a 50 v", "AWAIT 1", "SET b 1 PX 50", "SLEEP 100ms", "GET b", "AWAIT 2"}},
		{"expired-collections", "KEx", []string{"RPUSH l a", "PEXPIRE l 50", "AWAIT 2", "HSET h f v", "PEXPIRE h 50", "AWAIT 4"}},
	})
	p := newPair(t, resp.Options{})
	for _, flags := range []string{"gKE", "$lshzxeKE", "KA", "EA", "AKEm", "Ex", "tdn", "KEA", "", "A", "K", "KEAmn"} {
		p.same(cmd("config", "set", "notify-keyspace-events", flags), cmd("config", "get", "notify-keyspace-events"))
	}
	p.same(cmd("config", "set", "notify-keyspace-events", "KEq"), cmd("config", "get", "notify-keyspace-events"),
		cmd("config", "set", "notify-keyspace-events"))
}

// go-redis v9's PSubscribe receives keyevent and keyspace messages as
// Redis sends them, expiry included; with notifications off (the
// default) nothing is published.
func TestKeyspaceNotifications_GoRedisPSubscribe(t *testing.T) {
	for _, goroutines := range []bool{false, true} {
		t.Run(fmt.Sprint("GoroutinePerConn=", goroutines), func(t *testing.T) {
			addr := start(t, servertest.OpenDB(t), resp.Options{GoroutinePerConn: goroutines})
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			c := goRedis(t, addr)
			ps := c.PSubscribe(ctx, "__key*@0__:*")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			ch := ps.Channel()
			c.Set(ctx, "quiet", "1", 0) // off by default: no message
			if err := c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
				t.Fatal(err)
			}
			c.Set(ctx, "k", "v", 0)
			c.HSet(ctx, "h", "f", "v")
			c.Set(ctx, "t", "v", 50*time.Millisecond)
			want := []string{
				"__keyspace@0__:k set", "__keyevent@0__:set k",
				"__keyspace@0__:h hset", "__keyevent@0__:hset h",
				"__keyspace@0__:t set", "__keyevent@0__:set t",
				"__keyspace@0__:t expire", "__keyevent@0__:expire t",
				"__keyspace@0__:t expired", "__keyevent@0__:expired t",
			}
			for i, w := range want {
				select {
				case m := <-ch:
					if got := m.Channel + " " + m.Payload; got != w || m.Pattern != "__key*@0__:*" {
						t.Fatalf("message %d = %q (pattern %q), want %q", i, got, m.Pattern, w)
					}
				case <-ctx.Done():
					t.Fatalf("message %d (%q) did not come", i, w)
				}
			}
		})
	}
}

// CLIENT REPLY OFF, SKIP and ON drop and restore replies as Redis does,
// and a subscriber with replies off still gets its confirmations and
// messages (Redis's unit/pubsub subscribes that way).
func TestRedisDiff_ClientReplyMatchesRedis(t *testing.T) {
	redisAddr := startRedis(t)
	ours := start(t, servertest.OpenDB(t), resp.Options{})
	steps := []step{
		{0, "CLIENT REPLY OFF", [2]int{0, 0}},
		{0, "SET a 1", [2]int{0, 0}},
		{0, "CLIENT REPLY SKIP", [2]int{0, 0}},
		{0, "CLIENT REPLY ON", [2]int{1, 0}},
		{0, "GET a", [2]int{1, 0}},
		{0, "CLIENT REPLY SKIP", [2]int{0, 0}},
		{0, "INCR a", [2]int{0, 0}},
		{0, "GET a", [2]int{1, 0}},
		{0, "CLIENT REPLY NOPE", [2]int{1, 0}},
		{0, "CLIENT REPLY", [2]int{1, 0}},
		{0, "CLIENT REPLY OFF", [2]int{0, 0}},
		{0, "SUBSCRIBE ch", [2]int{1, 0}},
		{1, "PUBLISH ch hello", [2]int{1, 1}},
		{0, "PING", [2]int{0, 0}},
		{0, "UNSUBSCRIBE ch", [2]int{1, 0}},
		{0, "CLIENT REPLY ON", [2]int{1, 0}},
	}
	diffLists(t, "reply", runScript(t, redisAddr, steps), runScript(t, ours, steps))
}
