package resp

// The libraries Redis gives scripts beside Lua's own: cjson, bit and struct,
// with their Redis behaviour (cjson's encode of sparse arrays and empty
// tables, bit's 32-bit signed results, struct's format letters). No
// maintained Go implementation for gopher-lua covers the three with these
// semantics, and each is small.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjsonMaxDepth is cjson's default nesting bound (encode and decode).
const cjsonMaxDepth = 1000

// cjsonConfig is what cjson's configuration functions set (for the VM's
// life, as in Redis).
type cjsonConfig struct {
	encodeDepth, decodeDepth int
	invalidNumbers           bool
}

func openCJSON(L *lua.LState) *lua.LTable {
	cfg := &cjsonConfig{encodeDepth: cjsonMaxDepth, decodeDepth: cjsonMaxDepth}
	t := L.NewTable()
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int { return cjsonEncode(L, cfg) }))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int { return cjsonDecode(L, cfg) }))
	null := L.NewUserData()
	L.G.Registry.RawSetString("__cjson_null", null)
	t.RawSetString("null", null)
	depth := func(p *int) lua.LGFunction {
		return func(L *lua.LState) int {
			if L.GetTop() >= 1 {
				n := L.CheckInt(1)
				if n < 1 || n > 2147483647 {
					L.ArgError(1, "expected integer between 1 and 2147483647")
				}
				*p = n
			}
			L.Push(lua.LNumber(*p))
			return 1
		}
	}
	t.RawSetString("encode_max_depth", L.NewFunction(depth(&cfg.encodeDepth)))
	t.RawSetString("decode_max_depth", L.NewFunction(depth(&cfg.decodeDepth)))
	t.RawSetString("encode_invalid_numbers", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() >= 1 {
			cfg.invalidNumbers = L.ToBool(1)
		}
		L.Push(lua.LBool(cfg.invalidNumbers))
		return 1
	}))
	for _, name := range []string{"encode_keep_buffer", "encode_number_precision", "decode_invalid_numbers", "encode_sparse_array"} {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int { return L.GetTop() }))
	}
	return t
}

// cjsonNull is cjson.null, kept in the registry (the cjson table is behind
// a proxy).
func cjsonNull(L *lua.LState) lua.LValue { return L.G.Registry.RawGetString("__cjson_null") }

func cjsonEncode(L *lua.LState, cfg *cjsonConfig) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	var b bytes.Buffer
	if err := cjsonWrite(L, cfg, &b, L.Get(1), 0); err != nil {
		L.RaiseError("%s", err.Error())
	}
	if sc := scriptOf(L); sc != nil && !sc.charge(int64(b.Len())) {
		L.RaiseError("Cannot serialise: the script's memory limit was reached")
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// cjsonError is cjson's error text, as scripts see it.
type cjsonError string

func (e cjsonError) Error() string { return string(e) }

func cjsonWrite(L *lua.LState, cfg *cjsonConfig, b *bytes.Buffer, v lua.LValue, depth int) error {
	switch v := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		b.WriteString(strconv.FormatBool(bool(v)))
	case lua.LNumber:
		f := float64(v)
		if (math.IsInf(f, 0) || math.IsNaN(f)) && cfg.invalidNumbers {
			b.WriteString(map[bool]string{true: "nan", false: "inf"}[math.IsNaN(f)])
			return nil
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return cjsonError("Cannot serialise number: must not be NaN or Inf")
		}
		b.WriteString(fmt.Sprintf("%.14g", f))
	case lua.LString:
		enc, _ := json.Marshal(string(v))
		// cjson escapes '/' and leaves non-ASCII bytes as they are.
		enc = bytes.ReplaceAll(enc, []byte("/"), []byte(`\/`))
		b.Write(enc)
	case *lua.LUserData:
		if v == cjsonNull(L) {
			b.WriteString("null")
			return nil
		}
		return cjsonError("Cannot serialise userdata: type not supported")
	case *lua.LTable:
		if depth+1 > cfg.encodeDepth {
			return cjsonError(fmt.Sprintf("Cannot serialise, excessive nesting (%d)", depth+1))
		}
		n, isArray := luaArrayLen(v)
		if isArray {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if err := cjsonWrite(L, cfg, b, v.RawGetInt(i), depth+1); err != nil {
					return err
				}
			}
			b.WriteByte(']')
			return nil
		}
		b.WriteByte('{')
		first := true
		var err error
		luaPairs(v, func(k, val lua.LValue) { // next's order: the same at every call
			if err != nil {
				return
			}
			var key string
			switch k := k.(type) {
			case lua.LString:
				key = string(k)
			case lua.LNumber:
				key = fmt.Sprintf("%.14g", float64(k))
			default:
				err = cjsonError(fmt.Sprintf("Cannot serialise %s: table key must be a number or string", k.Type()))
				return
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			enc, _ := json.Marshal(key)
			b.Write(enc)
			b.WriteByte(':')
			err = cjsonWrite(L, cfg, b, val, depth+1)
		})
		if err != nil {
			return err
		}
		b.WriteByte('}')
	default:
		return cjsonError(fmt.Sprintf("Cannot serialise %s: type not supported", v.Type()))
	}
	return nil
}

// luaArrayLen reports whether t is an array for cjson (keys 1..n, not too
// sparse) and its length; an empty table is an object, as in cjson.
func luaArrayLen(t *lua.LTable) (int, bool) {
	maxKey, count := 0, 0
	isArray := true
	t.ForEach(func(k, _ lua.LValue) {
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) != math.Floor(float64(n)) || n < 1 {
			isArray = false
			return
		}
		count++
		maxKey = max(maxKey, int(n))
	})
	if !isArray || count == 0 {
		return 0, false
	}
	// cjson's default: an array may be sparse up to ratio 2 past 10 items.
	if maxKey > 10 && maxKey > 2*count {
		return 0, false
	}
	return maxKey, true
}

func cjsonDecode(L *lua.LState, cfg *cjsonConfig) int {
	s := L.CheckString(1)
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		L.RaiseError("Expected value but found invalid token at character 1")
	}
	if dec.More() {
		L.RaiseError("Expected the end but found invalid token")
	}
	L.Push(cjsonToLua(L, cfg, v, 0))
	return 1
}

func cjsonToLua(L *lua.LState, cfg *cjsonConfig, v any, depth int) lua.LValue {
	switch v.(type) {
	case []any, map[string]any:
		if depth+1 > cfg.decodeDepth {
			L.RaiseError("Found too many nested data structures (%d)", depth+1)
		}
	}
	switch v := v.(type) {
	case nil:
		return cjsonNull(L)
	case bool:
		return lua.LBool(v)
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		return lua.LNumber(f)
	case string:
		return lua.LString(v)
	case []any:
		t := L.CreateTable(len(v), 0)
		for i, e := range v {
			t.RawSetInt(i+1, cjsonToLua(L, cfg, e, depth+1))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(v))
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.RawSetString(k, cjsonToLua(L, cfg, v[k], depth+1))
		}
		return t
	}
	return lua.LNil
}

// bit: Lua BitOp, whose results are signed 32-bit numbers.
func openBit(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	arg := func(L *lua.LState, i int) uint32 {
		f := float64(L.CheckNumber(i))
		// BitOp normalises through a double add, as modulo 2^32.
		return uint32(int64(math.Mod(math.Trunc(f), 4294967296)))
	}
	ret := func(L *lua.LState, v uint32) int { L.Push(lua.LNumber(int32(v))); return 1 }
	fold := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := arg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, arg(L, i))
			}
			return ret(L, v)
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return ret(L, arg(L, 1)) },
		"bnot":  func(L *lua.LState) int { return ret(L, ^arg(L, 1)) },
		"band":  fold(func(a, b uint32) uint32 { return a & b }),
		"bor":   fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":  fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift": func(L *lua.LState) int {
			return ret(L, arg(L, 1)<<(arg(L, 2)&31))
		},
		"rshift": func(L *lua.LState) int {
			return ret(L, arg(L, 1)>>(arg(L, 2)&31))
		},
		"arshift": func(L *lua.LState) int {
			return ret(L, uint32(int32(arg(L, 1))>>(arg(L, 2)&31)))
		},
		"rol": func(L *lua.LState) int {
			v, n := arg(L, 1), arg(L, 2)&31
			return ret(L, v<<n|v>>(32-n))
		},
		"ror": func(L *lua.LState) int {
			v, n := arg(L, 1), arg(L, 2)&31
			return ret(L, v>>n|v<<(32-n))
		},
		"bswap": func(L *lua.LState) int {
			v := arg(L, 1)
			return ret(L, v>>24|(v>>8)&0xff00|(v&0xff00)<<8|v<<24)
		},
		"tohex": func(L *lua.LState) int {
			v := arg(L, 1)
			n := 8
			if L.GetTop() >= 2 {
				n = L.CheckInt(2)
			}
			upper := n < 0
			if upper {
				n = -n
			}
			n = min(max(n, 1), 8)
			s := fmt.Sprintf("%08x", v)
			if upper {
				s = strings.ToUpper(s)
			}
			L.Push(lua.LString(s[8-n:]))
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// struct: Roberto Ierusalimschy's struct library (pack, unpack, size) for
// the formats > < ! x b B h H l L i I T f d s c.
func openStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

type structOpt struct {
	kind byte
	size int
}

// structParse reads a format into options, with their byte order.
func structParse(L *lua.LState, f string, each func(o structOpt, little bool)) {
	little := true
	for i := 0; i < len(f); i++ {
		c := f[i]
		num := func(def int) int {
			j := i + 1
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
			if j == i+1 {
				return def
			}
			n, _ := strconv.Atoi(f[i+1 : j])
			i = j - 1
			return n
		}
		switch c {
		case ' ':
		case '<':
			little = true
		case '>':
			little = false
		case '=':
			little = true
		case '!':
			num(8)
		case 'x':
			each(structOpt{'x', 1}, little)
		case 'b', 'B':
			each(structOpt{c, 1}, little)
		case 'h', 'H':
			each(structOpt{c, 2}, little)
		case 'l', 'L', 'T':
			each(structOpt{c, 8}, little)
		case 'i', 'I':
			n := num(4)
			if n < 1 || n > 8 {
				L.RaiseError("integral size %d is larger than limit of 8", n)
			}
			each(structOpt{c, n}, little)
		case 'f':
			each(structOpt{'f', 4}, little)
		case 'd':
			each(structOpt{'d', 8}, little)
		case 's':
			each(structOpt{'s', 0}, little)
		case 'c':
			each(structOpt{'c', num(1)}, little)
		default:
			L.RaiseError("invalid format option '%c'", c)
		}
	}
}

func putInt(b []byte, v uint64, little bool) {
	n := len(b)
	for i := range n {
		shift := uint(8 * i)
		if little {
			b[i] = byte(v >> shift)
		} else {
			b[n-1-i] = byte(v >> shift)
		}
	}
}

func getInt(b []byte, little, signed bool) float64 {
	var v uint64
	n := len(b)
	for i := range n {
		var c byte
		if little {
			c = b[i]
		} else {
			c = b[n-1-i]
		}
		v |= uint64(c) << uint(8*i)
	}
	if signed && n < 8 && v&(1<<uint(8*n-1)) != 0 {
		v |= ^uint64(0) << uint(8*n)
	}
	if signed {
		return float64(int64(v))
	}
	return float64(v)
}

func structPack(L *lua.LState) int {
	f := L.CheckString(1)
	arg := 2
	var out []byte
	structParse(L, f, func(o structOpt, little bool) {
		switch o.kind {
		case 'x':
			out = append(out, 0)
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			v := float64(L.CheckNumber(arg))
			arg++
			b := make([]byte, o.size)
			putInt(b, uint64(int64(v)), little)
			out = append(out, b...)
		case 'f':
			b := make([]byte, 4)
			bits := math.Float32bits(float32(L.CheckNumber(arg)))
			arg++
			if little {
				binary.LittleEndian.PutUint32(b, bits)
			} else {
				binary.BigEndian.PutUint32(b, bits)
			}
			out = append(out, b...)
		case 'd':
			b := make([]byte, 8)
			bits := math.Float64bits(float64(L.CheckNumber(arg)))
			arg++
			if little {
				binary.LittleEndian.PutUint64(b, bits)
			} else {
				binary.BigEndian.PutUint64(b, bits)
			}
			out = append(out, b...)
		case 's':
			s := L.CheckString(arg)
			arg++
			out = append(out, s...)
			out = append(out, 0)
		case 'c':
			s := L.CheckString(arg)
			arg++
			n := o.size
			if n == 0 {
				n = len(s)
			}
			if len(s) < n {
				L.ArgError(arg-1, "string too short")
			}
			out = append(out, s[:n]...)
		}
	})
	L.Push(lua.LString(out))
	return 1
}

func structUnpack(L *lua.LState) int {
	f := L.CheckString(1)
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		L.ArgError(3, "offset out of range")
	}
	n := 0
	need := func(k int) {
		if pos+k > len(data) {
			L.ArgError(2, "data string too short")
		}
	}
	var lastInt = -1.0
	structParse(L, f, func(o structOpt, little bool) {
		switch o.kind {
		case 'x':
			need(1)
			pos++
			return
		case 'b', 'h', 'l', 'i':
			need(o.size)
			lastInt = getInt([]byte(data[pos:pos+o.size]), little, true)
			L.Push(lua.LNumber(lastInt))
		case 'B', 'H', 'L', 'T', 'I':
			need(o.size)
			lastInt = getInt([]byte(data[pos:pos+o.size]), little, false)
			L.Push(lua.LNumber(lastInt))
		case 'f':
			need(4)
			b := []byte(data[pos : pos+4])
			var bits uint32
			if little {
				bits = binary.LittleEndian.Uint32(b)
			} else {
				bits = binary.BigEndian.Uint32(b)
			}
			L.Push(lua.LNumber(math.Float32frombits(bits)))
		case 'd':
			need(8)
			b := []byte(data[pos : pos+8])
			var bits uint64
			if little {
				bits = binary.LittleEndian.Uint64(b)
			} else {
				bits = binary.BigEndian.Uint64(b)
			}
			L.Push(lua.LNumber(math.Float64frombits(bits)))
		case 's':
			end := strings.IndexByte(data[pos:], 0)
			if end < 0 {
				L.ArgError(2, "unfinished string in data")
			}
			L.Push(lua.LString(data[pos : pos+end]))
			pos += end + 1
			n++
			return
		case 'c':
			size := o.size
			if size == 0 {
				if lastInt < 0 {
					L.ArgError(1, "format 'c0' needs a previous size")
				}
				size = int(lastInt)
				L.Pop(1)
				n--
			}
			need(size)
			L.Push(lua.LString(data[pos : pos+size]))
			pos += size
			n++
			return
		}
		pos += o.size
		n++
	})
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *lua.LState) int {
	f := L.CheckString(1)
	size := 0
	structParse(L, f, func(o structOpt, _ bool) {
		if o.kind == 's' || (o.kind == 'c' && o.size == 0) {
			L.ArgError(1, "options 'c0' - 's' have undefined sizes")
		}
		size += o.size
	})
	L.Push(lua.LNumber(size))
	return 1
}
