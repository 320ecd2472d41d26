package resp_test

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// go-redis's Script runs EVALSHA first and, on NOSCRIPT, EVAL: both paths.
func TestScript_GoRedisScriptFallsBackToEvalThenHitsTheCache(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	incrBy := redis.NewScript(`
local v = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('expire', KEYS[1], 60)
return {v, redis.call('ttl', KEYS[1])}`)
	if ok, _ := incrBy.Exists(ctx, c).Result(); ok[0] {
		t.Fatal("the script is cached before its first run")
	}
	for i, want := range []int64{5, 10} {
		got, err := incrBy.Run(ctx, c, []string{"counter"}, 5).Int64Slice()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got[0] != want || got[1] != 60 {
			t.Fatalf("run %d = %v, want [%d 60]", i, got, want)
		}
	}
	if ok, _ := incrBy.Exists(ctx, c).Result(); !ok[0] {
		t.Fatal("EVAL did not cache the script")
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.EvalSha(ctx, incrBy.Hash(), []string{"counter"}, 1).Err(); err == nil || err.Error() != "NOSCRIPT No matching script. Please use EVAL." {
		t.Fatalf("EVALSHA after SCRIPT FLUSH: %v", err)
	}
	if v, err := incrBy.Run(ctx, c, []string{"counter"}, 1).Int64Slice(); err != nil || v[0] != 11 {
		t.Fatalf("run after flush = %v, %v", v, err)
	}
}

// The rate limiter's script reads its key with pcall (a foreign type reads
// as no state) and then SETs a new value with PX: over a hash, as over a
// string, the SET replaces it, inside a script as outside.
func TestScript_SetWithOptionsReplacesACollection(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	replace := redis.NewScript(`
local raw = redis.pcall('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
return {type(raw), redis.call('GET', KEYS[1]), redis.call('SETNX', KEYS[1], 'again')}`)
	for _, foreign := range []func(key string) error{
		func(key string) error { return c.HSet(ctx, key, "n", 7).Err() },
		func(key string) error { return c.RPush(ctx, key, "a").Err() },
		func(key string) error { return c.Set(ctx, key, "3", time.Minute).Err() },
	} {
		if err := foreign("k"); err != nil {
			t.Fatal(err)
		}
		got, err := replace.Run(ctx, c, []string{"k"}, "4|x").Slice()
		if err != nil {
			t.Fatalf("the script over %s: %v", c.Type(ctx, "k").Val(), err)
		}
		if want := []any{"table", "4|x", int64(0)}; len(got) != 3 || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("the script = %v, want the value replaced and SETNX 0 (%v)", got, want)
		}
		if kind := c.Type(ctx, "k").Val(); kind != "string" {
			t.Fatalf("TYPE after the script = %s, want string", kind)
		}
		c.Del(ctx, "k")
	}
}

// A script's writes are one engine batch: one record, one fsync, and no
// other client's write between them.
func TestScript_WritesAreOneBatchWithOneFsync(t *testing.T) {
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncAlways})
	c := goRedis(t, start(t, db, resp.Options{}))
	ctx := context.Background()
	seq, fsyncs := db.Stats().Seq, db.Stats().Fsyncs
	err := c.Eval(ctx, `for i = 1, 100 do redis.call('set', 'k' .. i, i) end return 'done'`, nil).Err()
	if err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.Seq-seq != 1 || st.Fsyncs-fsyncs != 1 {
		t.Fatalf("a script of 100 SETs took %d records and %d fsyncs, want 1 and 1", st.Seq-seq, st.Fsyncs-fsyncs)
	}
	if v, _ := db.Get([]byte("k100")); string(v) != "100" {
		t.Fatalf("k100 = %q", v)
	}
	// Concurrent read-modify-write scripts lose no update.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if err := c.Eval(ctx, `local v = tonumber(redis.call('get', KEYS[1]) or '0'); redis.call('set', KEYS[1], v + 1)`, []string{"rmw"}).Err(); err != nil && !errors.Is(err, redis.Nil) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if v, _ := db.Get([]byte("rmw")); string(v) != "400" {
		t.Fatalf("rmw = %q after 400 increments by script", v)
	}
}

// A script that fails after a write keeps the write (Redis has no
// rollback), and EVAL inside MULTI runs in EXEC's batch.
func TestScript_ErrorAfterAWriteKeepsItAndEvalRunsInsideExec(t *testing.T) {
	db := servertest.OpenDB(t)
	c := goRedis(t, start(t, db, resp.Options{}))
	ctx := context.Background()
	err := c.Eval(ctx, `redis.call('set', 'kept', '1'); return redis.call('incr', 'kept', 'x')`, nil).Err()
	if err == nil || !strings.Contains(err.Error(), "Wrong number of args calling Redis command from script") {
		t.Fatalf("error = %v", err)
	}
	if v, _ := db.Get([]byte("kept")); string(v) != "1" {
		t.Fatalf("kept = %q: the write before the error was dropped", v)
	}
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "tx", "a", 0)
		p.Eval(ctx, `return redis.call('append', 'tx', 'b')`, nil)
		p.Get(ctx, "tx")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := cmds[2].(*redis.StringCmd).Val(); got != "ab" {
		t.Fatalf("GET after EVAL in EXEC = %q", got)
	}
}

// slowScript is a loop that never calls redis.
const slowScript = `local i = 0 while true do i = i + 1 end`

// After the busy time other clients get BUSY; SCRIPT KILL stops a script
// that did not write, even one whose pcall swallows errors; the killed
// script's client gets the kill's error; the server answers again.
func TestScript_BusyScriptIsKilledAndTheServerAnswersAgain(t *testing.T) {
	for _, body := range []string{slowScript, `while true do pcall(function() while true do end end) end`} {
		addr := start(t, servertest.OpenDB(t), resp.Options{BusyScriptTime: 100 * time.Millisecond})
		runner, other := goRedis(t, addr), goRedis(t, addr)
		ctx := context.Background()
		other.Ping(ctx) // connected before the script runs
		done := make(chan error, 1)
		go func() { done <- runner.Eval(ctx, body, nil).Err() }()
		waitBusy(t, other)
		if err := other.Get(ctx, "x").Err(); err == nil || err.Error() != "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE." {
			t.Fatalf("GET while busy: %v", err)
		}
		// A client that connects while the script is busy is answered too.
		if err := goRedis(t, addr).Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY") {
			t.Fatalf("PING of a client connected while busy: %v", err)
		}
		if err := other.FunctionKill(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY") {
			t.Fatalf("FUNCTION KILL of an EVAL: %v", err)
		}
		if err := other.ScriptKill(ctx).Err(); err != nil {
			t.Fatalf("SCRIPT KILL: %v", err)
		}
		select {
		case err := <-done:
			// Redis 7 names the script and the line it was stopped on.
			want := fmt.Sprintf("ERR Script killed by user with SCRIPT KILL... script: %s, on @user_script:1.", sha1Hex(body))
			if err == nil || err.Error() != want {
				t.Fatalf("the killed script's reply: %v, want %q", err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("SCRIPT KILL did not stop the script")
		}
		if err := other.Set(ctx, "x", "1", 0).Err(); err != nil {
			t.Fatalf("SET after the kill: %v", err)
		}
		if err := other.ScriptKill(ctx).Err(); err == nil || err.Error() != "NOTBUSY No scripts in execution right now." {
			t.Fatalf("SCRIPT KILL with none running: %v", err)
		}
	}
}

// A command that reached the server in the same event-loop round as the
// script (so its readiness was already taken from epoll) is answered BUSY
// once the script is busy, not left unread until the script ends: Redis's
// unit/scripting stalled on this ("killed by SCRIPT KILL even when use
// pcall": its PING never came back, so the kill was never sent).
func TestScript_CommandReadyWithTheScriptIsAnsweredBusy(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{BusyScriptTime: 100 * time.Millisecond, EventLoops: 1})
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	send := func(c net.Conn, args ...string) {
		b := fmt.Appendf(nil, "*%d\r\n", len(args))
		for _, a := range args {
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	line := func(c net.Conn, r *bufio.Reader) string {
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		l, err := r.ReadString('\n')
		if err != nil {
			return "read: " + err.Error()
		}
		return strings.TrimSpace(l)
	}
	hold, holdR := dial()
	runner, runnerR := dial()
	other, otherR := dial()
	for _, c := range []struct {
		c net.Conn
		r *bufio.Reader
	}{{hold, holdR}, {runner, runnerR}, {other, otherR}} {
		send(c.c, "PING")
		if got := line(c.c, c.r); got != "+PONG" {
			t.Fatalf("PING = %q", got)
		}
	}
	// hold keeps the loop in a script for 50 ms (under the busy time), so
	// that runner's script and other's PING arrive meanwhile and are read
	// from epoll in one round, the script first.
	send(hold, "EVAL", `local t = redis.call('TIME') local t0 = t[1] * 1000000 + t[2]
while true do t = redis.call('TIME') if t[1] * 1000000 + t[2] - t0 > 50000 then return 1 end end`, "0")
	time.Sleep(10 * time.Millisecond)
	send(runner, "EVAL", "while true do end", "0")
	time.Sleep(5 * time.Millisecond)
	send(other, "PING")
	if got := line(hold, holdR); got != ":1" {
		t.Fatalf("the holding script = %q", got)
	}
	// A goroutine per connection answers it at once; the loop, busy in
	// the script, once the script is busy.
	for got := line(other, otherR); !strings.HasPrefix(got, "-BUSY"); got = line(other, otherR) {
		if got != "+PONG" {
			t.Fatalf("PING sent with the script = %q, want BUSY (or PONG before the busy time)", got)
		}
		send(other, "PING")
	}
	send(other, "SCRIPT", "KILL")
	if got := line(other, otherR); got != "+OK" {
		t.Fatalf("SCRIPT KILL = %q", got)
	}
	if got := line(runner, runnerR); !strings.Contains(got, "Script killed by user") {
		t.Fatalf("the killed script's reply = %q", got)
	}
}

// EXEC while a script is busy is refused as Redis 7.0 refuses it (EXEC has
// no allow-busy flag): the transaction is discarded with "EXECABORT
// Transaction discarded because of: BUSY ...", nothing of it runs, and the
// connection is out of MULTI. EXEC used to be let through: it then waited
// for the running script's update on the watchdog's goroutine, and the
// server answered nobody again, SCRIPT KILL included.
func TestScript_ExecWhileBusyIsAbortedWithTheBusyError(t *testing.T) {
	const abort = "EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	for _, queuedWhileBusy := range []bool{false, true} {
		addr := start(t, servertest.OpenDB(t), resp.Options{BusyScriptTime: 50 * time.Millisecond})
		runner, other := goRedis(t, addr), goRedis(t, addr)
		ctx := context.Background()
		if err := other.Set(ctx, "xx", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		tx := other.Conn()
		defer tx.Close()
		if err := tx.Do(ctx, "multi").Err(); err != nil {
			t.Fatal(err)
		}
		if err := tx.Do(ctx, "incr", "xx").Err(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- runner.Eval(ctx, slowScript, nil).Err() }()
		waitBusy(t, other)
		if queuedWhileBusy {
			if err := tx.Do(ctx, "incr", "xx").Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY") {
				t.Fatalf("INCR queued while busy: %v", err)
			}
		}
		execDone := make(chan error, 1)
		go func() { execDone <- tx.Do(ctx, "exec").Err() }()
		select {
		case err := <-execDone:
			if err == nil || err.Error() != abort {
				t.Fatalf("EXEC while busy: %v, want %q", err, abort)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("EXEC while busy was not answered")
		}
		if err := other.ScriptKill(ctx).Err(); err != nil {
			t.Fatalf("SCRIPT KILL: %v", err)
		}
		<-done
		if got, err := other.Get(ctx, "xx").Result(); err != nil || got != "1" {
			t.Fatalf("xx = %q, %v: part of the refused transaction ran", got, err)
		}
		if got, err := tx.Do(ctx, "ping", "asdf").Text(); err != nil || got != "asdf" {
			t.Fatalf("PING after the refused EXEC = %q, %v (still in MULTI?)", got, err)
		}
	}
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// waitBusy waits until the server answers BUSY.
func waitBusy(t *testing.T, c *redis.Client) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := c.Ping(context.Background()).Err(); err == nil {
			continue
		} else if strings.HasPrefix(err.Error(), "BUSY") {
			return
		}
	}
	t.Fatal("the server never answered BUSY")
}

// A script that wrote cannot be killed; SHUTDOWN NOSAVE stops it, drops
// its writes, and stops the server.
func TestScript_WritingScriptIsUnkillableUntilShutdownNosave(t *testing.T) {
	db := servertest.OpenDB(t)
	stopped := make(chan struct{})
	var once sync.Once
	addr := start(t, db, resp.Options{BusyScriptTime: 100 * time.Millisecond,
		OnShutdown: func(context.Context) { once.Do(func() { close(stopped) }) }})
	runner, other := goRedis(t, addr), goRedis(t, addr)
	ctx := context.Background()
	other.Ping(ctx)
	done := make(chan error, 1)
	go func() { done <- runner.Eval(ctx, `redis.call('set', 'half', '1') `+slowScript, nil).Err() }()
	waitBusy(t, other)
	if err := other.ScriptKill(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "UNKILLABLE Sorry the script already executed write commands against the dataset.") {
		t.Fatalf("SCRIPT KILL of a script that wrote: %v", err)
	}
	if err := other.Do(ctx, "shutdown", "nosave").Err(); err != nil && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "EOF") {
		t.Logf("SHUTDOWN NOSAVE: %v", err)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("SHUTDOWN NOSAVE did not stop the server")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the script did not end")
	}
	if _, err := db.Get([]byte("half")); !errors.Is(err, kvstore.ErrNotFound) {
		t.Fatalf("the stopped script's write was kept: %v", err)
	}
}

// The attacks: each ends in an error reply, and the server answers others.
func TestScript_AttacksEndInAnErrorAndTheServerLivesOn(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{BusyScriptTime: 10 * time.Second, ScriptMaxMemory: 16 << 20})
	c := goRedis(t, addr)
	ctx := context.Background()
	for _, a := range []struct{ name, body, want string }{
		{"string.rep of gigabytes", `return string.rep('x', 4*1024*1024*1024)`, "resulting string too large"},
		{"string.rep past the memory limit", `return string.rep('x', 100*1024*1024)`, "resulting string too large"},
		{"a table grown without bound", `local t = {} local i = 1 while true do t[i] = 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' .. i i = i + 1 end`, "memory limit"},
		{"strings doubled without bound", `local s = 'x' while true do s = s .. s end`, "memory limit"},
		{"recursion 1e6 deep", `local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end return f(1000000)`, "stack overflow"},
		{"unpack of a huge range", `return unpack({}, 1, 1e8)`, "too many results to unpack"},
		{"string.byte of a huge range", `return string.byte(string.rep('x', 1e6), 1, -1)`, "string slice too long"},
		{"a table that holds itself", `local t = {} t[1] = t return t`, ""},
		{"cjson of deep nesting", `local t = {} local c = t for i = 1, 10000 do c[1] = {} c = c[1] end return cjson.encode(t)`, "excessive nesting"},
	} {
		t.Run(a.name, func(t *testing.T) {
			err := c.Eval(ctx, a.body, nil).Err()
			if a.want == "" {
				// Any reply will do; the server must answer the next command.
			} else if err == nil || !strings.Contains(err.Error(), a.want) {
				t.Fatalf("error = %v, want one containing %q", err, a.want)
			}
			if err := c.Set(ctx, "alive", a.name, 0).Err(); err != nil {
				t.Fatalf("SET after the attack: %v", err)
			}
		})
	}
}

// A script reaches neither the host's globals nor another script's state:
// getfenv, setfenv and newproxy are gone (as from Redis 7.0.15's sandbox
// since CVE-2025-46818), and a chunk of loadstring or load runs with the
// protected globals, not gopher-lua's real table.
func TestScript_SandboxKeepsNoStateBetweenScripts(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	for _, attack := range []string{
		"rawset(getfenv(0), 'leak', 'getfenv') return 1",
		"getfenv(0).leak = 'getfenv' return 1",
		"setfenv(0, setmetatable({leak = 'setfenv'}, {__index = _G})) return 1",
		"setfenv(1, setmetatable({leak = 'setfenv'}, {__index = _G})) return 1",
		"loadstring('leak = \"loadstring\"')() return 1",
		"local parts = {'leak = \"load\"'} load(function() return table.remove(parts) end)() return 1",
		"loadstring('rawset(_G, \"leak\", \"rawset\")')() return 1",
	} {
		err := c.Eval(ctx, attack, nil).Err()
		if err == nil {
			t.Errorf("%s: no error", attack)
		}
		for _, read := range []string{"return leak", "return loadstring('return leak')()", "return load(function() return nil end) and 1"} {
			got, err := c.Eval(ctx, read, nil).Result()
			if err == nil && read != "return load(function() return nil end) and 1" {
				t.Errorf("after %q, %q = %v: state kept between scripts", attack, read, got)
			}
		}
	}
	for _, name := range []string{"getfenv", "setfenv", "newproxy"} {
		if err := c.Eval(ctx, "return type("+name+")", nil).Err(); err == nil ||
			!strings.Contains(err.Error(), "Script attempted to access nonexistent global variable '"+name+"'") {
			t.Errorf("%s: %v, want the nonexistent global error", name, err)
		}
	}
}

// The sandbox's globals as scripts see them (read through the proxy's
// table chain): present ones read, a missing one is Redis's error, none can
// be created, and KEYS/ARGV are each call's own; redis.call's arguments
// (strings and numbers mixed) and integer, bulk and nil replies convert as
// in Redis.
func TestScript_GlobalsAndCallConversions(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	if got, err := c.Eval(ctx, "return {type(redis), type(string.sub), type(cjson), tostring(_G == _G)}", nil).StringSlice(); err != nil ||
		strings.Join(got, ",") != "table,function,table,true" {
		t.Fatalf("globals = %v, %v", got, err)
	}
	if err := c.Eval(ctx, "return undefined_name", nil).Err(); err == nil ||
		!strings.Contains(err.Error(), "Script attempted to access nonexistent global variable 'undefined_name'") {
		t.Fatalf("reading a missing global: %v", err)
	}
	if err := c.Eval(ctx, "created = 1 return 1", nil).Err(); err == nil || !strings.Contains(err.Error(), "Attempt to modify a readonly table") {
		t.Fatalf("creating a global: %v", err)
	}
	for i, want := range []string{"a|x|2", "b|y|2"} {
		key, arg := []string{"a", "b"}[i], []string{"x", "y"}[i]
		got, err := c.Eval(ctx, "return KEYS[1] .. '|' .. ARGV[1] .. '|' .. #ARGV", []string{key}, arg, "extra").Text()
		if err != nil || got != want {
			t.Fatalf("call %d = %q, %v; want %q", i, got, err, want)
		}
	}
	got, err := c.Eval(ctx, `
redis.call('set', KEYS[1], 1.5)
local a = redis.call('get', KEYS[1])
redis.call('rpush', KEYS[2], 'v', 3, 0.25, -7, 'w')
return {a, redis.call('incrby', KEYS[3], 41), redis.call('incr', KEYS[3]), redis.call('lrange', KEYS[2], 0, -1), redis.call('get', 'missing') == false}`,
		[]string{"f", "l", "n"}).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(got); s != "[1.5 41 42 [v 3 0.25 -7 w] 1]" {
		t.Fatalf("conversions = %s", s)
	}
}

// tonumber as scripts see it (the rate limiter's script reads its
// arguments with it): plain decimals, and what gopher-lua's own answers
// for the rest.
func TestScript_ToNumber(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	got, err := c.Eval(context.Background(), `
local out = {}
for _, s in ipairs({'123', '-5', '0', '-0', '007', ' 7 ', '0x10', '1.5', 'abc', '', '1e2', '99999999999999', '12a', '+3'}) do
  out[#out + 1] = tostring(tonumber(s))
end
out[#out + 1] = tostring(tonumber(42))
out[#out + 1] = tostring(tonumber('ff', 16))
out[#out + 1] = tostring(tonumber('10', 2))
out[#out + 1] = type(tonumber('5'))
return out`, nil).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	want := "123 -5 0 0 7 7 16 1.5 nil nil nil 99999999999999 nil 3 42 255 2 number"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("tonumber = %s\nwant       %s", s, want)
	}
	if err := c.Eval(context.Background(), "return tonumber()", nil).Err(); err == nil || !strings.Contains(err.Error(), "bad argument #1 to tonumber") {
		t.Fatalf("tonumber() without an argument: %v", err)
	}
}

// A kill stops a loop inside a coroutine (resumed directly or through
// coroutine.wrap), and coroutines answer as before the stop context.
func TestScript_KillStopsALoopInACoroutine(t *testing.T) {
	for _, body := range []string{
		`local co = coroutine.create(function() while true do end end) return {coroutine.resume(co)}`,
		`local f = coroutine.wrap(function() while true do end end) return f()`,
	} {
		addr := start(t, servertest.OpenDB(t), resp.Options{BusyScriptTime: 50 * time.Millisecond})
		runner, other := goRedis(t, addr), goRedis(t, addr)
		ctx := context.Background()
		done := make(chan error, 1)
		go func() { done <- runner.Eval(ctx, body, nil).Err() }()
		waitBusy(t, other)
		if err := other.ScriptKill(ctx).Err(); err != nil {
			t.Fatalf("SCRIPT KILL: %v", err)
		}
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "Script killed by user with SCRIPT KILL") {
				t.Fatalf("%s: the killed script's reply: %v", body, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: SCRIPT KILL did not stop the coroutine's loop", body)
		}
	}
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	got, err := c.Eval(context.Background(), `
local gen = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b * 2, 'end' end)
local x = gen(1)
local y, z = gen(10)
local co = coroutine.create(function() error('inside') end)
local ok, msg = coroutine.resume(co)
local werr = select(2, pcall(coroutine.wrap(function() error('wrapped') end)))
return {x, y, z, tostring(ok), msg, werr}`, nil).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(got); !strings.HasPrefix(s, "[2 20 end false ") || !strings.Contains(s, "inside") || !strings.Contains(s, "wrapped") {
		t.Fatalf("coroutines = %s", s)
	}
}

// KEYS and ARGV are each EVAL's own, as in Redis, though the VM refills
// the same two tables while a script leaves them as given: whatever a
// script does to them (a field, a metatable, an element past the end, a
// table.remove) the next call does not see; fewer arguments leave none of
// the last call's behind. A function library that keeps its keys table
// keeps what it was given (FCALL's tables are never refilled).
func TestScript_KeysAndArgvAreEachCallsOwn(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	const read = `return {tostring(rawget(KEYS, 'x')), tostring(rawget(ARGV, 'y')), tostring(KEYS[1]), tostring(KEYS[2]),
tostring(KEYS[10]), tostring(ARGV[1]), #KEYS, #ARGV, tostring(getmetatable(KEYS)), tostring(KEYS.z)}`
	want := "[nil nil k1 nil nil a1 1 1 nil nil]"
	for _, tamper := range []string{
		"KEYS.x = 1 ARGV.y = 2",
		"setmetatable(KEYS, {__index = function() return 'meta' end})",
		"table.remove(KEYS) KEYS.z = 1",
		"table.remove(KEYS, 1) table.remove(KEYS, 1) KEYS.z = 1",
		"KEYS[10] = 'far' ARGV[3] = 'far'",
		"KEYS[1] = 'changed' ARGV[1] = nil",
		"rawset(KEYS, 'z', 1)",
		"", // three keys and two args, left alone: the next call has one of each
	} {
		if err := c.Eval(ctx, tamper+" return 1", []string{"k1", "k2", "k3"}, "a1", "a2").Err(); err != nil {
			t.Fatalf("%q: %v", tamper, err)
		}
		got, err := c.Eval(ctx, read, []string{"k1"}, "a1").Slice()
		if err != nil {
			t.Fatal(err)
		}
		if s := fmt.Sprint(got); s != want {
			t.Errorf("after %q: %s, want %s", tamper, s, want)
		}
	}
	if err := c.FunctionLoad(ctx, `#!lua name=keeper
local kept
redis.register_function('keep', function(keys, args)
  if not kept then kept = {keys, args} end
  return {kept[1][1], kept[2][1], #kept[1]}
end)`).Err(); err != nil {
		t.Fatal(err)
	}
	for i, keys := range [][]string{{"first", "x"}, {"second"}} {
		got, err := c.FCall(ctx, "keep", keys, "arg"+fmt.Sprint(i)).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if s := fmt.Sprint(got); s != "[first arg0 2]" {
			t.Fatalf("FCALL %d: the library's kept tables read %s, want [first arg0 2]", i, s)
		}
	}
}

// A script's commands count relative times from the script's time, the one
// its keys expire by (Redis 7.2's command time snapshot): a key the script
// sees alive has a TTL above zero however long the script has run, and a
// TTL it sets reads back as set.
func TestScript_RelativeTimesCountFromTheScriptsTime(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	got, err := c.Eval(context.Background(), `
redis.call('SET', KEYS[1], 'v', 'PX', 40)
redis.call('SET', KEYS[2], 'v')
redis.call('PEXPIRE', KEYS[2], 1000)
local function ms() local t = redis.call('TIME') return t[1] * 1000 + t[2] / 1000 end
local start = ms()
while ms() - start < 60 do end -- past the first key's expiry on the clock
return {redis.call('EXISTS', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2]), redis.call('TTL', KEYS[2])}`,
		[]string{"short", "long"}).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(got); s != "[1 40 1000 1]" {
		t.Fatalf("EXISTS and PTTL of a 40 ms key, PTTL and TTL of a 1 s one, 60 ms into the script = %s, want [1 40 1000 1]", s)
	}
}

// cjson.encode of the same table gives the same text at every call (a
// script that stores a document and later compares a new encoding with it
// must not see a change where there is none): gopher-lua's ForEach walks Go
// maps, whose order changes from one walk to the next; pairs' order does not.
func TestCjson_EncodeOfATableIsTheSameAtEveryCall(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	const script = `local t = {} for i = 1, 12 do t['k' .. i] = i end t.nested = {x = 1, y = 2, z = 3}
return cjson.encode(t)`
	first := ""
	for i := range 30 {
		got, err := c.Eval(ctx, script, nil).Text()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = got
		} else if got != first {
			t.Fatalf("call %d encoded %s, call 0 %s", i, got, first)
		}
	}
}

// A call of nil is reported in Lua 5.1's words, naming what was called
// where the code says it (Redis's scripts run Lua 5.1): gopher-lua's own
// "attempt to call a non-function object" names nothing.
func TestScript_CallOfNilSaysWhatWasCalled(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	for _, tc := range []struct{ script, want string }{
		{"return redis.nosuch()", "attempt to call field 'nosuch' (a nil value)"},
		{"local t = {} return t:m()", "attempt to call method 'm' (a nil value)"},
		{"local f return f()", "attempt to call local 'f' (a nil value)"},
		{"local x local function g() return x() end return g()", "attempt to call upvalue 'x' (a nil value)"},
		{"return (nil)()", "attempt to call a nil value"},
		{"return loadstring('syntax error here')()", "attempt to call a nil value"},
		{"local t = {} local a = t.x\nlocal b = 1\nreturn a()", "attempt to call local 'a' (a nil value)"},
	} {
		err := c.Eval(ctx, tc.script, nil).Err()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "non-function") {
			t.Errorf("EVAL %q: %v, want an error with %q", tc.script, err, tc.want)
		}
	}
	// pcall gets the message too, and the metatable behind it is hidden.
	got, err := c.Eval(ctx, "local ok, e = pcall(nil) return {tostring(ok), e, tostring(getmetatable(nil))}", nil).StringSlice()
	if err != nil || len(got) != 3 || got[0] != "false" || !strings.Contains(got[1], "attempt to call a nil value") || got[2] != "false" {
		t.Errorf("pcall(nil) and getmetatable(nil): %q %v", got, err)
	}
}
