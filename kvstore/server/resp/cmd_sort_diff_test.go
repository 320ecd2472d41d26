//go:build unix

package resp_test

import (
	"testing"

	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// SORT and SORT_RO answer as redis-server does: numeric and ALPHA order,
// ASC/DESC, LIMIT at and past the edges, BY a key pattern, a hash field
// or a constant (no sorting), GET # and key patterns and hash fields,
// STORE (and its delete when empty), a set BY a constant from a script
// (sorted, as Redis does), COMMAND GETKEYS, and Redis's errors.
func TestRedisDiff_SortMatchesRedis(t *testing.T) {
	p := newPair(t, resp.Options{AllowFlush: true})
	p.same(cmd("flushall"),
		cmd("rpush", "l", "3", "1", "2", "10", "-5", "2.5"),
		cmd("sort", "l"), cmd("sort", "l", "desc"), cmd("sort", "l", "alpha"), cmd("sort", "l", "alpha", "desc"),
		cmd("sort", "l", "limit", "1", "2"), cmd("sort", "l", "limit", "-3", "2"), cmd("sort", "l", "limit", "4", "100"),
		cmd("sort", "l", "limit", "6", "1"), cmd("sort", "l", "limit", "100", "1"), cmd("sort", "l", "limit", "0", "0"),
		cmd("sort", "l", "limit", "0", "-1"), cmd("sort", "l", "desc", "limit", "1", "2"),
		cmd("sort", "l", "by", "nosort"), cmd("sort", "l", "by", "nosort", "desc"), cmd("sort", "l", "by", "nosort", "limit", "1", "3"),
		cmd("sort", "l", "by", "nosort", "desc", "limit", "1", "3"),
		cmd("mset", "w_3", "30", "w_1", "10", "w_2", "20", "w_10", "5", "w_-5", "50", "o_1", "one", "o_2", "two"),
		cmd("sort", "l", "by", "w_*"), cmd("sort", "l", "by", "w_*", "desc", "limit", "0", "3"),
		cmd("sort", "l", "by", "w_*", "get", "#", "get", "o_*", "get", "nope_*", "get", "const"),
		cmd("hset", "h_1", "f", "b"), cmd("hset", "h_2", "f", "a"), cmd("hset", "h_3", "f", "c"),
		cmd("sort", "l", "by", "h_*->f", "alpha"), cmd("sort", "l", "by", "h_*->f", "alpha", "desc", "get", "h_*->f", "get", "#"),
		cmd("sort", "l", "get", "h_*->"), cmd("sort", "l", "get", "w_*->f"), cmd("sort", "l", "by", "h_*->f"),
		cmd("sort", "l", "store", "dst"), cmd("lrange", "dst", "0", "-1"), cmd("type", "dst"),
		cmd("sort", "l", "get", "o_*", "store", "dst"), cmd("lrange", "dst", "0", "-1"),
		cmd("set", "s1", "x"), cmd("sort", "nope", "store", "s1"), cmd("exists", "s1"), cmd("sort", "nope"),
		cmd("sort_ro", "l", "desc"), cmd("sort_ro", "l", "store", "x"), cmd("sort", "l", "limit", "1"),
		cmd("sort", "l", "limit", "a", "1"), cmd("sort", "l", "nope"), cmd("sort", "l", "by"),
		cmd("rpush", "bad", "1", "x", "2"), cmd("sort", "bad"), cmd("sort", "bad", "alpha"), cmd("sort", "bad", "store", "d2"),
		cmd("set", "str", "1"), cmd("sort", "str"), cmd("sort", "str", "nope"), cmd("hset", "hh", "a", "1"), cmd("sort", "hh"),
		cmd("sadd", "set", "5", "3", "9", "1"), cmd("sort", "set"), cmd("sort", "set", "desc", "limit", "1", "2"),
		cmd("sort", "set", "by", "nosort", "store", "d3"), cmd("lrange", "d3", "0", "-1"),
		cmd("sadd", "aset", "banana", "apple", "cherry"), cmd("sort", "aset", "alpha"), cmd("sort", "aset"),
		cmd("zadd", "z", "1", "c", "2", "a", "3", "b"), cmd("sort", "z", "alpha"), cmd("sort", "z", "by", "nosort"),
		cmd("sort", "z", "by", "nosort", "desc", "limit", "1", "1"), cmd("sort", "z", "by", "nosort", "limit", "1", "5"),
		cmd("rpush", "eq", "b", "a", "c"), cmd("mset", "k_a", "1", "k_b", "1", "k_c", "0"), cmd("sort", "eq", "by", "k_*"),
		cmd("rpush", "sp", " 1", "", "1e3", "-inf", "+inf"), cmd("sort", "sp"),
		cmd("sadd", "many", "a", "b", "c", "d", "e", "f", "g", "h", "i", "l", "m", "z", "aa", "aaa", "azz"),
		cmd("eval", "return redis.call('sort',KEYS[1],'by','_')", "1", "many"),
		cmd("eval", "return redis.call('sort',KEYS[1],'by','_','get','#','get','_:*')", "1", "aset"),
		cmd("eval", "return redis.call('sort',KEYS[1],'desc')", "1", "set"),
		cmd("eval", "return redis.call('sort_ro',KEYS[1],'by','_','limit',1,1)", "1", "many"),
		cmd("command", "getkeys", "sort", "abc", "store", "def"),
		cmd("command", "getkeys", "sort", "abc", "store", "invalid", "store", "stillbad", "store", "def"),
		cmd("command", "getkeys", "sort", "abc", "get", "store", "by", "store"), cmd("command", "getkeys", "sort_ro", "abc"),
		cmd("command", "getkeysandflags", "sort", "abc", "limit", "0", "1", "store", "def"),
	)
}
