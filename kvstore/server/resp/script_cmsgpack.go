package resp

// cmsgpack, the MessagePack library Redis gives scripts (lua-cmsgpack 0.4.0,
// as Redis 7.0 builds it): pack, unpack, unpack_one and unpack_limit, with
// Redis's choices of encoding — a number that is an integer is the smallest
// integer form, another a float32 when that is exact, else a float64; a
// string is MessagePack's str family; a table whose keys are exactly 1..n is
// an array (an empty table too), any other a map; nesting deeper than 16
// tables is nil (so a table that holds itself packs to a bounded depth);
// functions and other values are nil. Job queues' scripts (BullMQ's) pack
// and unpack their options with it. The wire format is
// github.com/vmihailenco/msgpack/v5's; what is Lua's here is the mapping.

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
	lua "github.com/yuin/gopher-lua"
)

const (
	// cmsgpackMaxNesting is lua-cmsgpack's LUACMSGPACK_MAX_NESTING: a table
	// deeper than this packs as nil.
	cmsgpackMaxNesting = 16
	// cmsgpackMaxDecodeDepth bounds the nesting unpack follows (lua-cmsgpack
	// recurses on the C stack without a bound; a packed value never nests
	// deeper than 16).
	cmsgpackMaxDecodeDepth = 1000
	// cmsgpackMaxResults is how many values one call may return (C Lua's
	// LUAI_MAXCSTACK, where lua-cmsgpack's luaL_checkstack fails).
	cmsgpackMaxResults = 8000
)

var (
	errMsgpackMissing = errors.New("Missing bytes in input.")   //nolint:staticcheck // Redis's text, which scripts may match
	errMsgpackBad     = errors.New("Bad data format in input.") //nolint:staticcheck // Redis's text
)

func openCMsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(cmsgpackPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int {
		return cmsgpackUnpack(L, luaArgString(L, 1, "unpack"), 0, 0)
	}))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		s, offset := luaArgString(L, 1, "unpack_one"), luaArgInt(L, 2, "unpack_one", true)
		return cmsgpackUnpack(L, s, 1, offset)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		s := luaArgString(L, 1, "unpack_limit")
		limit, offset := luaArgInt(L, 2, "unpack_limit", false), luaArgInt(L, 3, "unpack_limit", true)
		return cmsgpackUnpack(L, s, limit, offset)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

// cmsgpackPack packs each argument, one after the other.
func cmsgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		luaArgError(L, 0, "pack", "MessagePack pack needs input.")
	}
	var b bytes.Buffer
	enc := msgpack.NewEncoder(&b)
	for i := 1; i <= n; i++ {
		if err := cmsgpackEncode(enc, L.Get(i), 0); err != nil {
			L.RaiseError("%s", err.Error())
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

func cmsgpackEncode(enc *msgpack.Encoder, v lua.LValue, level int) error {
	switch v := v.(type) {
	case lua.LString:
		return enc.EncodeString(string(v))
	case lua.LBool:
		return enc.EncodeBool(bool(v))
	case lua.LNumber:
		return cmsgpackNumber(enc, float64(v))
	case *lua.LTable:
		if level == cmsgpackMaxNesting {
			return enc.EncodeNil()
		}
		if n, ok := cmsgpackArrayLen(v); ok {
			if err := enc.EncodeArrayLen(n); err != nil {
				return err
			}
			for i := 1; i <= n; i++ {
				if err := cmsgpackEncode(enc, v.RawGetInt(i), level+1); err != nil {
					return err
				}
			}
			return nil
		}
		count := 0
		luaPairs(v, func(lua.LValue, lua.LValue) { count++ })
		if err := enc.EncodeMapLen(count); err != nil {
			return err
		}
		var err error
		luaPairs(v, func(k, val lua.LValue) {
			if err == nil {
				err = cmsgpackEncode(enc, k, level+1)
			}
			if err == nil {
				err = cmsgpackEncode(enc, val, level+1)
			}
		})
		return err
	default:
		return enc.EncodeNil()
	}
}

// cmsgpackNumber is lua-cmsgpack's mp_encode_lua_number: an integer (one an
// int64 holds exactly) in its smallest integer form, else a float32 when
// that holds it exactly, else a float64.
func cmsgpackNumber(enc *msgpack.Encoder, f float64) error {
	if !math.IsInf(f, 0) && !math.IsNaN(f) && f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		return enc.EncodeInt(int64(f))
	}
	if f32 := float32(f); float64(f32) == f {
		return enc.EncodeFloat32(f32)
	}
	return enc.EncodeFloat64(f)
}

// cmsgpackArrayLen reports whether t's keys are exactly 1..n (an empty table
// is an array), as lua-cmsgpack's table_is_an_array.
func cmsgpackArrayLen(t *lua.LTable) (int, bool) {
	count, highest, array := 0, 0, true
	luaPairs(t, func(k, _ lua.LValue) {
		if !array {
			return
		}
		n, ok := k.(lua.LNumber)
		if !ok || n <= 0 || float64(n) != math.Trunc(float64(n)) || float64(n) > math.MaxInt32 {
			array = false
			return
		}
		count++
		highest = max(highest, int(n))
	})
	return count, array && highest == count
}

// cmsgpackUnpack is lua-cmsgpack's mp_unpack_full: with limit and offset
// both 0 it decodes every value of s and returns them; else up to limit
// values from offset, after the offset to go on from (-1 at the end).
func cmsgpackUnpack(L *lua.LState, s string, limit, offset int64) int {
	all := limit == 0 && offset == 0
	switch {
	case offset < 0 || limit < 0:
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", offset, len(s))
	case offset > int64(len(s)):
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	if all {
		limit = math.MaxInt32
	}
	in := s[offset:]
	r := strings.NewReader(in)
	dec := msgpack.NewDecoder(r)
	var values []lua.LValue
	for count := int64(0); r.Len() > 0 && count < limit; count++ {
		if count == cmsgpackMaxResults {
			L.RaiseError("too many return values at once; use unpack_one or unpack_limit instead.")
		}
		v, err := cmsgpackDecode(L, dec, r, in, 0)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errMsgpackMissing) {
				L.RaiseError("%s", errMsgpackMissing.Error())
			}
			L.RaiseError("%s", errMsgpackBad.Error())
		}
		values = append(values, v)
	}
	if !all {
		next := lua.LNumber(-1)
		if r.Len() > 0 {
			next = lua.LNumber(int64(len(s)) - int64(r.Len()))
		}
		L.Push(next)
	}
	for _, v := range values {
		L.Push(v)
	}
	if all {
		return len(values)
	}
	return len(values) + 1
}

// cmsgpackDecode decodes one value. A length that the bytes left cannot
// hold (each element takes one byte at least) is missing bytes, found before
// anything is allocated for it.
func cmsgpackDecode(L *lua.LState, dec *msgpack.Decoder, r *strings.Reader, in string, depth int) (lua.LValue, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return nil, err
	}
	switch {
	case c == msgpcode.Nil:
		return lua.LNil, dec.DecodeNil()
	case c == msgpcode.True || c == msgpcode.False:
		b, err := dec.DecodeBool()
		return lua.LBool(b), err
	case msgpcode.IsFixedNum(c), c == msgpcode.Int8, c == msgpcode.Int16, c == msgpcode.Int32, c == msgpcode.Int64:
		n, err := dec.DecodeInt64()
		return lua.LNumber(n), err
	case c == msgpcode.Uint8, c == msgpcode.Uint16, c == msgpcode.Uint32, c == msgpcode.Uint64:
		n, err := dec.DecodeUint64()
		return lua.LNumber(n), err
	case c == msgpcode.Float, c == msgpcode.Double:
		f, err := dec.DecodeFloat64()
		return lua.LNumber(f), err
	case msgpcode.IsString(c):
		// lua-cmsgpack reads no bin or ext type: Bad data format.
		n, err := dec.DecodeBytesLen()
		if err != nil {
			return nil, err
		}
		if n < 0 || n > r.Len() {
			return nil, errMsgpackMissing
		}
		// The string is read out of the input as it stands (r reads in,
		// unbuffered): one copy, so a value kept does not hold the input.
		at := len(in) - r.Len()
		if _, err := r.Seek(int64(n), io.SeekCurrent); err != nil {
			return nil, err
		}
		return lua.LString(strings.Clone(in[at : at+n])), nil
	case msgpcode.IsFixedArray(c), c == msgpcode.Array16, c == msgpcode.Array32:
		n, err := dec.DecodeArrayLen()
		if err != nil {
			return nil, err
		}
		if n > r.Len() {
			return nil, errMsgpackMissing
		}
		if depth >= cmsgpackMaxDecodeDepth {
			return nil, errMsgpackBad
		}
		t := L.CreateTable(n, 0)
		for i := 1; i <= n; i++ {
			v, err := cmsgpackDecode(L, dec, r, in, depth+1)
			if err != nil {
				return nil, err
			}
			t.RawSetInt(i, v)
		}
		return t, nil
	case msgpcode.IsFixedMap(c), c == msgpcode.Map16, c == msgpcode.Map32:
		n, err := dec.DecodeMapLen()
		if err != nil {
			return nil, err
		}
		if n > r.Len()/2 {
			return nil, errMsgpackMissing
		}
		if depth >= cmsgpackMaxDecodeDepth {
			return nil, errMsgpackBad
		}
		t := L.CreateTable(0, n)
		for range n {
			k, err := cmsgpackDecode(L, dec, r, in, depth+1)
			if err != nil {
				return nil, err
			}
			v, err := cmsgpackDecode(L, dec, r, in, depth+1)
			if err != nil {
				return nil, err
			}
			if k == lua.LNil {
				L.RaiseError("table index is nil")
			}
			if f, ok := k.(lua.LNumber); ok && math.IsNaN(float64(f)) {
				L.RaiseError("table index is NaN")
			}
			t.RawSet(k, v)
		}
		return t, nil
	}
	return nil, errMsgpackBad
}

// luaArgError raises C Lua's luaL_argerror text, the function's name quoted
// as Redis's scripts see it (gopher-lua's own leaves the quotes out).
func luaArgError(L *lua.LState, n int, fname, msg string) {
	L.RaiseError("bad argument #%d to '%s' (%s)", n, fname, msg)
}

// luaArgTypeError is luaL_typerror's text.
func luaArgTypeError(L *lua.LState, n int, fname, want string) {
	got := "no value"
	if n <= L.GetTop() {
		got = L.Get(n).Type().String()
	}
	luaArgError(L, n, fname, want+" expected, got "+got)
}

// luaArgString is luaL_checklstring: a string, or a number as a string.
func luaArgString(L *lua.LState, n int, fname string) string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return v.String()
	}
	luaArgTypeError(L, n, fname, "string")
	return ""
}

// luaArgInt is luaL_checkinteger (or luaL_optinteger, 0 when absent or nil):
// a number, or a string that reads as one, truncated.
func luaArgInt(L *lua.LState, n int, fname string, optional bool) int64 {
	v := L.Get(n)
	if optional && v == lua.LNil {
		return 0
	}
	switch v := v.(type) {
	case lua.LNumber:
		return int64(v)
	case lua.LString:
		if f, err := strconv.ParseFloat(strings.TrimSpace(string(v)), 64); err == nil {
			return int64(f)
		}
	}
	luaArgTypeError(L, n, fname, "number")
	return 0
}

// luaPairs calls f with each key and value of t in the order of Lua's
// pairs (next): gopher-lua's ForEach walks Go maps, in a different order
// each time.
func luaPairs(t *lua.LTable, f func(k, v lua.LValue)) {
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		f(k, v)
	}
}
