package resp

// BITFIELD and BITFIELD_RO: integers of 1 to 64 bits (unsigned up to 63) at
// any bit offset of a string value. All operations of a call are parsed
// before any runs, and they run in one update, as in Redis 7.0.

import (
	"bytes"
	"math"
	"slices"
	"strings"
)

// bitfieldOverflow is how SET and INCRBY treat a result out of range.
type bitfieldOverflow uint8

const (
	overflowWrap bitfieldOverflow = iota
	overflowSat
	overflowFail
)

// bitfieldOp is one GET, SET or INCRBY of a BITFIELD call.
type bitfieldOp struct {
	op       string // GET, SET, INCRBY
	offset   uint64
	bits     uint
	signed   bool
	value    int64
	overflow bitfieldOverflow
}

func cmdBitField(c *call)   { bitField(c, false) }
func cmdBitFieldRO(c *call) { bitField(c, true) }

// parseBitfieldType parses i1..i64 or u1..u63.
func parseBitfieldType(b []byte) (bits uint, signed, ok bool) {
	if len(b) < 2 || (b[0] != 'i' && b[0] != 'u') {
		return 0, false, false
	}
	n, ok := parseStrictInt(b[1:])
	signed = b[0] == 'i'
	if !ok || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		return 0, false, false
	}
	return uint(n), signed, true
}

// bitfieldOffset parses a bit offset, or #n for the n-th field of bits bits.
func (c *call) bitfieldOffset(b []byte, bits uint) (uint64, bool) {
	hash := len(b) > 0 && b[0] == '#'
	if hash {
		b = b[1:]
	}
	n, ok := parseStrictInt(b)
	if hash {
		n *= int64(bits)
	}
	if !ok || n < 0 || n>>3 >= int64(c.s.limits.MaxValueSize) {
		c.w.error("ERR bit offset is not an integer or out of range")
		return 0, false
	}
	return uint64(n), true
}

// parseBitfield parses BITFIELD's operations; readonly is whether all are GET.
func (c *call) parseBitfield(args [][]byte) (ops []bitfieldOp, readonly, ok bool) {
	overflow := overflowWrap
	readonly = true
	for j := 0; j < len(args); j++ {
		rest := len(args) - j - 1
		op := strings.ToUpper(string(args[j]))
		switch {
		case op == "GET" && rest >= 2, (op == "SET" || op == "INCRBY") && rest >= 3:
		case op == "OVERFLOW" && rest >= 1:
			j++
			switch strings.ToUpper(string(args[j])) {
			case "WRAP":
				overflow = overflowWrap
			case "SAT":
				overflow = overflowSat
			case "FAIL":
				overflow = overflowFail
			default:
				c.w.error("ERR Invalid OVERFLOW type specified")
				return nil, false, false
			}
			continue
		default:
			c.fail(errSyntax)
			return nil, false, false
		}
		bits, signed, ok := parseBitfieldType(args[j+1])
		if !ok {
			c.w.error("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
			return nil, false, false
		}
		offset, ok := c.bitfieldOffset(args[j+2], bits)
		if !ok {
			return nil, false, false
		}
		o := bitfieldOp{op: op, offset: offset, bits: bits, signed: signed, overflow: overflow}
		if op != "GET" {
			readonly = false
			if o.value, ok = parseStrictInt(args[j+3]); !ok {
				c.fail(errNotInteger)
				return nil, false, false
			}
			j++
		}
		j += 2
		ops = append(ops, o)
	}
	return ops, readonly, true
}

func bitField(c *call, roCommand bool) {
	key := c.args[1]
	ops, readonly, ok := c.parseBitfield(c.args[2:])
	if !ok {
		return
	}
	if !readonly && roCommand {
		c.w.error("ERR BITFIELD_RO only supports the GET subcommand")
		return
	}
	replies := make([]*int64, len(ops))
	err := c.update(func(tx txn) error {
		cur, found, err := getString(tx, key)
		if err != nil {
			return err
		}
		if readonly {
			for i, o := range ops {
				v := o.get(cur)
				replies[i] = &v
			}
			return nil
		}
		// The value grows to the farthest bit written before any operation
		// runs (Redis creates or pads the key even when FAIL writes nothing).
		n := len(cur)
		for _, o := range ops {
			if o.op != "GET" {
				n = max(n, int((o.offset+uint64(o.bits)-1)>>3)+1)
			}
		}
		v := make([]byte, n)
		copy(v, cur)
		for i, o := range ops {
			replies[i] = o.apply(v)
		}
		writes := slices.ContainsFunc(ops, func(o bitfieldOp) bool { return o.op != "GET" })
		if found && bytes.Equal(v, cur) {
			if writes {
				notify(tx, notifyString, "setbit", key) // Redis notifies a SET or INCRBY even so
			}
			return nil
		}
		if !found {
			notify(tx, notifyNew, "new", key)
		}
		if err := tx.SetKeepTTL(key, v); err != nil {
			return err
		}
		if writes {
			notify(tx, notifyString, "setbit", key)
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.array(len(replies))
	for _, r := range replies {
		if r == nil {
			c.w.null()
		} else {
			c.w.integer(*r)
		}
	}
}

// getBits reads bits bits at offset as an unsigned number (zeros past the end).
func getBits(p []byte, offset uint64, bits uint) uint64 {
	var v uint64
	for i := range uint64(bits) {
		pos := offset + i
		var bit uint64
		if byteAt := pos >> 3; byteAt < uint64(len(p)) {
			bit = uint64(p[byteAt]>>(7-pos&7)) & 1
		}
		v = v<<1 | bit
	}
	return v
}

// setBits writes the low bits bits of v at offset; p is long enough.
func setBits(p []byte, offset uint64, bits uint, v uint64) {
	for i := range uint64(bits) {
		pos := offset + i
		mask := byte(1) << (7 - pos&7)
		if v>>(uint64(bits)-1-i)&1 != 0 {
			p[pos>>3] |= mask
		} else {
			p[pos>>3] &^= mask
		}
	}
}

// get is the field's value, sign-extended for a signed type.
func (o bitfieldOp) get(p []byte) int64 {
	u := getBits(p, o.offset, o.bits)
	if o.signed && o.bits < 64 && u>>(o.bits-1)&1 != 0 {
		u |= math.MaxUint64 << o.bits
	}
	return int64(u)
}

// apply runs a GET, SET or INCRBY on p; nil is FAIL's answer to an overflow
// (nothing is written).
func (o bitfieldOp) apply(p []byte) *int64 {
	old := o.get(p)
	if o.op == "GET" {
		return &old
	}
	var next int64
	var overflow bool
	if o.op == "INCRBY" {
		next, overflow = o.add(old, o.value)
	} else {
		next, overflow = o.add(o.value, 0)
	}
	if overflow && o.overflow == overflowFail {
		return nil
	}
	setBits(p, o.offset, o.bits, uint64(next))
	reply := next
	if o.op == "SET" {
		reply = old
	}
	return &reply
}

// add is value+incr in the field's type under its overflow rule, as Redis's
// check{Signed,Unsigned}BitfieldOverflow compute it.
func (o bitfieldOp) add(value, incr int64) (int64, bool) {
	if !o.signed {
		u := uint64(value)
		limit := uint64(1)<<o.bits - 1
		maxIncr, minIncr := int64(limit-u), -int64(u)
		var sat uint64
		switch {
		case u > limit || (incr > 0 && incr > maxIncr):
			sat = limit
		case incr < 0 && incr < minIncr:
			sat = 0
		default:
			return int64(u + uint64(incr)), false
		}
		if o.overflow == overflowSat {
			return int64(sat), true
		}
		return int64((u + uint64(incr)) &^ (math.MaxUint64 << o.bits)), true
	}
	hi := int64(math.MaxInt64)
	if o.bits < 64 {
		hi = int64(1)<<(o.bits-1) - 1
	}
	lo := -hi - 1
	maxIncr, minIncr := int64(uint64(hi)-uint64(value)), lo-value
	var sat int64
	switch {
	case value > hi || (o.bits != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr):
		sat = hi
	case value < lo || (o.bits != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr):
		sat = lo
	default:
		return value + incr, false
	}
	if o.overflow == overflowSat {
		return sat, true
	}
	c := uint64(value) + uint64(incr)
	if o.bits < 64 {
		mask := uint64(math.MaxUint64) << o.bits
		if c&(uint64(1)<<(o.bits-1)) != 0 {
			c |= mask
		} else {
			c &^= mask
		}
	}
	return int64(c), true
}
