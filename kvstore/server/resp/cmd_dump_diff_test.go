//go:build unix

package resp_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc64"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// dumpStrings are values that take each of the RDB string encodings: the
// integers (8, 16, 32 bits), plain bytes, and (from Redis) LZF.
func dumpStrings() []string {
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 1000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	return []string{"", "0", "-1", "127", "-128", "128", "-32769", "2147483647", "-2147483648", "2147483648",
		"12345678901", "007", "+1", "abc", "bin\x00\xff", strings.Repeat("a", 100), strings.Repeat("xyz", 30000),
		string(random)}
}

func TestRedisDiff_DumpPayloadsRestoreOnBothServers(t *testing.T) {
	p := newPair(t, resp.Options{})
	ctx := context.Background()
	for _, v := range dumpStrings() {
		if err := p.redis.Set(ctx, "k", v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := p.ours.Set(ctx, "k", v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		theirs, err := p.redis.Dump(ctx, "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		ours, err := p.ours.Dump(ctx, "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		// Redis compresses only values over 20 bytes: shorter ones are
		// byte for byte the same.
		if len(v) <= 20 && ours != theirs {
			t.Errorf("DUMP of %q: ours %q, redis %q", v, ours, theirs)
		}
		for _, r := range []struct {
			name    string
			payload string
		}{{"redis's", theirs}, {"our", ours}} {
			for _, srv := range []struct {
				name string
				c    *redis.Client
			}{{"redis", p.redis}, {"ours", p.ours}} {
				if err := srv.c.Restore(ctx, "r", 0, r.payload).Err(); err != nil {
					t.Errorf("%s: RESTORE of %s DUMP of %.20q: %v", srv.name, r.name, v, err)
					continue
				}
				if got, err := srv.c.Get(ctx, "r").Result(); err != nil || got != v {
					t.Errorf("%s: GET after RESTORE of %s DUMP of %.20q = %.20q, %v", srv.name, r.name, v, got, err)
				}
				srv.c.Del(ctx, "r")
			}
		}
	}
}

func TestRedisDiff_RestoreOptionsAndErrors(t *testing.T) {
	p := newPair(t, resp.Options{})
	ctx := context.Background()
	p.redis.Set(ctx, "src", "hello", 0)
	payload := p.redis.Dump(ctx, "src").Val()
	corrupt := []byte(payload)
	corrupt[len(corrupt)-1] ^= 1
	newer := []byte(payload)
	newer[len(newer)-10] = 11 // RDB version 11, checksum not updated
	body := []byte(payload[:len(payload)-10])
	p.redis.HSet(ctx, "h", "f", "v")
	hashPayload := p.redis.Dump(ctx, "h").Val()
	p.same(
		cmd("restore", "k", "0", payload), cmd("get", "k"), cmd("ttl", "k"),
		cmd("restore", "k", "0", payload), cmd("restore", "k", "0", "garbage"), cmd("restore", "k", "x", payload),
		cmd("restore", "k", "0", payload, "replace"), cmd("restore", "k", "-1", payload, "replace"),
		cmd("restore", "k", "x", payload, "replace"),
		cmd("restore", "k", "100000", payload, "replace"), cmd("ttl", "k"),
		cmd("restore", "k", "1", payload, "replace", "absttl"), cmd("exists", "k"),
		cmd("restore", "k", "0", payload, "replace", "absttl"), cmd("ttl", "k"),
		cmd("restore", "n", "0", "short"), cmd("restore", "n", "0", string(corrupt)), cmd("restore", "n", "0", string(newer)),
		cmd("restore", "n", "0", string(body)), cmd("exists", "n"),
		cmd("restore", "n", "0", payload, "idletime", "10"), cmd("restore", "n", "0", payload, "replace", "freq", "5"),
		cmd("restore", "n", "0", payload, "idletime", "-1"), cmd("restore", "n", "0", payload, "freq", "256"),
		cmd("restore", "n", "0", payload, "idletime", "x"), cmd("restore", "n", "0", payload, "idletime", "1", "freq", "1"),
		cmd("restore", "n", "0", payload, "replace", "bogus"), cmd("restore", "n", "0", payload, "idletime"),
		cmd("restore", "n", "0"), cmd("dump", "nosuch"),
		cmd("lpush", "l", "x"), cmd("restore", "l", "0", payload), cmd("restore", "l", "0", payload, "replace"), cmd("type", "l"),
		cmd("command", "getkeysandflags", "restore", "k", "0", "x"), cmd("command", "getkeysandflags", "dump", "k"),
	)
	// Redis's packed encodings (here a small hash's listpack) are refused.
	if got := reply(p.ours, "restore", "h2", "0", hashPayload); !strings.HasPrefix(got, "error: ERR RESTORE reads strings and the plain RDB encodings") {
		t.Errorf("RESTORE of a listpack hash: %s; want the encoding error", got)
	}
	// A payload whose length claims more bytes than it holds is refused.
	bad := dumpWithBody([]byte{0, 0x80, 0x7f, 0xff, 0xff, 0xff, 'x'})
	if got := reply(p.ours, "restore", "b", "0", bad); got != "error: ERR Bad data format" {
		t.Errorf("RESTORE of a lying length = %s", got)
	}
	if got := reply(p.redis, "restore", "b", "0", bad); got != "error: ERR Bad data format" {
		t.Errorf("redis: RESTORE of a lying length = %s", got)
	}
}

// dumpWithBody frames an RDB object as a DUMP payload: version 10 and
// Redis's CRC64 (Jones polynomial, no inversions).
func dumpWithBody(body []byte) string {
	out := append(bytes.Clone(body), 10, 0)
	crc := ^crc64.Update(^uint64(0), crc64.MakeTable(0x95ac9329ac4bc9b5), out)
	for i := range 8 {
		out = append(out, byte(crc>>(8*i)))
	}
	return string(out)
}

// sortedReply is a collection's contents as text, sorted where its order is
// the server's own (hash fields, set members).
func sortedReply(c *redis.Client, args ...any) string {
	r, err := c.Do(context.Background(), args...).Result()
	if err != nil {
		return "error: " + err.Error()
	}
	v := flatStrings(r)
	if args[0] == "hgetall" { // keep each field with its value
		pairs := make([]string, 0, len(v)/2)
		for i := 0; i+1 < len(v); i += 2 {
			pairs = append(pairs, v[i]+"="+v[i+1])
		}
		v = pairs
	}
	if args[0] != "lrange" && args[0] != "zrange" {
		slices.Sort(v)
	}
	return strings.Join(v, ",")
}

func TestRedisDiff_DumpOfCollectionsRestoresOnBothServers(t *testing.T) {
	p := newPair(t, resp.Options{})
	ctx := context.Background()
	// Redis writes its plain encodings only for collections too big to pack.
	for _, kv := range [][2]string{{"hash-max-listpack-entries", "0"}, {"set-max-intset-entries", "0"},
		{"zset-max-listpack-entries", "0"}} {
		if err := p.redis.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("v", 300)
	fill := func(c *redis.Client) {
		c.HSet(ctx, "h", "f1", "1", "f2", long, "f3", "")
		c.RPush(ctx, "l", "a", "1", long, "a")
		c.SAdd(ctx, "s", "x", "7", long)
		c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "m1"}, redis.Z{Score: -3, Member: long}, redis.Z{Score: 1e300, Member: "5"})
	}
	fill(p.redis)
	fill(p.ours)
	reads := [][]any{{"hgetall", "r"}, {"lrange", "r", "0", "-1"}, {"smembers", "r"}, {"zrange", "r", "0", "-1", "withscores"}}
	for i, key := range []string{"h", "l", "s", "z"} {
		want := sortedReply(p.redis, append([]any{reads[i][0], key}, reads[i][2:]...)...)
		ours := p.ours.Dump(ctx, key).Val()
		payloads := map[string]string{"our": ours}
		if key != "l" { // Redis 7.0 writes lists as quicklists only
			payloads["redis's"] = p.redis.Dump(ctx, key).Val()
		}
		for from, payload := range payloads {
			for name, c := range map[string]*redis.Client{"redis": p.redis, "ours": p.ours} {
				if err := c.Restore(ctx, "r", 0, payload).Err(); err != nil {
					t.Errorf("%s: RESTORE of %s DUMP of %s: %v", name, from, key, err)
					continue
				}
				if got := sortedReply(c, reads[i]...); got != want {
					t.Errorf("%s: %s after RESTORE of %s DUMP of %s = %.80s, want %.80s", name, reads[i][0], from, key, got, want)
				}
				if got := c.Type(ctx, "r").Val(); got != c.Type(ctx, key).Val() {
					t.Errorf("%s: TYPE after RESTORE of %s DUMP of %s = %s", name, from, key, got)
				}
				c.Del(ctx, "r")
			}
		}
	}
	// A restored collection keeps its TTL.
	if err := p.ours.Restore(ctx, "r", 100*time.Second, p.ours.Dump(ctx, "s").Val()).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl := p.ours.TTL(ctx, "r").Val(); ttl < 90*time.Second || ttl > 100*time.Second {
		t.Errorf("TTL after RESTORE with 100 s = %v", ttl)
	}
}

func TestRestore_OfAListWakesAClientBlockedOnTheKey(t *testing.T) {
	ctx := context.Background()
	addr := start(t, servertest.OpenDB(t), resp.Options{})
	admin, blocked := goRedis(t, addr), goRedis(t, addr)
	admin.RPush(ctx, "src", "a", "b")
	payload := admin.Dump(ctx, "src").Val()
	got := make(chan []string, 1)
	go func() {
		v, _ := blocked.BLPop(ctx, 5*time.Second, "q").Result()
		got <- v
	}()
	waitBlocked(t, admin, 1, "blpop")
	t0 := time.Now()
	if err := admin.Restore(ctx, "q", 0, payload).Err(); err != nil {
		t.Fatal(err)
	}
	if v := <-got; !slices.Equal(v, []string{"q", "a"}) {
		t.Errorf("BLPOP after RESTORE = %v; want [q a]", v)
	}
	if d := time.Since(t0); d > 2*time.Second { // BLPOP's own timeout is 5 s
		t.Errorf("BLPOP answered %v after RESTORE; want at once", d)
	}
}

// flatStrings is a reply as one flat list of strings, whatever the
// protocol: RESP3's nested pairs flattened, a map as its keys and values
// (in key order), a double in Redis's text.
func flatStrings(v any) []string {
	switch x := v.(type) {
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, flatStrings(e)...)
		}
		return out
	case map[any]any:
		keys := make([]string, 0, len(x))
		byKey := map[string]any{}
		for k, e := range x {
			keys = append(keys, fmt.Sprint(k))
			byKey[fmt.Sprint(k)] = e
		}
		slices.Sort(keys)
		var out []string
		for _, k := range keys {
			out = append(out, k)
			out = append(out, flatStrings(byKey[k])...)
		}
		return out
	case float64:
		return []string{strconv.FormatFloat(x, 'g', 17, 64)}
	}
	return []string{fmt.Sprint(v)}
}
