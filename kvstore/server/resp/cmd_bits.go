package resp

// BITOP and LCS: commands over several string values, each read (and, for
// BITOP, written) in one update so that they see one state of the keyspace.
// LCS builds Redis's O(len(a)*len(b)) table; a table larger than
// lcsMaxTableBytes is refused before anything is allocated.

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/devkit-go/devkit/kvstore"
)

// lcsMaxTableBytes bounds LCS's transient table (4 bytes a cell, as in
// Redis): about two 4 KiB strings. Redis's bound is proto-max-bulk-len
// (512 MiB), too much for one request on a shared server.
const lcsMaxTableBytes = 64 << 20

// getString reads a string value for a command that treats a missing key as
// empty; found is false for a missing key.
func getString(tx txn, key []byte) (v []byte, found bool, err error) {
	v, err = tx.Get(key)
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return bytes.Clone(v), true, nil
}

// cmdBitOp answers BITOP AND|OR|XOR|NOT dest src...: the result is as long as
// the longest source (shorter ones count as zero bytes); an empty result
// deletes dest. dest is overwritten whatever it holds, its expiry dropped.
func cmdBitOp(c *call) {
	op := strings.ToUpper(string(c.args[1]))
	dest, srcs := c.args[2], c.args[3:]
	switch op {
	case "AND", "OR", "XOR":
	case "NOT":
		if len(srcs) != 1 {
			c.w.error("ERR BITOP NOT must be called with a single source key.")
			return
		}
	default:
		c.fail(errSyntax)
		return
	}
	var n int
	err := c.update(func(tx txn) error {
		values := make([][]byte, len(srcs))
		for i, k := range srcs {
			v, _, err := getString(tx, k)
			if err != nil {
				return err
			}
			values[i] = v
			n = max(n, len(v))
		}
		if n == 0 {
			existed, err := tx.Delete(dest)
			if err == nil && existed {
				notify(tx, notifyGeneric, "del", dest)
			}
			return err
		}
		notifyNewKey(tx, dest)
		if err := tx.Set(dest, bitOp(op, values, n)); err != nil {
			return err
		}
		notify(tx, notifyString, "set", dest)
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(int64(n))
}

// bitOp combines values byte by byte into n bytes.
func bitOp(op string, values [][]byte, n int) []byte {
	out := make([]byte, n)
	at := func(v []byte, i int) byte {
		if i < len(v) {
			return v[i]
		}
		return 0
	}
	for i := range out {
		b := at(values[0], i)
		for _, v := range values[1:] {
			switch op {
			case "AND":
				b &= at(v, i)
			case "OR":
				b |= at(v, i)
			case "XOR":
				b ^= at(v, i)
			}
		}
		if op == "NOT" {
			b = ^b
		}
		out[i] = b
	}
	return out
}

// lcsOptions are LCS's options.
type lcsOptions struct {
	getLen, getIdx, withMatchLen bool
	minMatchLen                  int64
}

// cmdLCS answers LCS a b [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN] as
// Redis 7.0 does: the keys are checked first, then the options.
func cmdLCS(c *call) {
	var a, b []byte
	err := c.update(func(tx txn) error {
		var err error
		if a, _, err = getString(tx, c.args[1]); err != nil {
			return err
		}
		b, _, err = getString(tx, c.args[2])
		return err
	})
	switch {
	case errors.Is(err, kvstore.ErrWrongType):
		c.w.error("ERR The specified keys must contain string values")
		return
	case err != nil:
		c.fail(err)
		return
	}
	var o lcsOptions
	for j := 3; j < len(c.args); j++ {
		switch opt := strings.ToUpper(string(c.args[j])); {
		case opt == "IDX":
			o.getIdx = true
		case opt == "LEN":
			o.getLen = true
		case opt == "WITHMATCHLEN":
			o.withMatchLen = true
		case opt == "MINMATCHLEN" && j+1 < len(c.args):
			n, ok := parseStrictInt(c.args[j+1])
			if !ok {
				c.fail(errNotInteger)
				return
			}
			o.minMatchLen = max(n, 0)
			j++
		default:
			c.fail(errSyntax)
			return
		}
	}
	if o.getLen && o.getIdx {
		c.w.error("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	if cells := int64(len(a)+1) * int64(len(b)+1); cells*4 > lcsMaxTableBytes {
		c.w.error(fmt.Sprintf("ERR Insufficient memory, transient memory for LCS exceeds the server's bound (%d MiB)", lcsMaxTableBytes>>20))
		return
	}
	lcsReply(c.w, a, b, o)
}

// lcsMatch is one run of common bytes: a[aStart..aEnd] = b[bStart..bEnd].
type lcsMatch struct{ aStart, aEnd, bStart, bEnd int }

// lcsReply computes Redis's LCS table and walks it back from the end, as
// Redis does, so that the string and the matches are the ones Redis gives.
func lcsReply(w *replyWriter, a, b []byte, o lcsOptions) {
	cols := len(b) + 1
	table := make([]uint32, (len(a)+1)*cols)
	at := func(i, j int) uint32 { return table[i*cols+j] }
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				table[i*cols+j] = at(i-1, j-1) + 1
			} else {
				table[i*cols+j] = max(at(i-1, j), at(i, j-1))
			}
		}
	}
	total := at(len(a), len(b))
	if o.getLen {
		w.integer(int64(total))
		return
	}
	result := make([]byte, total)
	var matches []lcsMatch
	idx := int(total)
	cur, open := lcsMatch{}, false
	for i, j := len(a), len(b); i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			switch {
			case !open:
				cur, open = lcsMatch{i - 1, i - 1, j - 1, j - 1}, true
			case cur.aStart == i && cur.bStart == j:
				cur.aStart--
				cur.bStart--
			default:
				emit = true
			}
			if cur.aStart == 0 || cur.bStart == 0 {
				emit = true
			}
			idx, i, j = idx-1, i-1, j-1
		} else {
			if at(i-1, j) > at(i, j-1) {
				i--
			} else {
				j--
			}
			emit = open
		}
		if emit {
			if n := cur.aEnd - cur.aStart + 1; o.minMatchLen == 0 || int64(n) >= o.minMatchLen {
				matches = append(matches, cur)
			}
			open = false
		}
	}
	if !o.getIdx {
		w.bulk(result)
		return
	}
	w.mapLen(2)
	w.bulkString("matches")
	w.array(len(matches))
	for _, m := range matches {
		w.array(2 + int(boolInt64(o.withMatchLen)))
		w.array(2)
		w.integer(int64(m.aStart))
		w.integer(int64(m.aEnd))
		w.array(2)
		w.integer(int64(m.bStart))
		w.integer(int64(m.bEnd))
		if o.withMatchLen {
			w.integer(int64(m.aEnd - m.aStart + 1))
		}
	}
	w.bulkString("len")
	w.integer(int64(total))
}
