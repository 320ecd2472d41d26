//go:build unix

package resp_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// hexLua defines hex(s), the bytes of s in hex, for comparing packed output.
const hexLua = "local function hex(s) return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end)) end "

// cmsgpack packs and unpacks as Redis 7.0's lua-cmsgpack, byte for byte:
// each form of integer at its bounds, float32 against float64, the string
// and container headers at their bounds, arrays against maps, the nesting
// bound, several values in one string, the offsets of unpack_one and
// unpack_limit, and the errors of bad input.
func TestRedisDiff_CmsgpackPacksAndUnpacksAsRedis(t *testing.T) {
	p := newPair(t, resp.Options{})
	packs := []string{
		"0.1", "0.5", "-0.5", "1.5e300", "1/0", "-1/0", "0", "1", "127", "128", "255", "256", "65535", "65536",
		"4294967295", "4294967296", "2^53", "2^63", "-1", "-32", "-33", "-128", "-129", "-32768", "-32769",
		"-2147483648", "-2147483649", "-1099511627776", "-2^63", "true", "false", "nil", "''", "'x'",
		"string.rep('x', 31)", "string.rep('x', 32)", "string.rep('x', 255)", "{}", "{1,2,3}", "{a=1}",
		"{1,2,nil,4}", "{[1]=1,[3]=3}", "{[0]=1}", "{[1.5]=1}", "{1,{2,{3,{}}}}", "{x={y={z=true}}}",
		"function() end", "redis.call", "1, 'a', {1}, false",
	}
	var cmds [][]any
	for _, v := range packs {
		cmds = append(cmds, cmd("eval", hexLua+"return hex(cmsgpack.pack("+v+"))", "0"))
	}
	for _, n := range []string{"256", "65535", "65536"} {
		// The header of a long string, an array and a map (and the first
		// element, but not the first key: Lua's order of a table's keys
		// is its own in each interpreter).
		head := func(value string, bytes int) []any {
			return cmd("eval", hexLua+"return hex(string.sub(cmsgpack.pack("+value+"), 1, "+strconv.Itoa(bytes)+"))", "0")
		}
		size := map[string]int{"256": 3, "65535": 3, "65536": 5}[n]
		cmds = append(cmds,
			head("string.rep('x', "+n+")", size+1),
			head("(function() local t = {} for i = 1, "+n+" do t[i] = 1 end return t end)()", size+1),
			head("(function() local t = {} for i = 1, "+n+" do t['k'..i] = 1 end return t end)()", size))
	}
	p.same(cmds...)
	p.same(
		// A table that holds itself packs to 16 levels.
		cmd("eval", hexLua+"local a = {y=5} local b = {x=a} a.x = b return hex(cmsgpack.pack(a))", "0"),
		cmd("eval", "local a = {y=5} local b = {x=a} a.x = b local re = cmsgpack.unpack(cmsgpack.pack(a)) "+
			"return {re.x.x.y == re.y, re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.y, re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x == nil}", "0"),
		// Round trips.
		cmd("eval", "local t = cmsgpack.unpack(cmsgpack.pack({1, 'two', {3}, {k='v'}, true, 0.25, -7, 2^40})) "+
			"return {t[1], t[2], t[3][1], t[4].k, tostring(t[5]), tostring(t[6]), t[7], tostring(t[8])}", "0"),
		cmd("eval", "return {cmsgpack.unpack(cmsgpack.pack(1, 'a', 3))}", "0"),
		cmd("eval", "return select('#', cmsgpack.unpack(cmsgpack.pack(1, nil, 3)))", "0"),
		cmd("eval", "local s = cmsgpack.pack('a', 'bb', 'ccc') local o1, v1 = cmsgpack.unpack_one(s) "+
			"local o2, v2 = cmsgpack.unpack_one(s, o1) local o3, v3 = cmsgpack.unpack_one(s, o2) return {o1, v1, o2, v2, o3, v3}", "0"),
		cmd("eval", "local s = cmsgpack.pack(1, 2, 3, 4, 5) return {cmsgpack.unpack_limit(s, 2)}", "0"),
		cmd("eval", "local s = cmsgpack.pack(1, 2, 3, 4, 5) return {cmsgpack.unpack_limit(s, 2, 2)}", "0"),
		cmd("eval", "local s = cmsgpack.pack(1, 2, 3) return {cmsgpack.unpack_limit(s, 10, 1)}", "0"),
		cmd("eval", "return {cmsgpack.unpack_one(cmsgpack.pack(1), 1)}", "0"),
		// Decoded forms: each integer and float width, str 8/16/32, bin.
		cmd("eval", "return {cmsgpack.unpack('\\204\\255\\205\\255\\255\\206\\255\\255\\255\\255\\208\\128\\209\\128\\0\\210\\128\\0\\0\\0')}", "0"),
		cmd("eval", "return tostring(cmsgpack.unpack('\\202\\63\\192\\0\\0'))", "0"),
		cmd("eval", "return tostring(cmsgpack.unpack('\\207\\0\\32\\0\\0\\0\\0\\0\\1'))", "0"),
		cmd("eval", "return {cmsgpack.unpack('\\217\\3abc\\218\\0\\2de\\219\\0\\0\\0\\1f')}", "0"),
		cmd("eval", "return {cmsgpack.unpack('\\196\\2gh')}", "0"),
		cmd("eval", "return {cmsgpack.unpack('\\212\\1\\1')}", "0"),
		// Errors.
		cmd("eval", "return cmsgpack.pack()", "0"),
		cmd("eval", "return cmsgpack.unpack('\\146\\1')", "0"),
		cmd("eval", "return cmsgpack.unpack('\\193')", "0"),
		cmd("eval", "return cmsgpack.unpack('\\221\\255\\255\\255\\255')", "0"),
		cmd("eval", "return cmsgpack.unpack('\\219\\255\\255\\255\\255abc')", "0"),
		cmd("eval", "return cmsgpack.unpack_one('\\1', -1)", "0"),
		cmd("eval", "return cmsgpack.unpack_one('\\1', 5)", "0"),
		cmd("eval", "return cmsgpack.unpack_limit('\\1', -1)", "0"),
		cmd("eval", "return cmsgpack.unpack({})", "0"),
		cmd("eval", "return cmsgpack.unpack()", "0"),
		cmd("eval", "return cmsgpack.unpack_limit('\\1')", "0"),
		cmd("eval", "return cmsgpack.unpack_limit('\\1', 'x')", "0"),
		cmd("eval", "return {cmsgpack.unpack_limit('\\1\\2', '1')}", "0"),
		cmd("eval", "return {cmsgpack.unpack(5)}", "0"),
		cmd("eval", "cmsgpack.pack = function() return 1 end", "0"),
		cmd("eval", "return {cmsgpack._NAME, cmsgpack._VERSION}", "0"),
	)
}

// Hostile input leaves the server answering: a header claiming 4 Gi
// elements with none behind it, a nesting bomb, millions of values.
func TestCmsgpack_HostileInputIsAnErrorNotACrash(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c2 := range []struct{ script, want string }{
		{"return cmsgpack.unpack(string.rep('\\221\\255\\255\\255\\255', 1))", "Missing bytes in input."},
		{"return cmsgpack.unpack(string.rep('\\223\\255\\255\\255\\255', 1) .. '\\1')", "Missing bytes in input."},
		{"return cmsgpack.unpack(string.rep('\\145', 1000000) .. '\\1')", "Bad data format in input."},
		{"return cmsgpack.unpack(string.rep('\\1', 1000000))", "too many return values"},
	} {
		err := c.Eval(ctx, c2.script, nil).Err()
		if err == nil || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("%.60s: %v, want an error with %q", c2.script, err, c2.want)
		}
	}
	if v, err := c.Eval(ctx, "return cmsgpack.unpack(cmsgpack.pack('ok'))", nil).Result(); err != nil || v != "ok" {
		t.Fatalf("after the attacks: %v, %v", v, err)
	}
}
