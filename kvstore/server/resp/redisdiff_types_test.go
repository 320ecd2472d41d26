//go:build unix

package resp_test

// Differential tests of the collection commands: each sequence goes to a
// real redis-server and to our server, and every reply (values, orders of
// small collections, error texts) must be equal.

import (
	"testing"

	"github.com/devkit-go/devkit/kvstore/server/resp"
)

func TestRedisDiff_Hashes(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("hset", "h", "f1", "v1", "f2", "v2", "f3", "v3"), cmd("hset", "h", "f1", "x", "f4", "v4"),
		cmd("hget", "h", "f1"), cmd("hget", "h", "nope"), cmd("hget", "nokey", "f"),
		cmd("hmget", "h", "f1", "nope", "f2"), cmd("hmget", "nokey", "a"),
		cmd("hgetall", "h"), cmd("hkeys", "h"), cmd("hvals", "h"), cmd("hlen", "h"), cmd("hlen", "nokey"),
		cmd("hdel", "h", "f2", "nope"), cmd("hgetall", "h"), cmd("hexists", "h", "f1"), cmd("hexists", "h", "f2"),
		cmd("hstrlen", "h", "f1"), cmd("hstrlen", "h", "nope"),
		cmd("hsetnx", "h", "f1", "y"), cmd("hsetnx", "h", "f9", "y"), cmd("hget", "h", "f9"),
		cmd("hmset", "h", "a", "1", "b", "2"), cmd("hmset", "h", "a"), cmd("hset", "h", "a"),
		cmd("hincrby", "h", "a", "10"), cmd("hincrby", "h", "new", "-3"), cmd("hincrby", "h", "f1", "1"),
		cmd("hincrby", "h", "a", "x"), cmd("hset", "h", "big", "9223372036854775807"), cmd("hincrby", "h", "big", "1"),
		cmd("hincrbyfloat", "h", "a", "1.5"), cmd("hincrbyfloat", "h", "fl", "3.0e3"), cmd("hincrbyfloat", "h", "f1", "1"),
		cmd("hincrbyfloat", "h", "a", "abc"), cmd("hincrbyfloat", "h", "a", "inf"),
		cmd("type", "h"), cmd("exists", "h"), cmd("object", "encoding", "h"),
		cmd("hscan", "h", "0"), cmd("hscan", "h", "0", "match", "f*"), cmd("hscan", "h", "x"), cmd("hscan", "nokey", "0"),
		cmd("hrandfield", "nokey"), cmd("hrandfield", "nokey", "3"), cmd("hrandfield", "h", "0"),
		cmd("hrandfield", "h", "-9223372036854775808"), cmd("hrandfield", "h", "1", "foo"),
		cmd("hdel", "h", "f1", "f3", "f4", "f9", "a", "b", "new", "big", "fl"), cmd("exists", "h"), cmd("type", "h"),
	)
	// Wrong types both ways, and the keyspace commands on a hash.
	p.same(
		cmd("set", "s", "x"), cmd("hset", "s", "f", "v"), cmd("hget", "s", "f"), cmd("hgetall", "s"), cmd("hlen", "s"),
		cmd("hset", "h2", "f", "v"), cmd("get", "h2"), cmd("incr", "h2"), cmd("append", "h2", "x"), cmd("strlen", "h2"),
		cmd("mget", "h2", "s"), cmd("getrange", "h2", "0", "1"), cmd("setrange", "h2", "0", "x"),
		cmd("expire", "h2", "100"), cmd("ttl", "h2"), cmd("persist", "h2"), cmd("ttl", "h2"),
		cmd("rename", "h2", "h3"), cmd("hgetall", "h3"), cmd("exists", "h2"),
		cmd("copy", "h3", "h4"), cmd("hgetall", "h4"), cmd("copy", "h3", "h4"), cmd("copy", "h3", "h4", "replace"),
		cmd("renamenx", "h3", "h4"), cmd("del", "h3", "h4"), cmd("exists", "h3", "h4"),
		cmd("set", "h5", "x"), cmd("hset", "h6", "a", "b"), cmd("rename", "h6", "h5"), cmd("type", "h5"),
		cmd("set", "h5", "str"), cmd("type", "h5"), cmd("get", "h5"),
	)
}

func TestRedisDiff_Lists(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("rpush", "l", "a", "b", "c"), cmd("lpush", "l", "x", "y"), cmd("lrange", "l", "0", "-1"),
		cmd("lrange", "l", "1", "2"), cmd("lrange", "l", "-2", "100"), cmd("lrange", "l", "5", "1"), cmd("lrange", "nokey", "0", "-1"),
		cmd("llen", "l"), cmd("lindex", "l", "0"), cmd("lindex", "l", "-1"), cmd("lindex", "l", "99"), cmd("lindex", "l", "x"),
		cmd("lset", "l", "1", "X"), cmd("lset", "l", "99", "X"), cmd("lset", "nokey", "0", "X"), cmd("lrange", "l", "0", "-1"),
		cmd("linsert", "l", "before", "a", "A"), cmd("linsert", "l", "after", "c", "C"), cmd("linsert", "l", "after", "zz", "C"),
		cmd("linsert", "nokey", "after", "a", "C"), cmd("linsert", "l", "middle", "a", "C"), cmd("lrange", "l", "0", "-1"),
		cmd("rpush", "l", "a", "a", "b", "a"), cmd("lrem", "l", "2", "a"), cmd("lrange", "l", "0", "-1"),
		cmd("lrem", "l", "-1", "a"), cmd("lrange", "l", "0", "-1"), cmd("lrem", "l", "0", "b"), cmd("lrange", "l", "0", "-1"),
		cmd("lpos", "l", "c"), cmd("lpos", "l", "nope"), cmd("lpos", "l", "c", "count", "0"), cmd("lpos", "l", "c", "rank", "0"),
		cmd("lpos", "l", "c", "rank", "-1"), cmd("lpos", "l", "c", "count", "-1"), cmd("lpos", "l", "c", "maxlen", "1"),
		cmd("lpos", "nokey", "c"), cmd("lpos", "nokey", "c", "count", "2"),
		cmd("ltrim", "l", "1", "-2"), cmd("lrange", "l", "0", "-1"),
		cmd("lpop", "l"), cmd("rpop", "l"), cmd("lpop", "l", "0"), cmd("lpop", "l", "-1"), cmd("lpop", "nokey"), cmd("lpop", "nokey", "2"),
		cmd("rpush", "l", "1", "2", "3", "4"), cmd("rpop", "l", "2"), cmd("lpop", "l", "10"), cmd("exists", "l"), cmd("lpop", "l", "1", "2"),
		cmd("lpushx", "l", "a"), cmd("rpushx", "l", "a"), cmd("exists", "l"),
		cmd("rpush", "src", "1", "2", "3"), cmd("lmove", "src", "dst", "left", "right"), cmd("lmove", "src", "dst", "right", "left"),
		cmd("lrange", "dst", "0", "-1"), cmd("rpoplpush", "src", "dst"), cmd("rpoplpush", "src", "dst"), cmd("exists", "src"),
		cmd("lmove", "dst", "dst", "left", "right"), cmd("lrange", "dst", "0", "-1"), cmd("lmove", "dst", "x", "up", "down"),
		cmd("lmpop", "2", "nokey", "dst", "left"), cmd("lmpop", "2", "nokey", "dst", "right", "count", "5"),
		cmd("lmpop", "0", "dst", "left"), cmd("lmpop", "1", "dst"), cmd("lmpop", "1", "dst", "left", "count", "0"), cmd("lmpop", "1", "nokey", "left"),
		cmd("set", "str", "x"), cmd("lpush", "str", "a"), cmd("lpushx", "str", "a"), cmd("lrange", "str", "0", "1"), cmd("lpop", "str"),
		cmd("rpush", "l2", "a"), cmd("lmove", "l2", "str", "left", "left"), cmd("lrange", "l2", "0", "-1"), cmd("type", "l2"),
		cmd("object", "encoding", "l2"),
	)
}

func TestRedisDiff_Sets(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("sadd", "s", "a", "b", "c", "a"), cmd("sadd", "s", "d"), cmd("scard", "s"), cmd("scard", "nokey"),
		cmd("sismember", "s", "a"), cmd("sismember", "s", "z"), cmd("smismember", "s", "a", "z", "b"),
		cmd("srem", "s", "a", "z"), cmd("scard", "s"), cmd("sadd", "t", "c", "d", "e"),
		cmd("sintercard", "2", "s", "t"), cmd("sintercard", "2", "s", "t", "limit", "1"), cmd("sintercard", "0", "s"),
		cmd("sintercard", "3", "s", "t"), cmd("sintercard", "1", "s", "limit", "-1"),
		cmd("sinterstore", "i", "s", "t"), cmd("sunionstore", "u", "s", "t"), cmd("sdiffstore", "d", "s", "t"),
		cmd("scard", "i"), cmd("scard", "u"), cmd("scard", "d"), cmd("sinterstore", "i", "s", "nokey"), cmd("exists", "i"),
		cmd("smove", "s", "t", "b"), cmd("smove", "s", "t", "zz"), cmd("sismember", "t", "b"),
		cmd("spop", "nokey"), cmd("spop", "nokey", "2"), cmd("srandmember", "nokey"), cmd("srandmember", "nokey", "3"),
		cmd("spop", "s", "-1"), cmd("srandmember", "s", "1", "2"), cmd("srandmember", "t", "0"),
		cmd("sscan", "nokey", "0"), cmd("sscan", "s", "abc"),
		cmd("set", "str", "x"), cmd("sadd", "str", "a"), cmd("smembers", "str"), cmd("sinter", "str", "s"),
		cmd("sinterstore", "str2", "s"), cmd("smove", "t", "str", "c"), cmd("type", "t"), cmd("object", "encoding", "t"),
		cmd("sadd", "ints", "1", "2", "-3"), cmd("object", "encoding", "ints"), cmd("spop", "t", "0"), cmd("srem", "t", "b", "c", "d", "e"), cmd("exists", "t"),
	)
}

func TestRedisDiff_SortedSets(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("zadd", "z", "1", "a", "2", "b", "3", "c"), cmd("zadd", "z", "1.5", "a", "10", "d"), cmd("zadd", "z", "ch", "1", "a", "10", "d"),
		cmd("zadd", "z", "ch", "7", "dup", "8", "dup", "1", "a"), cmd("zadd", "z", "7", "dup2", "8", "dup2", "1", "a"),
		cmd("zadd", "z", "nx", "100", "a"), cmd("zadd", "z", "xx", "100", "zz"), cmd("zadd", "z", "xx", "nx", "1", "a"),
		cmd("zadd", "z", "gt", "nx", "1", "a"), cmd("zadd", "z", "incr", "1", "a", "2", "b"), cmd("zadd", "z", "1"),
		cmd("zadd", "z", "x", "a"), cmd("zadd", "z", "nan", "a"), cmd("zadd", "z", "incr", "0.1", "a"),
		cmd("zadd", "z", "gt", "ch", "0", "a", "50", "b"), cmd("zadd", "z", "lt", "ch", "0", "a", "60", "b"),
		cmd("zadd", "z", "xx", "incr", "1", "nope"), cmd("zadd", "z", "gt", "incr", "-1", "a"),
		cmd("zadd", "inf", "inf", "x"), cmd("zadd", "inf", "incr", "-inf", "x"), cmd("zscore", "inf", "x"),
		cmd("zscore", "z", "a"), cmd("zscore", "z", "nope"), cmd("zscore", "nokey", "a"), cmd("zmscore", "z", "a", "nope", "c"),
		cmd("zincrby", "z", "2.5", "c"), cmd("zincrby", "z", "x", "c"), cmd("zcard", "z"), cmd("zcard", "nokey"),
		cmd("zrange", "z", "0", "-1"), cmd("zrange", "z", "0", "-1", "withscores"), cmd("zrange", "z", "1", "2", "rev", "withscores"),
		cmd("zrange", "z", "(1", "10", "byscore", "withscores"), cmd("zrange", "z", "+inf", "-inf", "byscore", "rev"),
		cmd("zrange", "z", "-inf", "+inf", "byscore", "limit", "1", "2"), cmd("zrange", "z", "0", "-1", "limit", "1", "2"),
		cmd("zrange", "z", "-", "+", "bylex", "withscores"), cmd("zrange", "z", "x", "y", "byscore"), cmd("zrange", "z", "x", "y", "bylex"),
		cmd("zrange", "z", "0", "1", "foo"), cmd("zrangebyscore", "z", "-inf", "(10", "withscores", "limit", "0", "1"),
		cmd("zrevrangebyscore", "z", "10", "-inf"), cmd("zrevrange", "z", "0", "0", "withscores"),
		cmd("zcount", "z", "-inf", "+inf"), cmd("zcount", "z", "(1.6", "3"), cmd("zcount", "z", "a", "3"),
		cmd("zrank", "z", "c"), cmd("zrevrank", "z", "c"), cmd("zrank", "z", "nope"), cmd("zrank", "nokey", "a"),
		cmd("zadd", "lex", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e"), cmd("zrangebylex", "lex", "[b", "(d"),
		cmd("zrevrangebylex", "lex", "+", "[c"), cmd("zrangebylex", "lex", "-", "+", "limit", "1", "2"), cmd("zlexcount", "lex", "(a", "[c"),
		cmd("zrangebylex", "lex", "b", "c"), cmd("zrangebylex", "lex", "+", "-"), cmd("zremrangebylex", "lex", "[b", "[c"), cmd("zrange", "lex", "0", "-1"),
		cmd("zrangestore", "dst", "z", "0", "1"), cmd("zrange", "dst", "0", "-1", "withscores"), cmd("zrangestore", "dst", "nokey", "0", "1"), cmd("exists", "dst"),
		cmd("zremrangebyrank", "z", "0", "0"), cmd("zremrangebyscore", "z", "(2", "+inf"), cmd("zrange", "z", "0", "-1", "withscores"),
		cmd("zadd", "p", "1", "a", "2", "b", "3", "c", "4", "d"), cmd("zpopmin", "p"), cmd("zpopmax", "p", "2"), cmd("zpopmin", "p", "0"),
		cmd("zpopmin", "p", "-1"), cmd("zpopmin", "nokey"), cmd("zpopmax", "p", "5"), cmd("exists", "p"),
		cmd("zadd", "p", "1", "a", "2", "b"), cmd("zmpop", "2", "nokey", "p", "max", "count", "5"), cmd("zmpop", "1", "p", "min"), cmd("zmpop", "1", "p", "foo"),
		cmd("zadd", "u1", "1", "a", "2", "b"), cmd("zadd", "u2", "10", "b", "20", "c"), cmd("sadd", "s1", "a", "c", "x"),
		cmd("zunion", "2", "u1", "u2", "withscores"), cmd("zunion", "2", "u1", "u2", "weights", "2", "3", "aggregate", "max", "withscores"),
		cmd("zinter", "2", "u1", "u2", "withscores"), cmd("zinter", "3", "u1", "u2", "s1"), cmd("zdiff", "2", "u1", "u2", "withscores"),
		cmd("zunionstore", "out", "3", "u1", "u2", "s1", "aggregate", "min"), cmd("zrange", "out", "0", "-1", "withscores"),
		cmd("zinterstore", "out", "2", "u1", "u2", "weights", "1", "x"), cmd("zdiffstore", "out", "1", "u1"), cmd("zrange", "out", "0", "-1"),
		cmd("zintercard", "2", "u1", "u2"), cmd("zintercard", "2", "u1", "u2", "limit", "0"), cmd("zintercard", "0", "u1"),
		cmd("zunion", "0", "u1"), cmd("zunion", "3", "u1"), cmd("zunionstore", "out", "0", "u1"), cmd("zdiff", "2", "u1", "u2", "weights", "1", "2"),
		cmd("zrandmember", "nokey"), cmd("zrandmember", "nokey", "5"), cmd("zrandmember", "u1", "0"), cmd("zscan", "u1", "0"),
		cmd("set", "str", "x"), cmd("zadd", "str", "1", "a"), cmd("zscore", "str", "a"), cmd("zrange", "str", "0", "1"), cmd("zunion", "2", "u1", "str"),
		cmd("type", "u1"), cmd("object", "encoding", "u1"), cmd("zrem", "u1", "a", "b", "c"), cmd("exists", "u1"),
		cmd("zadd", "f", "1.1", "a", "0.1", "b", "-0", "c", "1e20", "d", "123456789012345678", "e"), cmd("zrange", "f", "0", "-1", "withscores"),
		cmd("zadd", "f", "ch", "0", "c"), cmd("zrange", "f", "0", "-1", "withscores"),
	)
}

// A string write that does not read the old value (SET and its options,
// SETEX, PSETEX, MSET) replaces a key of any kind, as Redis's does; one that
// only tests existence (NX, XX, SETNX, MSETNX) sees a collection as a key
// that exists; one that returns or changes the old string (GET, GETSET,
// GETDEL, GETEX, APPEND, INCR) answers WRONGTYPE. The same inside a script
// and a transaction (the rate limiter's script SETs over a foreign hash).
func TestRedisDiff_StringWritesOverACollectionKey(t *testing.T) {
	p := newPair(t, resp.Options{})
	kinds := [][]any{
		cmd("hset", "c", "f", "1"), cmd("rpush", "c", "a"), cmd("sadd", "c", "m"), cmd("zadd", "c", "1", "m"),
	}
	writes := [][]any{
		cmd("set", "c", "v", "px", "100000"), cmd("set", "c", "v", "ex", "100"), cmd("set", "c", "v", "keepttl"),
		cmd("set", "c", "v", "nx"), cmd("set", "c", "v", "xx"), cmd("set", "c", "v", "xx", "get"),
		cmd("set", "c", "v", "get"), cmd("set", "c", "v", "nx", "get"), cmd("set", "c", "v"),
		cmd("setnx", "c", "v"), cmd("setex", "c", "100", "v"), cmd("psetex", "c", "100000", "v"),
		cmd("msetnx", "c", "v"), cmd("msetnx", "fresh", "v", "c", "v"), cmd("mset", "c", "v", "other", "w"),
		cmd("getset", "c", "v"), cmd("getdel", "c"), cmd("getex", "c", "px", "100"), cmd("get", "c"),
		cmd("append", "c", "v"), cmd("incr", "c"), cmd("setrange", "c", "0", "v"), cmd("strlen", "c"),
		cmd("eval", "return redis.call('set', KEYS[1], 'v', 'px', 100000)", "1", "c"),
		cmd("eval", "return redis.call('set', KEYS[1], 'v', 'keepttl')", "1", "c"),
		cmd("eval", "return redis.call('set', KEYS[1], 'v')", "1", "c"),
		cmd("eval", "return redis.call('setnx', KEYS[1], 'v')", "1", "c"),
		cmd("eval", "return redis.call('mset', KEYS[1], 'v')", "1", "c"),
		cmd("eval", "return redis.call('msetnx', KEYS[1], 'v')", "1", "c"),
		cmd("eval", "local r = redis.pcall('get', KEYS[1]); redis.call('set', KEYS[1], 'v', 'px', 100000); return {type(r), redis.call('get', KEYS[1])}", "1", "c"),
	}
	for _, kind := range kinds {
		for _, w := range writes {
			p.sameOn(cmd("del", "c", "fresh", "other"), kind, cmd("pexpire", "c", "50000"), w,
				cmd("type", "c"), cmd("get", "c"), cmd("ttl", "c"), cmd("exists", "fresh", "other"))
			p.sameOn(cmd("del", "c", "fresh", "other"), kind, cmd("multi"), w, cmd("exec"),
				cmd("type", "c"), cmd("ttl", "c"), cmd("exists", "fresh", "other"))
		}
	}
}
