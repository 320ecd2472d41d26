package resp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

func TestCommandTable_EveryListedCommandIsServedAndDocumented(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	names, err := c.Do(ctx, "COMMAND", "LIST").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	count, err := c.Do(ctx, "COMMAND", "COUNT").Int()
	if err != nil || count != len(names) || count < 30 {
		t.Fatalf("COMMAND COUNT = %d, %v; LIST has %d", count, err, len(names))
	}
	// A map of name to doc (go-redis speaks RESP3 by default).
	docs, err := c.Do(ctx, "COMMAND", "DOCS").Result()
	if m, ok := docs.(map[any]any); err != nil || !ok || len(m) != count {
		t.Fatalf("COMMAND DOCS: %T of %v entries, %v", docs, docs, err)
	}
	info, err := c.Command(ctx).Result()
	if err != nil || len(info) != count {
		t.Fatalf("COMMAND: %d, %v", len(info), err)
	}
	if g := info["get"]; g == nil || g.Arity != 2 || !slices.Contains(g.Flags, "readonly") || g.FirstKeyPos != 1 {
		t.Fatalf("COMMAND INFO get = %+v", g)
	}
	for _, name := range names {
		// A wrong number of arguments proves the name was dispatched: an
		// unknown command would say so instead.
		args := []any{name}
		for range 40 {
			args = append(args, "x")
		}
		err := c.Do(ctx, args...).Err()
		if err != nil && strings.Contains(err.Error(), "unknown command") {
			t.Errorf("%s is listed by COMMAND but not served: %v", name, err)
		}
	}
	if err := c.Do(ctx, "MULTI").Err(); err != nil { // leave no transaction open from the loop
		t.Fatal(err)
	}
	c.Do(ctx, "DISCARD")
}

func TestCommandTable_DocsListEveryCommand(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/kvstore-server.md")
	if err != nil {
		t.Fatal(err)
	}
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	names, err := c.Do(context.Background(), "COMMAND", "LIST").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if !strings.Contains(string(doc), "`"+strings.ToUpper(name)) {
			t.Errorf("docs/kvstore-server.md does not list %s", strings.ToUpper(name))
		}
	}
}

func TestTxPipelined_IsQueuedAndAppliedAtomically(t *testing.T) {
	db := servertest.OpenDB(t)
	c := goRedis(t, start(t, db, resp.Options{}))
	ctx := context.Background()
	db.Set([]byte("n"), []byte("41"))
	var incr *redis.IntCmd
	var get *redis.StringCmd
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		incr = p.Incr(ctx, "n")
		p.Del(ctx, "missing", "a")
		get = p.Get(ctx, "n")
		p.MSet(ctx, "b", "2", "c", "3")
		return nil
	})
	if err != nil {
		t.Fatalf("TxPipelined: %v (%v)", err, cmds)
	}
	if incr.Val() != 42 || get.Val() != "42" {
		t.Fatalf("INCR = %d, GET = %q inside the transaction", incr.Val(), get.Val())
	}
	if _, err := db.Get([]byte("a")); !errors.Is(err, kvstore.ErrNotFound) {
		t.Fatalf("a after SET then DEL in one transaction: %v", err)
	}
	if v, _ := db.Get([]byte("c")); string(v) != "3" {
		t.Fatalf("c = %q", v)
	}
}

func TestMultiExec_RedisErrorRules(t *testing.T) {
	db := servertest.OpenDB(t)
	r := dialRaw(t, start(t, db, resp.Options{}))
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			if got := r.line(); got != w+"\r\n" {
				t.Fatalf("got %q, want %q", got, w)
			}
		}
	}
	// A syntax error at queue time discards the whole transaction.
	r.send("MULTI\r\nSET a 1\r\nGET\r\nNOSUCH x\r\nEXEC\r\n")
	expect("+OK", "+QUEUED", "-ERR wrong number of arguments for 'get' command",
		"-ERR unknown command 'NOSUCH', with args beginning with: 'x' ",
		"-EXECABORT Transaction discarded because of previous errors.")
	if _, err := db.Get([]byte("a")); !errors.Is(err, kvstore.ErrNotFound) {
		t.Fatalf("an aborted transaction wrote: %v", err)
	}
	// A runtime error answers inside EXEC's reply; the other commands run.
	db.Set([]byte("s"), []byte("text"))
	r.send("MULTI\r\nSET a 1\r\nINCR s\r\nINCR a\r\nEXEC\r\n")
	expect("+OK", "+QUEUED", "+QUEUED", "+QUEUED", "*3", "+OK", "-ERR value is not an integer or out of range", ":2")
	if v, _ := db.Get([]byte("a")); string(v) != "2" {
		t.Fatalf("a = %q after EXEC", v)
	}
	// DISCARD drops the queue; EXEC, DISCARD without MULTI and nested MULTI are errors.
	r.send("MULTI\r\nSET d 1\r\nDISCARD\r\nEXEC\r\nDISCARD\r\nMULTI\r\nMULTI\r\nEXEC\r\n")
	expect("+OK", "+QUEUED", "+OK", "-ERR EXEC without MULTI", "-ERR DISCARD without MULTI",
		"+OK", "-ERR MULTI calls can not be nested", "*0")
	if _, err := db.Get([]byte("d")); !errors.Is(err, kvstore.ErrNotFound) {
		t.Fatalf("a discarded SET was applied: %v", err)
	}
	// Only Redis's no-multi commands (SAVE) are refused at queue time, with
	// Redis's text; the others are queued, and one that runs outside the
	// atomic update (KEYS) sees the writes queued before it.
	r.send("MULTI\r\nSAVE\r\nEXEC\r\n")
	expect("+OK", "-ERR Command not allowed inside a transaction", "-EXECABORT Transaction discarded because of previous errors.")
	r.send("MULTI\r\nSET kx 1\r\nKEYS kx\r\nDBSIZE\r\nSET ky 2\r\nEXEC\r\n")
	expect("+OK", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED", "*4", "+OK", "*1", "$2", "kx", ":3", "+OK")
	if v, _ := db.Get([]byte("ky")); string(v) != "2" {
		t.Fatalf("ky = %q after EXEC", v)
	}
}

func TestMultiExec_IsOneBatchWithOneFsync(t *testing.T) {
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncAlways})
	c := goRedis(t, start(t, db, resp.Options{}))
	ctx := context.Background()
	before := db.Stats()
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 50 {
			p.Set(ctx, fmt.Sprint("k", i), "v", 0)
			p.Incr(ctx, "counter")
		}
		p.Del(ctx, "k0", "k1")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	after := db.Stats()
	if n := after.Fsyncs - before.Fsyncs; n != 1 {
		t.Fatalf("%d fsyncs for one EXEC, want 1", n)
	}
	if n := after.Batches - before.Batches; n != 1 {
		t.Fatalf("%d commit batches for one EXEC, want 1", n)
	}
	if v, _ := db.Get([]byte("counter")); string(v) != "50" {
		t.Fatalf("counter = %q", v)
	}
}

func TestCounters_ExactUnderFiftyConcurrentClients(t *testing.T) {
	db := servertest.OpenDB(t)
	addr := start(t, db, resp.Options{})
	const clients, each = 50, 40
	var wg sync.WaitGroup
	var setnxWins, appendLen sync.Map
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: addr})
			defer c.Close()
			ctx := context.Background()
			for j := range each {
				for _, err := range []error{
					c.Incr(ctx, "incr").Err(),
					c.IncrBy(ctx, "incrby", 3).Err(),
					c.Decr(ctx, "decr").Err(),
					c.DecrBy(ctx, "decrby", 2).Err(),
					c.IncrByFloat(ctx, "float", 0.5).Err(),
				} {
					if err != nil {
						t.Error(err)
						return
					}
				}
				if ok, err := c.SetNX(ctx, fmt.Sprint("once:", j), i, 0).Result(); err != nil {
					t.Error(err)
				} else if ok {
					setnxWins.Store(j, i)
				}
				n, err := c.Append(ctx, "log", "x").Result()
				if err != nil {
					t.Error(err)
				}
				appendLen.Store(n, true)
			}
		}()
	}
	wg.Wait()
	c := goRedis(t, addr)
	ctx := context.Background()
	total := int64(clients * each)
	for key, want := range map[string]string{
		"incr": strconv.FormatInt(total, 10), "incrby": strconv.FormatInt(3*total, 10),
		"decr": strconv.FormatInt(-total, 10), "decrby": strconv.FormatInt(-2*total, 10),
		"float": strconv.FormatInt(total/2, 10),
	} {
		if got, err := c.Get(ctx, key).Result(); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %s", key, got, err, want)
		}
	}
	if n, _ := c.StrLen(ctx, "log").Result(); n != total {
		t.Errorf("APPEND by %d clients made %d bytes, want %d", clients, n, total)
	}
	// Every APPEND saw a distinct length: no two read the same value.
	distinct := 0
	appendLen.Range(func(_, _ any) bool { distinct++; return true })
	if distinct != int(total) {
		t.Errorf("%d distinct APPEND results, want %d", distinct, total)
	}
	for j := range each {
		winner, ok := setnxWins.Load(j)
		v, err := c.Get(ctx, fmt.Sprint("once:", j)).Result()
		if !ok || err != nil || v != fmt.Sprint(winner) {
			t.Errorf("once:%d = %q (%v), SETNX winner %v", j, v, err, winner)
		}
	}
}

func TestDel_ConcurrentDeletesCountEachKeyOnce(t *testing.T) {
	// Under SyncAlways a delete waits for its fsync: the window in which a
	// check-then-delete would count a key twice is wide open.
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncAlways})
	addr := start(t, db, resp.Options{})
	const keys = 500
	for i := range keys {
		db.Set(fmt.Appendf(nil, "k%d", i), []byte("v"))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// No retries: a DEL retried after its reply timed out
			// would count 0 for the key it deleted.
			c := patientClient(t, addr)
			for i := range keys {
				n, err := c.Del(context.Background(), fmt.Sprint("k", i), fmt.Sprint("k", (i+1)%keys)).Result()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total != keys {
		t.Fatalf("4 clients deleting the same %d keys reported %d deletions", keys, total)
	}
}

func TestStringCommands_RedisSemantics(t *testing.T) {
	db := servertest.OpenDB(t)
	c := goRedis(t, start(t, db, resp.Options{}))
	ctx := context.Background()
	check := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
	}
	ok, err := c.SetNX(ctx, "k", "v1", 0).Result()
	check("SET NX on a missing key", ok, true, err)
	ok, err = c.SetNX(ctx, "k", "v2", 0).Result()
	check("SET NX on an existing key", ok, false, err)
	ok, err = c.SetXX(ctx, "nope", "v", 0).Result()
	check("SET XX on a missing key", ok, false, err)
	old, err := c.SetArgs(ctx, "k", "v3", redis.SetArgs{Get: true}).Result()
	check("SET GET", old, "v1", err)
	old, err = c.Do(ctx, "GETSET", "k", "v4").Text()
	check("GETSET", old, "v3", err)
	old, err = c.GetDel(ctx, "k").Result()
	check("GETDEL", old, "v4", err)
	n, err := c.Exists(ctx, "k").Result()
	check("EXISTS after GETDEL", n, 0, err)
	_, err = c.GetDel(ctx, "k").Result()
	check("GETDEL missing is nil", errors.Is(err, redis.Nil), true, nil)
	l, err := c.Append(ctx, "s", "abc").Result()
	check("APPEND to missing", l, 3, err)
	l, err = c.StrLen(ctx, "s").Result()
	check("STRLEN", l, 3, err)
	l, err = c.StrLen(ctx, "missing").Result()
	check("STRLEN missing", l, 0, err)
	typ, err := c.Type(ctx, "s").Result()
	check("TYPE", typ, "string", err)
	typ, err = c.Type(ctx, "missing").Result()
	check("TYPE missing", typ, "none", err)
	check("RENAME", c.Rename(ctx, "s", "t").Val(), "OK", nil)
	if v, _ := db.Get([]byte("t")); string(v) != "abc" || db.Len() != 1 {
		t.Fatalf("after RENAME: t=%q, %d keys", v, db.Len())
	}
	if err := c.Rename(ctx, "nope", "x").Err(); err == nil || err.Error() != "ERR no such key" {
		t.Fatalf("RENAME missing: %v", err)
	}
	for _, tc := range []struct{ value, err string }{
		{"01", "ERR value is not an integer or out of range"},
		{"+1", "ERR value is not an integer or out of range"},
		{" 1", "ERR value is not an integer or out of range"},
		{"9223372036854775807", "ERR increment or decrement would overflow"},
	} {
		db.Set([]byte("i"), []byte(tc.value))
		if err := c.Incr(ctx, "i").Err(); err == nil || err.Error() != tc.err {
			t.Errorf("INCR on %q: %v, want %s", tc.value, err, tc.err)
		}
	}
	db.Set([]byte("f"), []byte("10.5"))
	f, err := c.IncrByFloat(ctx, "f", 0.1).Result()
	check("INCRBYFLOAT", f, 10.6, err)
	if v, _ := db.Get([]byte("f")); string(v) != "10.6" {
		t.Fatalf("INCRBYFLOAT stored %q", v)
	}
	if err := c.SetArgs(ctx, "k", "v", redis.SetArgs{Mode: "NX", Get: false, KeepTTL: true}).Err(); err != nil {
		t.Fatalf("SET NX KEEPTTL: %v", err)
	}
	if err := c.Do(ctx, "SET", "k", "v", "NX", "XX").Err(); err == nil || err.Error() != "ERR syntax error" {
		t.Fatalf("SET NX XX: %v", err)
	}
}

func TestKeysAndFlush(t *testing.T) {
	db := servertest.OpenDB(t)
	ctx := context.Background()
	for _, k := range []string{"user:1", "user:2", "user:10", "order:1", "a*b"} {
		db.Set([]byte(k), []byte("v"))
	}
	c := goRedis(t, start(t, db, resp.Options{}))
	for pattern, want := range map[string][]string{
		"*":         {"a*b", "order:1", "user:1", "user:10", "user:2"},
		"user:?":    {"user:1", "user:2"},
		"user:1*":   {"user:1", "user:10"},
		"*:1":       {"order:1", "user:1"},
		`a\*b`:      {"a*b"},
		"[ou]*:1":   {"order:1", "user:1"},
		"[^u]*":     {"a*b", "order:1"},
		"nothing*":  {},
		"user:[!2]": {"user:2"}, // only ^ negates, as in Redis
	} {
		got, err := c.Keys(ctx, pattern).Result()
		slices.Sort(got)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("KEYS %s = %v, %v; want %v", pattern, got, err, want)
		}
	}
	if err := c.FlushDB(ctx).Err(); err == nil || !strings.Contains(err.Error(), "--allow-flush") {
		t.Fatalf("FLUSHDB without --allow-flush: %v", err)
	}
	if db.Len() != 5 {
		t.Fatalf("a refused FLUSHDB deleted keys: %d left", db.Len())
	}
	c2 := goRedis(t, start(t, db, resp.Options{AllowFlush: true}))
	if err := c2.FlushDB(ctx).Err(); err != nil || db.Len() != 0 {
		t.Fatalf("FLUSHDB: %v, %d keys left", err, db.Len())
	}
}

func TestServerCommands_InfoClientTimeSave(t *testing.T) {
	db := servertest.OpenDB(t)
	c := goRedis(t, start(t, db, resp.Options{}))
	ctx := context.Background()
	db.Set([]byte("k"), []byte("v"))
	info, err := c.Info(ctx).Result()
	for _, want := range []string{"# Server", "# Clients", "# Memory", "used_memory:", "# Persistence", "rdb_last_save_time:",
		"# Stats", "# Replication", "role:master", "# Keyspace", "db0:keys=1,"} {
		if err != nil || !strings.Contains(info, want) {
			t.Fatalf("INFO lacks %q (%v):\n%s", want, err, info)
		}
	}
	if mem, _ := c.Info(ctx, "memory").Result(); strings.Contains(mem, "# Server") || !strings.Contains(mem, "# Memory") {
		t.Fatalf("INFO memory:\n%s", mem)
	}
	c.Do(ctx, "CLIENT", "SETNAME", "lister")
	other := goRedis(t, c.Options().Addr)
	other.Ping(ctx)
	list, err := c.ClientList(ctx).Result()
	if err != nil || strings.Count(list, "\n") < 2 || !strings.Contains(list, "name=lister") || !strings.Contains(list, "cmd=client") {
		t.Fatalf("CLIENT LIST = %q, %v", list, err)
	}
	now, err := c.Time(ctx).Result()
	if err != nil || time.Since(now).Abs() > 5*time.Second {
		t.Fatalf("TIME = %v, %v", now, err)
	}
	before, err := c.LastSave(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.LastSnapshot.IsZero() || st.SnapshotSeq == 0 {
		t.Fatalf("SAVE wrote no snapshot: %+v", st)
	}
	after, _ := c.LastSave(ctx).Result()
	if after < before || after != st.LastSnapshot.Unix() {
		t.Fatalf("LASTSAVE %d before, %d after; snapshot at %d", before, after, st.LastSnapshot.Unix())
	}
	if got, err := c.BgSave(ctx).Result(); err != nil || got != "Background saving started" {
		t.Fatalf("BGSAVE = %q, %v", got, err)
	}
}

func TestAuth_RequirePass(t *testing.T) {
	db := servertest.OpenDB(t)
	addr := start(t, db, resp.Options{Password: "s3cret"})
	ctx := context.Background()
	anon := goRedis(t, addr)
	if err := anon.Set(ctx, "k", "v", 0).Err(); err == nil || err.Error() != "NOAUTH Authentication required." {
		t.Fatalf("SET without AUTH: %v", err)
	}
	if db.Len() != 0 {
		t.Fatal("an unauthenticated SET was applied")
	}
	wrong := redis.NewClient(&redis.Options{Addr: addr, Password: "guess", MaxRetries: -1})
	defer wrong.Close()
	if err := wrong.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("wrong password: %v", err)
	}
	good := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	defer good.Close()
	if err := good.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("with the password: %v", err)
	}
	user := redis.NewClient(&redis.Options{Addr: addr, Username: "default", Password: "s3cret"})
	defer user.Close()
	if err := user.Get(ctx, "k").Err(); err != nil {
		t.Fatalf("AUTH default password: %v", err)
	}
	r := dialRaw(t, addr)
	r.send("MULTI\r\nAUTH s3cret\r\nGET k\r\n")
	for _, want := range []string{"-NOAUTH Authentication required.\r\n", "+OK\r\n", "$1\r\n", "v\r\n"} {
		if got := r.line(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

func TestMGet_NeverSeesHalfAnMSet(t *testing.T) {
	db := servertest.OpenDB(t)
	addr := start(t, db, resp.Options{})
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w := redis.NewClient(&redis.Options{Addr: addr})
		defer w.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := strconv.Itoa(i)
			if err := w.MSet(ctx, "x", v, "y", v, "z", v).Err(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	r := goRedis(t, addr)
	for range 2000 {
		got, err := r.MGet(ctx, "x", "y", "z").Result()
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != got[1] || got[1] != got[2] {
			close(stop)
			wg.Wait()
			t.Fatalf("MGET saw half an MSET: %v", got)
		}
	}
	close(stop)
	wg.Wait()
}
