package resp_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

func start(t testing.TB, store backend.Store, opts resp.Options) string {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = servertest.Logger(t)
	}
	if v, ok := os.LookupEnv(eventLoopEnv); ok {
		opts.GoroutinePerConn = v == "0"
	}
	return servertest.Serve(t, resp.NewServer(store, opts))
}

func goRedis(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// goRedis2 is goRedis speaking RESP2, for a test that reads replies in
// RESP2's shapes (go-redis v9 speaks RESP3 by default).
func goRedis2(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	return c
}

// patientClient is a go-redis client that waits a minute for a reply, where
// go-redis's default read timeout is 3 s: on a loaded machine under -race
// a reply (or a woken BRPOPLPUSH) can take longer, and a reply that timed
// out must not read as an empty list. (A hang still fails, at the minute.)
func patientClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: time.Minute})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGoRedis_StringCommands(t *testing.T) {
	db := servertest.OpenDB(t)
	c := goRedis(t, start(t, db, resp.Options{}))
	ctx := context.Background()

	if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	if got, err := c.Echo(ctx, "hi\r\nthere").Result(); err != nil || got != "hi\r\nthere" {
		t.Fatalf("ECHO = %q, %v", got, err)
	}
	binary := string([]byte{0, 0xff, '\r', '\n', '$'})
	if err := c.Set(ctx, "k"+binary, "v"+binary, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "k"+binary).Result(); err != nil || got != "v"+binary {
		t.Fatalf("GET = %q, %v", got, err)
	}
	if v, err := db.Get([]byte("k" + binary)); err != nil || string(v) != "v"+binary {
		t.Fatalf("engine has %q, %v", v, err)
	}
	if _, err := c.Get(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET missing: %v, want redis.Nil", err)
	}
	if err := c.MSet(ctx, "a", "1", "b", "2", "c", "3").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := c.MGet(ctx, "a", "missing", "c").Result()
	if err != nil || !slices.Equal(got, []any{"1", nil, "3"}) {
		t.Fatalf("MGET = %v, %v", got, err)
	}
	if n, err := c.Exists(ctx, "a", "b", "missing", "a").Result(); err != nil || n != 3 {
		t.Fatalf("EXISTS = %d, %v; want 3", n, err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 4 {
		t.Fatalf("DBSIZE = %d, %v; want 4", n, err)
	}
	if n, err := c.Del(ctx, "a", "b", "missing").Result(); err != nil || n != 2 {
		t.Fatalf("DEL = %d, %v; want 2", n, err)
	}
	if db.Len() != 2 {
		t.Fatalf("engine has %d keys after DEL, want 2", db.Len())
	}
	if err := c.Do(ctx, "SELECT", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "SELECT", 1).Err(); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("SELECT 1: %v", err)
	}
	if err := c.Do(ctx, "XADD", "l", "x").Err(); err == nil || err.Error() != "ERR unknown command 'XADD', with args beginning with: 'l' 'x' " {
		t.Fatalf("XADD: %v", err)
	}
	info, err := c.Info(ctx).Result()
	for _, want := range []string{"# Server", "redis_version:", "# Persistence", "aof_enabled:1", "# Stats", "# Keyspace", "db0:keys=2,"} {
		if err != nil || !strings.Contains(info, want) {
			t.Fatalf("INFO lacks %q (%v):\n%s", want, err, info)
		}
	}
	if info, _ := c.Info(ctx, "keyspace").Result(); strings.Contains(info, "# Server") || !strings.Contains(info, "db0:keys=2") {
		t.Fatalf("INFO keyspace:\n%s", info)
	}
	if err := c.Do(ctx, "CLIENT", "SETNAME", "tester").Err(); err != nil {
		t.Fatal(err)
	}
	if cfg, err := c.ConfigGet(ctx, "appendonly").Result(); err != nil || cfg["appendonly"] != "yes" {
		t.Fatalf("CONFIG GET appendonly = %v, %v", cfg, err)
	}
}

func TestGoRedis_EngineErrors(t *testing.T) {
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncNone, MaxKeySize: 8, MaxValueSize: 16})
	c := goRedis(t, start(t, db, resp.Options{MaxBulkBytes: 1024}))
	ctx := context.Background()
	for _, tc := range []struct{ key, value, want string }{
		{"", "v", "empty key"},
		{"123456789", "v", "key too large"},
		{"k", strings.Repeat("v", 17), "value too large"},
	} {
		if err := c.Set(ctx, tc.key, tc.value, 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SET %q: %v, want ERR ... %s", tc.key, err, tc.want)
		}
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("connection did not live on: %v", err)
	}
}

func TestGoRedis_ScanVisitsEveryKeyOnce(t *testing.T) {
	db := servertest.OpenDB(t)
	c := goRedis(t, start(t, db, resp.Options{}))
	ctx := context.Background()
	for i := range 137 {
		db.Set(fmt.Appendf(nil, "user:%d", i), []byte("x"))
		db.Set(fmt.Appendf(nil, "order:%d", i), []byte("x"))
	}
	var keys []string
	iter := c.Scan(ctx, 0, "user:*", 20).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if len(keys) != 137 || len(slices.Compact(keys)) != 137 || !strings.HasPrefix(keys[0], "user:") {
		t.Fatalf("SCAN MATCH user:* gave %d keys", len(keys))
	}
	all, _, err := c.Scan(ctx, 0, "", 1000).Result()
	if err != nil || len(all) != 274 {
		t.Fatalf("SCAN all: %d keys, %v", len(all), err)
	}
	scanAll := func(pattern string) []string {
		var keys []string
		iter := c.Scan(ctx, 0, pattern, 7).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		return keys
	}
	if got := scanAll("user:7"); !slices.Equal(got, []string{"user:7"}) {
		t.Fatalf("SCAN MATCH literal = %v", got)
	}
	if got := scanAll("u*r:1?"); len(got) != 10 || got[0] != "user:10" {
		t.Fatalf("SCAN MATCH u*r:1? = %v", got)
	}
	if got := scanAll("*:13[0-2]"); !slices.Equal(got, []string{"order:130", "order:131", "order:132", "user:130", "user:131", "user:132"}) {
		t.Fatalf("SCAN MATCH *:13[0-2] = %v", got)
	}
	// Any number is a cursor (a place in the scan order), as in Redis;
	// a cursor that is not a number is refused.
	if err := c.Scan(ctx, 987654, "", 10).Err(); err != nil {
		t.Fatalf("SCAN 987654: %v", err)
	}
	if err := c.Do(ctx, "scan", "x").Err(); err == nil || err.Error() != "ERR invalid cursor" {
		t.Fatalf("SCAN x: %v", err)
	}
}

func TestGoRedis_PipelineAnsweredInOrder(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	pipe := c.Pipeline()
	const n = 1000
	sets := make([]*redis.StatusCmd, n)
	gets := make([]*redis.StringCmd, n)
	for i := range n {
		sets[i] = pipe.Set(ctx, fmt.Sprint("k", i), fmt.Sprint("v", i), 0)
		gets[i] = pipe.Get(ctx, fmt.Sprint("k", i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if sets[i].Val() != "OK" || gets[i].Val() != fmt.Sprint("v", i) {
			t.Fatalf("reply %d: %q %q", i, sets[i].Val(), gets[i].Val())
		}
	}
}

// raw speaks the protocol by hand.
type raw struct {
	t testing.TB
	net.Conn
	r *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *raw {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &raw{t: t, Conn: c, r: bufio.NewReader(c)}
}

func (c *raw) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		c.t.Fatal(err)
	}
}

func (c *raw) line() string {
	c.t.Helper()
	l, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read: %v (got %q)", err, l)
	}
	return l
}

func (c *raw) closed() bool {
	_, err := c.r.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestRaw_InlineCommandsAndHello(t *testing.T) {
	c := dialRaw(t, start(t, servertest.OpenDB(t), resp.Options{}))
	c.send("PING\r\nset greeting \"hello\\r\\nworld\"\r\nget greeting\r\n\r\nHELLO 3\r\n")
	for _, want := range []string{"+PONG\r\n", "+OK\r\n", "$12\r\n", "hello\r\n", "world\r\n"} {
		if got := c.line(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if got := c.line(); got != "%7\r\n" {
		t.Fatalf("HELLO 3: %q, want RESP3's map of 7 fields", got)
	}
	for range 14 { // the map's fields and values
		if l := c.line(); strings.HasPrefix(l, "$") {
			c.line()
		}
	}
	c.send("QUIT\r\n")
	if got := c.line(); got != "+OK\r\n" || !c.closed() {
		t.Fatalf("QUIT: %q", got)
	}
}

func TestRaw_InvalidRESPIsAnsweredThenClosedAndServerLivesOn(t *testing.T) {
	db := servertest.OpenDB(t)
	addr := start(t, db, resp.Options{MaxBulkBytes: 1 << 20})
	for _, tc := range []struct{ in, want string }{
		{"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*2\r\n+GET\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
		{"*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n$104857600\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*99999999999\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*1\r\n$4\r\nPINGxx", "-ERR Protocol error: bulk string not followed by CRLF\r\n"},
		{"SET \"unterminated\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{strings.Repeat("A", 100<<10) + "\r\n", "-ERR Protocol error: too big inline request\r\n"},
	} {
		c := dialRaw(t, addr)
		c.send(tc.in)
		if got := c.line(); got != tc.want {
			t.Errorf("%.30q: got %q, want %q", tc.in, got, tc.want)
		}
		if !c.closed() {
			t.Errorf("%.30q: connection left open after a protocol error", tc.in)
		}
	}
	// Errors that are not framing errors keep the connection.
	c := dialRaw(t, addr)
	c.send("*1\r\n$3\r\nGET\r\n*2\r\n$7\r\nFOOBAR!\r\n$1\r\nx\r\n*1\r\n$4\r\nPING\r\n")
	for _, want := range []string{"-ERR wrong number of arguments for 'get' command\r\n", "-ERR unknown command 'FOOBAR!', with args beginning with: 'x' \r\n", "+PONG\r\n"} {
		if got := c.line(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

func TestRaw_HundredMegabyteValueIsRefusedWithoutBeingRead(t *testing.T) {
	db := servertest.OpenDB(t)
	addr := start(t, db, resp.Options{}) // the default bulk limit is 8 MiB + 1 KiB
	c := dialRaw(t, addr)
	c.send(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", 100<<20))
	if got := c.line(); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("got %q", got)
	}
	other := goRedis(t, addr)
	if err := other.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestServer_SilentClientsAndHalfCommandsDoNotStopOthers(t *testing.T) {
	db := servertest.OpenDB(t)
	addr := start(t, db, resp.Options{IdleTimeout: 300 * time.Millisecond})
	silent := dialRaw(t, addr)
	half := dialRaw(t, addr)
	half.send("*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$10\r\nabc")
	half.Close()

	if err := goRedis(t, addr).Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if !silent.closed() {
		t.Fatal("silent connection not closed by the idle timeout")
	}
	if _, err := db.Get([]byte("half")); !errors.Is(err, kvstore.ErrNotFound) {
		t.Fatalf("half-sent SET applied: %v", err)
	}
}

func TestServer_MaxClients(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{MaxConns: 1})
	first := dialRaw(t, addr)
	first.send("PING\r\n")
	first.line()
	second := dialRaw(t, addr)
	if got := second.line(); got != "-ERR max number of clients reached\r\n" || !second.closed() {
		t.Fatalf("got %q", got)
	}
}

func TestServer_PanicBecomesErrorReply(t *testing.T) {
	db := servertest.OpenDB(t)
	c := goRedis(t, start(t, servertest.PanickyStore{Store: db}, resp.Options{}))
	ctx := context.Background()
	if err := c.Get(ctx, servertest.PanicKey).Err(); err == nil || err.Error() != "ERR internal error" {
		t.Fatalf("GET on the panicking key: %v", err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("connection did not live on: %v", err)
	}
}

// requireTool finds a redis tool, or skips with the install hint; under
// CI=true a missing tool fails the test.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s not found: install it with `apt-get install redis-tools`", name)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

func TestServer_ConcurrentClientsShareTheEngine(t *testing.T) {
	db := servertest.OpenDB(t)
	addr := start(t, db, resp.Options{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: addr})
			defer c.Close()
			for i := range 100 {
				k := fmt.Sprintf("w%d:%d", w, i)
				if err := c.Set(context.Background(), k, k, 0).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if db.Len() != 800 {
		t.Fatalf("%d keys, want 800", db.Len())
	}
	if v, _ := db.Get([]byte("w3:42")); !bytes.Equal(v, []byte("w3:42")) {
		t.Fatalf("w3:42 = %q", v)
	}
}

func TestRaw_RequestOverTheTotalLimitIsRefused(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{MaxBulkBytes: 1 << 10, MaxRequestBytes: 4 << 10})
	c := dialRaw(t, addr)
	var b strings.Builder
	b.WriteString("*11\r\n$4\r\nMSET\r\n")
	for i := range 5 {
		fmt.Fprintf(&b, "$2\r\nk%d\r\n$1000\r\n%s\r\n", i, strings.Repeat("v", 1000))
	}
	c.send(b.String())
	if got := c.line(); got != "-ERR Protocol error: request too large\r\n" || !c.closed() {
		t.Fatalf("got %q", got)
	}
	// Under the limit, the same shape works.
	c = dialRaw(t, addr)
	c.send("*5\r\n$4\r\nMSET\r\n$1\r\na\r\n$1000\r\n" + strings.Repeat("v", 1000) + "\r\n$1\r\nb\r\n$3\r\nxyz\r\n")
	if got := c.line(); got != "+OK\r\n" {
		t.Fatalf("got %q", got)
	}
}

func TestRaw_LargeBulkArrivesInPiecesAndIsStoredWhole(t *testing.T) {
	db := servertest.OpenDB(t)
	c := dialRaw(t, start(t, db, resp.Options{}))
	value := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 KB, several read chunks
	c.send(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n", len(value)))
	for i := 0; i < len(value); i += 50000 {
		c.send(string(value[i:min(i+50000, len(value))]))
		time.Sleep(time.Millisecond)
	}
	c.send("\r\n")
	if got := c.line(); got != "+OK\r\n" {
		t.Fatalf("got %q", got)
	}
	if v, err := db.Get([]byte("big")); err != nil || !bytes.Equal(v, value) {
		t.Fatalf("stored %d bytes, %v", len(v), err)
	}
}

func TestPipeline_SETsUnderSyncAlwaysShareFsyncsAndKeepOrder(t *testing.T) {
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncAlways})
	c := goRedis(t, start(t, db, resp.Options{}))
	ctx := context.Background()
	const n = 200
	before := db.Stats().Fsyncs
	pipe := c.Pipeline()
	cmds := make([]*redis.StatusCmd, 0, n+2)
	for i := range n {
		cmds = append(cmds, pipe.Set(ctx, fmt.Sprint("k", i), fmt.Sprint("v", i), 0))
	}
	// Writes to one key keep their order; a read sees the writes before it.
	cmds = append(cmds, pipe.Set(ctx, "k7", "second", 0))
	get := pipe.Get(ctx, "k7")
	cmds = append(cmds, pipe.Set(ctx, "", "empty key fails alone", 0))
	pipe.Exec(ctx)
	for i, cmd := range cmds[:n+1] {
		if cmd.Val() != "OK" {
			t.Fatalf("reply %d: %v", i, cmd.Err())
		}
	}
	if err := cmds[n+1].Err(); err == nil || !strings.Contains(err.Error(), "empty key") {
		t.Fatalf("SET with an empty key in the pipeline: %v", err)
	}
	if get.Val() != "second" {
		t.Fatalf("GET after two SETs of k7 = %q", get.Val())
	}
	fsyncs := db.Stats().Fsyncs - before
	if fsyncs >= n {
		t.Fatalf("%d fsyncs for %d pipelined SETs: they did not share", fsyncs, n)
	}
	if v, _ := db.Get([]byte("k199")); string(v) != "v199" {
		t.Fatalf("k199 = %q", v)
	}
	t.Logf("%d pipelined SETs, %d fsyncs", n+1, fsyncs)
}

func TestPipeline_APartialCommandDoesNotHoldBackTheWritesBeforeIt(t *testing.T) {
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncAlways})
	c := dialRaw(t, start(t, db, resp.Options{}))
	// A whole SET, then the start of another one that never finishes.
	c.send("*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$5\r\nxy")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, err := db.Get([]byte("a")); err == nil && string(v) == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the whole SET was held back by the partial one after it")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPipeline_RepliesAreNotHeldWhileTheNextCommandIsIncomplete(t *testing.T) {
	c := dialRaw(t, start(t, servertest.OpenDB(t), resp.Options{}))
	c.send("PING\r\n*1\r\n$4\r\nPI") // a whole command, then part of the next
	if got := c.line(); got != "+PONG\r\n" {
		t.Fatalf("got %q", got)
	}
	c.send("NG\r\n")
	if got := c.line(); got != "+PONG\r\n" {
		t.Fatalf("got %q", got)
	}
}

func TestMSET_IsOneAtomicBatchWithOneFsync(t *testing.T) {
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncAlways})
	c := goRedis(t, start(t, db, resp.Options{}))
	ctx := context.Background()
	var pairs []any
	for i := range 100 {
		pairs = append(pairs, fmt.Sprint("m", i), fmt.Sprint("v", i))
	}
	before := db.Stats().Fsyncs
	if err := c.MSet(ctx, pairs...).Err(); err != nil {
		t.Fatal(err)
	}
	if fsyncs := db.Stats().Fsyncs - before; fsyncs != 1 {
		t.Fatalf("%d fsyncs for an MSET of 100 pairs, want 1", fsyncs)
	}
	if v, _ := db.Get([]byte("m99")); string(v) != "v99" {
		t.Fatalf("m99 = %q", v)
	}
	// A repeated key keeps MSET's order: the last value wins.
	if err := c.MSet(ctx, "dup", "1", "other", "x", "dup", "2").Err(); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.Get([]byte("dup")); string(v) != "2" {
		t.Fatalf("dup = %q, want the last value", v)
	}
	// All or nothing: a bad pair stores none of them.
	if err := c.MSet(ctx, "ok", "1", "", "empty key").Err(); err == nil || !strings.Contains(err.Error(), "empty key") {
		t.Fatalf("MSET with an empty key: %v", err)
	}
	if _, err := db.Get([]byte("ok")); !errors.Is(err, kvstore.ErrNotFound) {
		t.Fatalf("a rejected MSET stored a pair: %v", err)
	}
}
