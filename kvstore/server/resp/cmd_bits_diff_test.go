//go:build unix

package resp_test

import (
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
