//go:build unix

package resp_test

// RESP3 (HELLO 3), judged by a real redis-server: the same commands go to
// both over raw sockets and each reply must be the same bytes, and every
// differential test of the package runs again with both go-redis clients
// speaking RESP3 (go-redis v9's default).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// readRESP reads one whole reply, of either protocol, and returns its bytes.
func readRESP(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return line, err
	}
	if len(line) < 3 {
		return line, fmt.Errorf("short line %q", line)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	out := line
	read := func(k int) error {
		for range k {
			s, err := readRESP(r)
			out += s
			if err != nil {
				return err
			}
		}
		return nil
	}
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return out, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return out, err
		}
		return out + string(b), nil
	case '*', '~', '>':
		if n < 0 {
			return out, nil
		}
		return out, read(n)
	case '%':
		return out, read(2 * n)
	case '|': // an attribute, then the reply it describes
		if err := read(2 * n); err != nil {
			return out, err
		}
		return out, read(1)
	}
	return out, nil
}

// rawPeer is a raw connection to one server.
type rawPeer struct {
	name string
	c    *raw
}

// sameBytes sends each command (a RESP array of its words) to both servers
// and fails where the replies' bytes differ.
func sameBytes(t *testing.T, peers [2]rawPeer, cmds ...[]string) {
	t.Helper()
	for _, words := range cmds {
		var req strings.Builder
		fmt.Fprintf(&req, "*%d\r\n", len(words))
		for _, w := range words {
			fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(w), w)
		}
		var got [2]string
		for i, p := range peers {
			p.c.send(req.String())
			r, err := readRESP(p.c.r)
			if err != nil {
				t.Fatalf("%s: %v: %v (read %q)", p.name, words, err, r)
			}
			got[i] = r
		}
		if got[0] != got[1] {
			t.Errorf("%q:\n redis: %q\n ours:  %q", words, got[0], got[1])
		}
	}
}

func words(s ...string) []string { return s }

// Every reply type RESP3 has, written by the commands that write them,
// byte for byte as redis-server 7.0 writes them: null, map, set, double
// (inf too), boolean, verbatim and big number (from scripts), nested
// pairs (WITHSCORES, WITHVALUES, ZPOP with COUNT) and the flat pair of
// ZPOP without it; and a script's conversions both ways under
// redis.setresp(3). HELLO 2 then brings RESP2's shapes back.
func TestRESP3_RepliesByteForByteAsRedis(t *testing.T) {
	redisAddr := startRedis(t)
	peers := [2]rawPeer{{"redis", dialRaw(t, redisAddr)}, {"ours", dialRaw(t, start(t, servertest.OpenDB(t), resp.Options{}))}}
	for _, p := range peers {
		p.c.send("HELLO 3\r\n")
		if r, err := readRESP(p.c.r); err != nil || !strings.HasPrefix(r, "%7\r\n") {
			t.Fatalf("%s: HELLO 3 = %q, %v", p.name, r, err)
		}
	}
	setup := [][]string{
		words("HSET", "h", "a", "1", "b", "2"), words("HSET", "h1", "only", "v"),
		words("ZADD", "z", "1.5", "a", "2", "b", "3", "c", "4", "d"), words("ZADD", "z1", "7", "m"),
		words("ZADD", "zinf", "inf", "top", "-inf", "bottom", "0.1", "tenth"),
		words("SADD", "s", "x"), words("SADD", "ints", "1"),
		words("RPUSH", "l", "a", "b"), words("SET", "k1", "ohmytext"), words("SET", "k2", "mynewtext"),
	}
	sameBytes(t, peers, setup...)
	sameBytes(t, peers,
		// null and aggregate types
		words("GET", "nosuch"), words("HGET", "h", "nosuch"), words("HMGET", "h", "a", "nosuch"),
		words("HGETALL", "h"), words("HGETALL", "nosuch"), words("HRANDFIELD", "h1", "1", "WITHVALUES"),
		words("HRANDFIELD", "h1", "-2", "WITHVALUES"), words("HRANDFIELD", "h1", "1"), words("HRANDFIELD", "nosuch"),
		words("SMEMBERS", "s"), words("SMEMBERS", "nosuch"), words("SINTER", "s", "s"), words("SUNION", "s", "nosuch"),
		words("SDIFF", "s", "nosuch"), words("SRANDMEMBER", "s", "1"), words("SRANDMEMBER", "nosuch"),
		words("SPOP", "nosuch", "2"), words("SPOP", "ints", "5"), words("SMISMEMBER", "s", "x", "y"),
		words("LPOP", "l", "0"), words("LPOP", "nosuch", "2"), words("LPOP", "nosuch"), words("LRANGE", "l", "0", "-1"),
		// doubles and pairs
		words("ZSCORE", "z", "a"), words("ZSCORE", "z", "nosuch"), words("ZMSCORE", "z", "a", "nosuch", "b"),
		words("ZRANGE", "z", "0", "-1", "WITHSCORES"), words("ZRANGE", "z", "0", "1"),
		words("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES", "LIMIT", "0", "2"),
		words("ZRANGEBYSCORE", "zinf", "-inf", "+inf", "WITHSCORES"), words("ZSCORE", "zinf", "top"),
		words("ZUNION", "2", "z", "z1", "WITHSCORES"), words("ZINTER", "1", "z", "WITHSCORES"), words("ZDIFF", "1", "z1", "WITHSCORES"),
		words("ZRANDMEMBER", "z1", "1", "WITHSCORES"), words("ZRANDMEMBER", "z1", "-2", "WITHSCORES"),
		words("ZINCRBY", "z", "0.25", "a"), words("ZADD", "z", "INCR", "1", "b"), words("ZADD", "z", "XX", "INCR", "1", "nosuch"),
		words("ZPOPMIN", "z"), words("ZPOPMAX", "z", "1"), words("ZPOPMIN", "z", "2"), words("ZPOPMIN", "nosuch"),
		words("ZPOPMIN", "nosuch", "3"), words("ZMPOP", "1", "z1", "MIN"), words("ZMPOP", "1", "nosuch", "MIN"),
		words("BZPOPMIN", "zinf", "0.01"), words("BZPOPMAX", "nosuch", "0.01"), words("BLPOP", "nosuch", "0.01"),
		words("BZMPOP", "0.01", "1", "nosuch", "MAX"),
		// maps from other commands
		words("LCS", "k1", "k2", "IDX"), words("LCS", "k1", "k2", "IDX", "WITHMATCHLEN"),
		words("PUBSUB", "NUMSUB", "c1", "c2"), words("PUBSUB", "SHARDNUMSUB", "c1"),
		words("CONFIG", "GET", "nosuchsetting"),
		// transactions
		words("MULTI"), words("GET", "nosuch"), words("HGETALL", "h"), words("ZSCORE", "zinf", "tenth"), words("EXEC"),
		// scripts: Lua to RESP3, and RESP3 to Lua under redis.setresp(3)
		words("EVAL", "return {double=3.5}", "0"), words("EVAL", "return {double=1/0}", "0"),
		words("EVAL", "return true", "0"), words("EVAL", "return false", "0"), words("EVAL", "return nil", "0"),
		words("EVAL", "redis.setresp(3); return true", "0"), words("EVAL", "redis.setresp(3); return false", "0"),
		words("EVAL", "return {map={a=1}}", "0"), words("EVAL", "return {set={x=true}}", "0"),
		words("EVAL", "return {big_number='1234567890123456789012345'}", "0"),
		words("EVAL", "return {verbatim_string={format='txt', string='hello'}}", "0"),
		words("EVAL", "return {verbatim_string={format='md', string='# hi'}}", "0"),
		words("EVAL", "redis.setresp(3); return redis.call('hgetall', KEYS[1])", "1", "h"),
		words("EVAL", "redis.setresp(2); return redis.call('hgetall', KEYS[1])", "1", "h"),
		words("EVAL", "redis.setresp(3); local m = redis.call('hgetall', KEYS[1]); return m.map.a", "1", "h"),
		words("EVAL", "redis.setresp(3); return redis.call('smembers', KEYS[1])", "1", "s"),
		words("EVAL", "redis.setresp(3); local s = redis.call('smembers', KEYS[1]); return tostring(s.set.x)", "1", "s"),
		words("EVAL", "redis.setresp(3); return redis.call('zscore', KEYS[1], 'tenth')", "1", "zinf"),
		words("EVAL", "redis.setresp(3); return redis.call('zscore', KEYS[1], 'tenth').double * 10", "1", "zinf"),
		words("EVAL", "redis.setresp(3); return redis.call('get', 'nosuch') == nil", "0"),
		words("EVAL", "redis.setresp(2); return redis.call('get', 'nosuch') == false", "0"),
		words("EVAL", "redis.setresp(3); return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", "1", "zinf"),
		words("EVAL", "return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", "1", "zinf"),
	)
	for _, p := range peers { // its description names each server's version: not compared
		p.c.send("HELLO 2\r\n")
		if r, err := readRESP(p.c.r); err != nil || !strings.HasPrefix(r, "*14\r\n") {
			t.Fatalf("%s: HELLO 2 = %q, %v", p.name, r, err)
		}
	}
	sameBytes(t, peers,
		words("GET", "nosuch"), words("HGETALL", "h"),
		words("ZRANGE", "zinf", "0", "-1", "WITHSCORES"), words("ZSCORE", "zinf", "top"), words("EVAL", "return {double=3.5}", "0"),
	)
}

// A RESP3 subscriber gets its confirmations and messages as pushes, and
// runs any command between them (RESP2 allows only the subscribe family):
// what a client that caches with invalidation messages, or multiplexes
// commands and messages on one connection, depends on.
func TestRESP3_SubscriberGetsPushesAndRunsCommands(t *testing.T) {
	redisAddr := startRedis(t)
	ourAddr := start(t, servertest.OpenDB(t), resp.Options{})
	peers := [2]rawPeer{{"redis", dialRaw(t, redisAddr)}, {"ours", dialRaw(t, ourAddr)}}
	pubs := [2]rawPeer{{"redis", dialRaw(t, redisAddr)}, {"ours", dialRaw(t, ourAddr)}}
	for _, p := range peers {
		p.c.send("HELLO 3\r\n")
		if _, err := readRESP(p.c.r); err != nil {
			t.Fatal(err)
		}
	}
	sameBytes(t, peers, words("SUBSCRIBE", "news", "sports"))
	// SUBSCRIBE of two channels: one push each (the first was read above).
	for _, p := range peers {
		if r, err := readRESP(p.c.r); err != nil {
			t.Fatal(err)
		} else if r != ">3\r\n$9\r\nsubscribe\r\n$6\r\nsports\r\n:2\r\n" {
			t.Errorf("%s: second confirmation %q", p.name, r)
		}
	}
	sameBytes(t, peers, words("SET", "k", "v"), words("GET", "k"), words("PING"), words("GET", "nosuch"), words("PSUBSCRIBE", "n*"))
	sameBytes(t, pubs, words("PUBLISH", "news", "hello"))
	var got [2][]string
	for i, p := range peers {
		for range 2 { // the message and its pattern's
			r, err := readRESP(p.c.r)
			if err != nil {
				t.Fatal(err)
			}
			got[i] = append(got[i], r)
		}
	}
	if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) || !strings.HasPrefix(got[1][0], ">3\r\n$7\r\nmessage\r\n") {
		t.Errorf("published message:\n redis: %q\n ours:  %q", got[0], got[1])
	}
	// (Named: UNSUBSCRIBE of all goes in Redis's dict order, unspecified.)
	sameBytes(t, peers, words("UNSUBSCRIBE", "news", "sports"))
	for _, p := range peers { // the second channel's push
		if r, err := readRESP(p.c.r); err != nil {
			t.Fatal(err)
		} else if r != ">3\r\n$11\r\nunsubscribe\r\n$6\r\nsports\r\n:1\r\n" {
			t.Errorf("%s: second unsubscribe push %q", p.name, r)
		}
	}
	sameBytes(t, peers, words("PUNSUBSCRIBE"), words("UNSUBSCRIBE"), words("PING"))
}

// go-redis v9 with its default protocol (RESP3) reads maps, doubles, sets
// and nested pairs into its typed results.
func TestRESP3_GoRedisDefaultProtocolTypedResults(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: start(t, servertest.OpenDB(t), resp.Options{}), MaxRetries: -1})
	defer c.Close()
	ctx := t.Context()
	if v, err := c.Do(ctx, "HELLO").Result(); err != nil || fmt.Sprint(v.(map[any]any)["proto"]) != "3" {
		t.Fatalf("HELLO = %v, %v; want proto 3", v, err)
	}
	c.HSet(ctx, "h", "a", "1", "b", "2")
	c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: 2, Member: "b"})
	c.SAdd(ctx, "s", "x", "y")
	if m, err := c.HGetAll(ctx, "h").Result(); err != nil || fmt.Sprint(m) != "map[a:1 b:2]" {
		t.Errorf("HGETALL = %v, %v", m, err)
	}
	if zs, err := c.ZRangeWithScores(ctx, "z", 0, -1).Result(); err != nil || fmt.Sprint(zs) != "[{1.5 a} {2 b}]" {
		t.Errorf("ZRANGE WITHSCORES = %v, %v", zs, err)
	}
	if f, err := c.ZScore(ctx, "z", "a").Result(); err != nil || f != 1.5 {
		t.Errorf("ZSCORE = %v, %v", f, err)
	}
	if f, err := c.ZIncrBy(ctx, "z", 0.5, "a").Result(); err != nil || f != 2 {
		t.Errorf("ZINCRBY = %v, %v", f, err)
	}
	if ms, err := c.SMembers(ctx, "s").Result(); err != nil || len(ms) != 2 {
		t.Errorf("SMEMBERS = %v, %v", ms, err)
	}
	if zs, err := c.ZPopMin(ctx, "z", 2).Result(); err != nil || fmt.Sprint(zs) != "[{2 a} {2 b}]" {
		t.Errorf("ZPOPMIN 2 = %v, %v", zs, err)
	}
	if kv, err := c.HRandFieldWithValues(ctx, "h", 2).Result(); err != nil || len(kv) != 2 {
		t.Errorf("HRANDFIELD WITHVALUES = %v, %v", kv, err)
	}
	if _, err := c.Get(ctx, "nosuch").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET of a missing key: %v, want redis.Nil", err)
	}
	if cfg, err := c.ConfigGet(ctx, "maxclients").Result(); err != nil || cfg["maxclients"] == "" {
		t.Errorf("CONFIG GET = %v, %v", cfg, err)
	}
	if info, err := c.Info(ctx, "server").Result(); err != nil || !strings.Contains(info, "# Server") {
		t.Errorf("INFO = %.40q, %v", info, err)
	}
	ps := c.Subscribe(ctx, "ch")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Publish(ctx, "ch", "hi").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH = %d, %v", n, err)
	}
	if msg, err := ps.ReceiveMessage(ctx); err != nil || msg.Payload != "hi" {
		t.Errorf("message = %v, %v", msg, err)
	}
}

// TestRedisDiff_EveryDiffUnderRESP3 runs the package's differential tests
// again with both clients speaking RESP3.
func TestRedisDiff_EveryDiffUnderRESP3(t *testing.T) {
	diffProto = 3
	defer func() { diffProto = 2 }()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"BigCollectionsAcrossTheThresholdBothWays", TestRedisDiff_BigCollectionsAcrossTheThresholdBothWays},
		{"SortedSetRangesByBoundOnBigAndSmallSets", TestRedisDiff_SortedSetRangesByBoundOnBigAndSmallSets},
		{"RandomPicksOnBigAndSmallCollections", TestRedisDiff_RandomPicksOnBigAndSmallCollections},
		{"ScansOfBigCollectionsPageAndReturnEveryLastingMember", TestRedisDiff_ScansOfBigCollectionsPageAndReturnEveryLastingMember},
		{"RenameAndCopyOfBigCollections", TestRedisDiff_RenameAndCopyOfBigCollections},
		{"FarFutureAndOverflowingExpiries", TestRedisDiff_FarFutureAndOverflowingExpiries},
		{"TransactionsCommandAndErrorTexts", TestRedisDiff_TransactionsCommandAndErrorTexts},
		{"StringAndKeyspaceCommands", TestRedisDiff_StringAndKeyspaceCommands},
		{"FunctionFlushAndListWithNoFunctions", TestRedisDiff_FunctionFlushAndListWithNoFunctions},
		{"ObjectOfStrings", TestRedisDiff_ObjectOfStrings},
		{"CommandGetKeys", TestRedisDiff_CommandGetKeys},
		{"Hashes", TestRedisDiff_Hashes},
		{"Lists", TestRedisDiff_Lists},
		{"Sets", TestRedisDiff_Sets},
		{"SortedSets", TestRedisDiff_SortedSets},
		{"StringWritesOverACollectionKey", TestRedisDiff_StringWritesOverACollectionKey},
		{"BitOpCombinesPadsAndOverwrites", TestRedisDiff_BitOpCombinesPadsAndOverwrites},
		{"LCSStringLenAndMatches", TestRedisDiff_LCSStringLenAndMatches},
		{"BitFieldOperationsAndErrors", TestRedisDiff_BitFieldOperationsAndErrors},
		{"DumpOfCollectionsRestoresOnBothServers", TestRedisDiff_DumpOfCollectionsRestoresOnBothServers},
		{"CommandGetKeysAndFlagsReportsRedisKeySpecFlags", TestRedisDiff_CommandGetKeysAndFlagsReportsRedisKeySpecFlags},
		{"SortMatchesRedis", TestRedisDiff_SortMatchesRedis},
		{"KeyspaceNotificationsMatchRedis", TestRedisDiff_KeyspaceNotificationsMatchRedis},
		{"ExpiredEventsAndNotifyConfig", TestRedisDiff_ExpiredEventsAndNotifyConfig},
		{"ClientReplyMatchesRedis", TestRedisDiff_ClientReplyMatchesRedis},
		{"PubSubRepliesAndMessagesMatchRedis", TestRedisDiff_PubSubRepliesAndMessagesMatchRedis},
		{"ScriptConversionsErrorsAndSandbox", TestRedisDiff_ScriptConversionsErrorsAndSandbox},
		{"FunctionsLoadCallListDelete", TestRedisDiff_FunctionsLoadCallListDelete},
	} {
		t.Run(tc.name, tc.fn)
	}
}

// RESET puts a connection back as a new one is, as Redis 7.0 does: out of
// MULTI (its queue dropped) and WATCH, unsubscribed without confirmations,
// on RESP2 again, nameless, CLIENT REPLY ON, and logged out under
// requirepass; it runs in MULTI, in RESP2's subscribed mode and before
// AUTH. Connection pools reset a connection before they hand it out again.
func TestRedisDiff_ResetClearsConnectionStateAsRedis(t *testing.T) {
	redisAddr := startRedis(t, "--requirepass", "pw")
	ourAddr := start(t, servertest.OpenDB(t), resp.Options{Password: "pw"})
	peers := [2]rawPeer{{"redis", dialRaw(t, redisAddr)}, {"ours", dialRaw(t, ourAddr)}}
	sameBytes(t, peers,
		words("RESET"), words("GET", "k"), words("AUTH", "pw"), words("CLIENT", "SETNAME", "pooled"),
		words("WATCH", "k"), words("MULTI"), words("SET", "k", "queued"), words("RESET"),
		words("AUTH", "pw"), words("EXEC"), words("GET", "k"), words("CLIENT", "GETNAME"),
	)
	for _, p := range peers { // no reply to it: RESET's is the next
		p.c.send("CLIENT REPLY OFF\r\nGET k\r\n")
	}
	sameBytes(t, peers, words("RESET"), words("AUTH", "pw"), words("PING"),
		words("SUBSCRIBE", "ch"), words("GET", "k"), words("RESET"), words("AUTH", "pw"), words("GET", "k"),
		words("PUBLISH", "ch", "after the reset"), words("PING"))
	for _, p := range peers {
		p.c.send("HELLO 3 AUTH default pw\r\n")
		if r, err := readRESP(p.c.r); err != nil || !strings.HasPrefix(r, "%7\r\n") {
			t.Fatalf("%s: HELLO 3 = %q, %v", p.name, r, err)
		}
	}
	sameBytes(t, peers, words("SUBSCRIBE", "ch"), words("GET", "nosuch"), words("RESET"), words("AUTH", "pw"),
		words("GET", "nosuch"), words("HSET", "h", "f", "v"), words("HGETALL", "h"))
}
