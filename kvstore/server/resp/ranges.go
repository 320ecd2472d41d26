package resp

// GETRANGE, SUBSTR, SETRANGE and the bit commands (SETBIT, GETBIT,
// BITCOUNT, BITPOS), with Redis 7.0's index rules and errors
// (t_string.c, bitops.c).

import (
	"errors"
	"math/bits"
	"strings"

	"github.com/devkit-go/devkit/kvstore"
)

// clampRange turns Redis's start and end (negative: from the end) into a
// range of a string of n units; ok is false for an empty range.
func clampRange(start, end, n int64) (int64, int64, bool) {
	if start < 0 && end < 0 && start > end {
		return 0, 0, false
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	return start, end, start <= end && n > 0
}

// cmdGetRange answers GETRANGE key start end (and SUBSTR): the bytes from
// start to end, both included.
func cmdGetRange(c *call) {
	start, ok1 := parseStrictInt(c.args[2])
	end, ok2 := parseStrictInt(c.args[3])
	if !ok1 || !ok2 {
		c.fail(errNotInteger)
		return
	}
	v, err := c.get(c.args[1])
	if err != nil && !errors.Is(err, kvstore.ErrNotFound) {
		c.fail(err)
		return
	}
	s, e, ok := clampRange(start, end, int64(len(v)))
	if !ok {
		c.w.bulk(nil)
		return
	}
	c.w.bulk(v[s : e+1])
}

// errTooLong is Redis's answer to a string that would outgrow the bound.
var errTooLong = cmdError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")

// cmdSetRange answers SETRANGE key offset value: the value written at
// offset, the string padded with zero bytes; its new length.
func cmdSetRange(c *call) {
	key, value := c.args[1], c.args[3]
	offset, ok := parseStrictInt(c.args[2])
	if !ok {
		c.fail(errNotInteger)
		return
	}
	if offset < 0 {
		c.fail(cmdError("ERR offset is out of range"))
		return
	}
	var n int
	err := c.update(func(tx txn) error {
		cur, err := tx.Get(key)
		if err != nil && !errors.Is(err, kvstore.ErrNotFound) {
			return err
		}
		if len(value) == 0 {
			n = len(cur) // nothing written (and a missing key stays missing)
			return nil
		}
		if offset > int64(c.s.limits.MaxValueSize)-int64(len(value)) {
			return errTooLong
		}
		size := max(len(cur), int(offset)+len(value))
		v := make([]byte, size)
		copy(v, cur)
		copy(v[offset:], value)
		n = size
		if err != nil {
			notify(tx, notifyNew, "new", key)
		}
		if err := tx.SetKeepTTL(key, v); err != nil {
			return err
		}
		notify(tx, notifyString, "setrange", key)
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(int64(n))
}

// bitOffset parses a bit offset as Redis does: a non-negative integer
// whose byte is within the largest value.
func (c *call) bitOffset(arg []byte) (int64, bool) {
	n, ok := parseStrictInt(arg)
	if !ok || n < 0 || n>>3 >= int64(c.s.limits.MaxValueSize) {
		c.fail(cmdError("ERR bit offset is not an integer or out of range"))
		return 0, false
	}
	return n, true
}

// cmdSetBit answers SETBIT key offset 0|1 with the bit's old value.
func cmdSetBit(c *call) {
	key := c.args[1]
	offset, ok := c.bitOffset(c.args[2])
	if !ok {
		return
	}
	on, ok := parseStrictInt(c.args[3])
	if !ok || on&^1 != 0 {
		c.fail(cmdError("ERR bit is not an integer or out of range"))
		return
	}
	byteAt, mask := offset>>3, byte(1)<<(7-offset&7)
	var old bool
	err := c.update(func(tx txn) error {
		cur, err := tx.Get(key)
		if err != nil && !errors.Is(err, kvstore.ErrNotFound) {
			return err
		}
		v := make([]byte, max(int64(len(cur)), byteAt+1))
		copy(v, cur)
		old = v[byteAt]&mask != 0
		if on == 1 {
			v[byteAt] |= mask
		} else {
			v[byteAt] &^= mask
		}
		if err == nil && len(v) == len(cur) && old == (on == 1) {
			return nil // nothing changes
		}
		if err != nil {
			notify(tx, notifyNew, "new", key)
		}
		if err := tx.SetKeepTTL(key, v); err != nil {
			return err
		}
		notify(tx, notifyString, "setbit", key)
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(old))
}

// cmdGetBit answers GETBIT key offset: 0 past the end or for a missing key.
func cmdGetBit(c *call) {
	offset, ok := c.bitOffset(c.args[2])
	if !ok {
		return
	}
	v, err := c.get(c.args[1])
	if err != nil && !errors.Is(err, kvstore.ErrNotFound) {
		c.fail(err)
		return
	}
	byteAt := offset >> 3
	c.w.integer(boolInt64(byteAt < int64(len(v)) && v[byteAt]&(1<<(7-offset&7)) != 0))
}

// bitSpan is a range of a string for BITCOUNT and BITPOS: the bytes to look
// at, the masks of the bits outside a BIT range in its first and last
// bytes, whether an end was given, and whether the range is empty.
type bitSpan struct {
	start, end         int64
	firstMask, lastMsk byte
	endGiven, empty    bool
}

// parseBitSpan parses [start end [BYTE|BIT]] (BITCOUNT) or [start [end
// [BYTE|BIT]]] (BITPOS: endOptional) over v as bitops.c does; false: an
// error reply is written.
func parseBitSpan(c *call, args [][]byte, v []byte, endOptional bool) (bitSpan, bool) {
	var sp bitSpan
	total := int64(len(v))
	sp.start, sp.end = 0, total-1
	if len(args) == 0 {
		sp.empty = sp.start > sp.end
		return sp, true
	}
	if len(args) > 3 || (len(args) == 1 && !endOptional) {
		c.fail(errSyntax)
		return sp, false
	}
	start, ok := parseStrictInt(args[0])
	if !ok {
		c.fail(errNotInteger)
		return sp, false
	}
	parseEnd := func() bool {
		var end int64
		if len(args) < 2 {
			sp.end = -1 // the last byte or bit, whichever the unit
			return true
		}
		if end, ok = parseStrictInt(args[1]); !ok {
			c.fail(errNotInteger)
			return false
		}
		sp.end, sp.endGiven = end, true
		return true
	}
	// BITCOUNT reads start and end, then answers an inverted negative
	// range at once, and only then reads the unit; BITPOS reads the unit
	// before the end (bitops.c).
	if !endOptional {
		if !parseEnd() {
			return sp, false
		}
		if start < 0 && sp.end < 0 && start > sp.end {
			sp.empty = true
			return sp, true
		}
	}
	isBit := false
	if len(args) == 3 {
		switch strings.ToUpper(string(args[2])) {
		case "BIT":
			isBit = true
		case "BYTE":
		default:
			c.fail(errSyntax)
			return sp, false
		}
	}
	if endOptional && !parseEnd() {
		return sp, false
	}
	end := sp.end
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if isBit && start <= end {
		sp.firstMask = ^byte(1<<(8-start&7) - 1)
		sp.lastMsk = byte(1<<(7-end&7) - 1)
		start >>= 3
		end >>= 3
	}
	sp.start, sp.end, sp.empty = start, end, start > end
	return sp, true
}

// cmdBitCount answers BITCOUNT key [start end [BYTE|BIT]].
func cmdBitCount(c *call) {
	v, err := c.get(c.args[1])
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		c.w.integer(0)
		return
	case err != nil:
		c.fail(err)
		return
	}
	sp, ok := parseBitSpan(c, c.args[2:], v, false)
	if !ok {
		return
	}
	if sp.empty {
		c.w.integer(0)
		return
	}
	n := 0
	for _, b := range v[sp.start : sp.end+1] {
		n += bits.OnesCount8(b)
	}
	n -= bits.OnesCount8(v[sp.start]&sp.firstMask) + bits.OnesCount8(v[sp.end]&sp.lastMsk)
	c.w.integer(int64(n))
}

// cmdBitPos answers BITPOS key bit [start [end [BYTE|BIT]]]: the first
// bit set to bit in the range, or -1. Past the end of the string a range
// without an explicit end reads as zeros, as in Redis.
func cmdBitPos(c *call) {
	bit, ok := parseStrictInt(c.args[2])
	if !ok {
		c.fail(errNotInteger)
		return
	}
	if bit != 0 && bit != 1 {
		c.fail(cmdError("ERR The bit argument must be 1 or 0."))
		return
	}
	v, err := c.get(c.args[1])
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		c.w.integer(-bit) // a missing key is zeros: 0 for a clear bit, -1 for a set one
		return
	case err != nil:
		c.fail(err)
		return
	}
	sp, ok := parseBitSpan(c, c.args[3:], v, true)
	if !ok {
		return
	}
	if sp.empty {
		c.w.integer(-1)
		return
	}
	// Look at each byte of the range with the bits outside it forced to
	// the opposite of bit, so that they are never found.
	for i := sp.start; i <= sp.end; i++ {
		b := v[i]
		var outside byte
		if i == sp.start {
			outside |= sp.firstMask
		}
		if i == sp.end {
			outside |= sp.lastMsk
		}
		if bit == 1 {
			b &^= outside
		} else {
			b |= outside
			b = ^b
		}
		if b != 0 {
			c.w.integer(i<<3 + int64(bits.LeadingZeros8(b)))
			return
		}
	}
	if bit == 1 || sp.endGiven {
		c.w.integer(-1)
		return
	}
	// Looking for a clear bit with no end given: the first bit past the range.
	c.w.integer((sp.end + 1) << 3)
}
