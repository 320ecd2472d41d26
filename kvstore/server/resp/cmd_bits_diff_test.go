//go:build unix

package resp_test

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore/server/resp"
)

func TestRedisDiff_BitOpCombinesPadsAndOverwrites(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("set", "a", "\xff\x0f\x55"), cmd("set", "b", "\xf0"), cmd("set", "c", "abc"),
		cmd("bitop", "and", "d", "a", "b"), cmd("get", "d"),
		cmd("bitop", "or", "d", "a", "b", "c"), cmd("get", "d"),
		cmd("bitop", "xor", "d", "a", "c", "nosuch"), cmd("get", "d"),
		cmd("bitop", "not", "d", "a"), cmd("get", "d"),
		cmd("bitop", "not", "d", "a", "b"), cmd("bitop", "nand", "d", "a"), cmd("bitop", "and", "d"),
		cmd("expire", "d", "100"), cmd("bitop", "or", "d", "a"), cmd("ttl", "d"),
		cmd("bitop", "and", "d", "nosuch", "nosuch2"), cmd("exists", "d"),
		cmd("hset", "h", "f", "v"), cmd("bitop", "and", "d", "a", "h"),
		cmd("bitop", "or", "h", "a"), cmd("type", "h"), cmd("get", "h"),
		cmd("command", "getkeysandflags", "bitop", "and", "d", "a", "b"),
	)
}

func TestRedisDiff_LCSStringLenAndMatches(t *testing.T) {
	p := newPair(t, resp.Options{})
	p.same(
		cmd("mset", "a", "ohmytext", "b", "mynewtext", "x", "rhcdtyuibaaaac", "y", "ahxcdtiyuaabaaac"),
		cmd("lcs", "a", "b"), cmd("lcs", "a", "b", "len"), cmd("lcs", "a", "b", "idx"),
		cmd("lcs", "a", "b", "idx", "minmatchlen", "4"), cmd("lcs", "a", "b", "idx", "minmatchlen", "4", "withmatchlen"),
		cmd("lcs", "a", "b", "idx", "withmatchlen"), cmd("lcs", "x", "y", "idx", "withmatchlen"),
		cmd("lcs", "x", "y"), cmd("lcs", "y", "x", "idx", "minmatchlen", "-3"),
		cmd("lcs", "a", "nosuch"), cmd("lcs", "nosuch", "a", "idx"), cmd("lcs", "a", "b", "len", "idx"),
		cmd("lcs", "a", "b", "minmatchlen"), cmd("lcs", "a", "b", "minmatchlen", "x"), cmd("lcs", "a", "b", "foo"),
		cmd("lpush", "l", "x"), cmd("lcs", "a", "l"), cmd("lcs", "l", "a", "foo"), cmd("lcs", "a"),
	)
	big := strings.Repeat("ab", 5000)
	p.ours.Set(t.Context(), "big", big, 0)
	if got := reply(p.ours, "lcs", "big", "big"); !strings.Contains(got, "Insufficient memory, transient memory for LCS exceeds") {
		t.Errorf("LCS of two 10000-byte values = %.80s; want the bound's error", got)
	}
}

func TestRedisDiff_BitFieldOperationsAndErrors(t *testing.T) {
	p := newPair(t, resp.Options{})
	bf := func(args ...any) []any { return append([]any{"bitfield"}, args...) }
	p.same(
		bf("k", "set", "u8", "0", "255", "get", "u8", "0", "get", "i8", "0", "get", "u4", "#1"),
		bf("k", "incrby", "u2", "100", "1", "overflow", "sat", "incrby", "u2", "102", "5", "overflow", "fail", "incrby", "u2", "104", "5"),
		cmd("get", "k"), cmd("strlen", "k"),
		bf("k", "set", "i64", "#3", "-9223372036854775808", "incrby", "i64", "#3", "-1", "get", "i64", "#3"),
		bf("k", "overflow", "sat", "incrby", "i64", "#3", "-1", "overflow", "wrap", "set", "i5", "7", "100"),
		bf("k", "set", "u63", "0", "-1", "get", "u63", "0"),
		bf("k"), bf("nosuch", "get", "u8", "1000"), cmd("exists", "nosuch"),
		bf("new", "overflow", "fail", "set", "u2", "0", "9"), cmd("get", "new"),
		bf("k", "get", "u64", "0"), bf("k", "get", "i65", "0"), bf("k", "get", "x8", "0"), bf("k", "get", "u0", "0"),
		bf("k", "get", "u8", "-1"), bf("k", "get", "u8", "#"), bf("k", "get", "u8", "x"), bf("k", "set", "u8", "0", "x"),
		bf("k", "overflow", "nope", "get", "u8", "0"), bf("k", "get", "u8"), bf("k", "nope", "u8", "0"), bf("k", "overflow"),
		cmd("bitfield_ro", "k", "get", "u8", "0", "get", "i16", "#1"), cmd("bitfield_ro", "k", "set", "u8", "0", "1"),
		cmd("bitfield_ro", "k", "incrby", "u8", "0", "x"), cmd("bitfield_ro", "nosuch"),
		cmd("lpush", "l", "x"), bf("l", "get", "u8", "0"), bf("l", "set", "u8", "0", "1"), cmd("bitfield_ro", "l", "get", "u8", "0"),
		cmd("set", "t", "abc", "ex", "100"), bf("t", "set", "u8", "16", "100"), cmd("ttl", "t"), cmd("get", "t"),
		cmd("command", "getkeysandflags", "bitfield_ro", "k", "get", "u8", "0"),
	)
}

// TestRedisDiff_BitFieldRandomOperationsMatchRedis runs random SET and INCRBY
// calls of every width, sign and overflow rule on one key of both servers.
func TestRedisDiff_BitFieldRandomOperationsMatchRedis(t *testing.T) {
	p := newPair(t, resp.Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	values := []int64{0, 1, -1, 2, -2, 100, -100, math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32}
	var cmds [][]any
	for range 400 {
		c := []any{"bitfield", "r"}
		for range 1 + rng.IntN(3) {
			sign, bits := "i", 1+rng.IntN(64)
			if rng.IntN(2) == 0 {
				sign, bits = "u", 1+rng.IntN(63)
			}
			v := values[rng.IntN(len(values))]
			if rng.IntN(2) == 0 {
				v = rng.Int64() >> rng.IntN(64)
			}
			op := []string{"set", "incrby", "get"}[rng.IntN(3)]
			c = append(c, "overflow", []string{"wrap", "sat", "fail"}[rng.IntN(3)], op,
				sign+strconv.Itoa(bits), strconv.Itoa(rng.IntN(80)))
			if op != "get" {
				c = append(c, strconv.FormatInt(v, 10))
			}
		}
		cmds = append(cmds, c)
	}
	cmds = append(cmds, cmd("get", "r"))
	p.same(cmds...)
}
