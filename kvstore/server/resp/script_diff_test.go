//go:build unix

package resp_test

import (
	"testing"

	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// Scripts answer byte for byte as Redis 7 answers them: conversions both
// ways, error texts (with their script/line suffix), the sandbox.
func TestRedisDiff_ScriptConversionsErrorsAndSandbox(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("eval", "return 1", "0"),
		cmd("eval", "return 3.99", "0"),
		cmd("eval", "return -3.99", "0"),
		cmd("eval", "return 'hello'", "0"),
		cmd("eval", "return true", "0"),
		cmd("eval", "return false", "0"),
		cmd("eval", "return nil", "0"),
		cmd("eval", "return {1,2,3,'x',{4,5}}", "0"),
		cmd("eval", "return {1,2,nil,4}", "0"),
		cmd("eval", "return {1,false,3}", "0"),
		cmd("eval", "return {ok='fine'}", "0"),
		cmd("eval", "return {err='My Error'}", "0"),
		cmd("eval", "return redis.error_reply('MY_ERR custom')", "0"),
		cmd("eval", "return redis.error_reply('custom')", "0"),
		cmd("eval", "return redis.status_reply('PONG2')", "0"),
		cmd("eval", "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2]}", "2", "k1", "k2", "a1", "a2"),
		cmd("eval", "return redis.call('set', KEYS[1], ARGV[1])", "1", "s1", "v1"),
		cmd("eval", "return redis.call('get', KEYS[1])", "1", "s1"),
		cmd("eval", "return redis.call('get', 'missing')", "0"),
		cmd("eval", "return type(redis.call('get', 'missing'))", "0"),
		cmd("eval", "return redis.call('incr', 'n')", "0"),
		cmd("eval", "return redis.call('incrby', 'n', 5.0)", "0"),
		cmd("eval", "return redis.call('ping')", "0"),
		cmd("eval", "return type(redis.call('ping'))", "0"),
		cmd("eval", "return redis.call('ping')['ok']", "0"),
		cmd("eval", "return redis.call('time')[1] > '0'", "0"),
		cmd("eval", "return redis.call('incr', 's1')", "0"),
		cmd("eval", "return redis.pcall('incr', 's1')", "0"),
		cmd("eval", "local r = redis.pcall('incr', 's1'); return r['err']", "0"),
		cmd("eval", "return redis.call('nosuchcommand')", "0"),
		cmd("eval", "return redis.pcall('nosuchcommand')", "0"),
		cmd("eval", "return redis.call('get')", "0"),
		cmd("eval", "return redis.call('multi')", "0"),
		cmd("eval", "return redis.call('eval', 'return 1', 0)", "0"),
		cmd("eval", "return redis.call('script', 'flush')", "0"),
		cmd("eval", "return redis.call()", "0"),
		cmd("eval", "return redis.call({})", "0"),
		cmd("eval", "\n\nreturn a", "0"),
		cmd("eval", "a = 1", "0"),
		cmd("eval", "loadfile('x')", "0"),
		cmd("eval", "dofile('x')", "0"),
		cmd("eval", "print('x')", "0"),
		cmd("eval", "return os", "0"),
		cmd("eval", "return io", "0"),
		cmd("eval", "return require", "0"),
		cmd("eval", "redis.call = function() return 1 end", "0"),
		cmd("eval", "string.rep = function() return 1 end", "0"),
		cmd("eval", "error('boom')", "0"),
		cmd("eval", "error({err='CUSTOM boom'})", "0"),
		cmd("eval", "return redis.sha1hex('')", "0"),
		cmd("eval", "return redis.sha1hex('Pizza & Mandolino')", "0"),
		cmd("eval", "return cjson.encode({1,2,3})", "0"),
		cmd("eval", "return cjson.encode({a=1})", "0"),
		cmd("eval", "return cjson.decode('[1,2,3,\"x\"]')", "0"),
		cmd("eval", "return cjson.decode('{\"a\":[1,{\"b\":2}]}').a[2].b", "0"),
		cmd("eval", "return bit.band(0xff, 0x0f)", "0"),
		cmd("eval", "return bit.tohex(65535)", "0"),
		cmd("eval", "return bit.bnot(0)", "0"),
		cmd("eval", "return bit.lshift(1, 31)", "0"),
		cmd("eval", "return struct.pack('>I2', 258)", "0"),
		cmd("eval", "return {struct.unpack('>I2', 'ab')}", "0"),
		cmd("eval", "return struct.size('>iId')", "0"),
		cmd("eval", "return math.random(100)", "0"),
		cmd("eval", "return tostring(math.random())", "0"),
		cmd("eval", "return redis.REDIS_VERSION_NUM > 0", "0"),
		cmd("eval", "return 1", "-1"),
		cmd("eval", "return 1", "2", "a"),
		cmd("eval", "return 1", "x"),
		cmd("evalsha", "ffffffffffffffffffffffffffffffffffffffff", "0"),
		cmd("evalsha", "abc", "0"),
		cmd("script", "load", "return 'loaded'"),
		cmd("evalsha", "f1b8bb9a7a4d5d6e4f33d5c58b6ebd41e2f52a4d", "0"),
		cmd("script", "exists", "f1b8bb9a7a4d5d6e4f33d5c58b6ebd41e2f52a4d", "0000000000000000000000000000000000000000"),
		cmd("script", "kill"),
		cmd("eval_ro", "return redis.call('get', KEYS[1])", "1", "s1"),
		cmd("eval_ro", "return redis.call('set', KEYS[1], 'x')", "1", "s1"),
		cmd("eval", "#!lua flags=no-writes\nreturn redis.call('set', 'x', 'y')", "0"),
		cmd("eval", "#!lua\nreturn redis.call('set', 'x', 'y')", "0"),
		cmd("eval", "#!lua flags=bad\nreturn 1", "0"),
		cmd("eval", "redis.call('set', 'partial', '1'); error('after write')", "0"),
		cmd("get", "partial"),
		cmd("script", "flush"),
		cmd("script", "exists", "f1b8bb9a7a4d5d6e4f33d5c58b6ebd41e2f52a4d"),
		cmd("script", "nosuch"),
	)
}

// Functions answer as Redis 7's: LOAD's errors, FCALL, FCALL_RO, LIST's
// shape, DELETE, FLUSH.
func TestRedisDiff_FunctionsLoadCallListDelete(t *testing.T) {
	p := newPair(t, resp.Options{})
	lib := "#!lua name=mylib\n" +
		"redis.register_function('incr2', function(keys, args) return redis.call('incrby', keys[1], 2) end)\n" +
		"redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}\n"
	p.same(
		cmd("function", "load", lib),
		cmd("function", "load", lib),
		cmd("fcall", "incr2", "1", "n"),
		cmd("fcall", "incr2", "1", "n"),
		cmd("fcall_ro", "peek", "1", "n"),
		cmd("fcall_ro", "incr2", "1", "n"),
		cmd("fcall", "nosuch", "0"),
		cmd("fcall", "incr2", "2", "n"),
		cmd("function", "load", "return 1"),
		cmd("function", "load", "#!lua\nreturn 1"),
		cmd("function", "load", "#!lua name=x foo=bar\nreturn 1"),
		cmd("function", "load", "#!nosuch name=x\nreturn 1"),
		cmd("function", "load", "#!lua name=x\nreturn 1"),
		cmd("function", "load", "#!lua name=other\nredis.register_function('incr2', function() return 1 end)"),
		cmd("function", "load", "#!lua name=bad\nredis.register_function('a b', function() return 1 end)"),
		cmd("function", "load", "#!lua name=bad\nredis.call('ping')"),
		cmd("function", "load", "#!lua name=bad\nreturn math.abs(1)"),
		cmd("function", "load", "#!lua name=bad\nredis.register_function{function_name='f', callback=function() end, flags={'bogus'}}"),
		cmd("function", "load", "replace", "#!lua name=mylib\nredis.register_function('incr3', function(keys) return redis.call('incrby', keys[1], 3) end)"),
		cmd("fcall", "incr2", "1", "n"),
		cmd("fcall", "incr3", "1", "n"),
		// Redis lists a library's functions in its hash table's order: one
		// function, so that the order is the same.
		cmd("function", "list"),
		cmd("function", "list", "withcode"),
		cmd("function", "list", "libraryname", "my*"),
		cmd("function", "list", "libraryname", "zz*"),
		cmd("function", "delete", "nosuch"),
		cmd("function", "delete", "mylib"),
		cmd("fcall", "incr3", "1", "n"),
		cmd("function", "kill"),
		cmd("function", "restore", "garbage"),
		cmd("function", "flush", "bogus"),
		cmd("function", "flush"),
		cmd("function", "list"),
	)
}
