package resp

// Lua values and redis.call arguments built in blocks.
//
// Invariant: what is handed out is never written again. A box or an
// argument's bytes is a fresh piece of a block that is only appended to,
// and a block is replaced, never reused, once full: a value a script (or a
// function library, across calls) keeps, or bytes a command handler keeps,
// never change under it.
//
// Why: gopher-lua's values are Go interfaces, and putting a string or a
// number in one allocates a box for it (16 or 8 bytes). Under the rate
// limiter's script that was a third of the ~185 allocations of a 9-check
// call (KEYS, ARGV, every integer reply, tonumber), and redis.call's
// arguments one more each. The boxes here come from blocks, one allocation
// per block, as gopher-lua's own allocator boxes the numbers its VM computes
// (its alloc.go: the interface's data word pointed at a block's element).

import (
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Sizes of the blocks (a block lives as long as one value in it does).
const (
	luaStringBlock = 128     // LString boxes (16 bytes each)
	luaNumberBlock = 256     // LNumber boxes (8 bytes each)
	luaBytesBlock  = 4 << 10 // redis.call arguments; larger ones get their own
)

// luaIface is the layout of a Go interface value (runtime.iface), as
// gopher-lua's allocator has it.
type luaIface struct {
	tab  unsafe.Pointer
	word unsafe.Pointer
}

// smallLuaNumbers are the boxes of the integers -2..255 (PTTL's -2 and -1,
// counters, flags), shared by every VM and never written.
var smallLuaNumbers = func() (t [258]lua.LValue) {
	for i := range t {
		t[i] = lua.LNumber(i - 2)
	}
	return t
}()

// luaValues hands out boxed values and argument bytes for one VM (used
// under the engine's vmMu, like the VM).
type luaValues struct {
	strs    []lua.LString
	nums    []lua.LNumber
	bytes   []byte
	changed []int // fill's scratch
}

// str boxes s.
func (lv *luaValues) str(s string) lua.LValue {
	if len(lv.strs) == cap(lv.strs) {
		lv.strs = make([]lua.LString, 0, luaStringBlock)
	}
	lv.strs = append(lv.strs, lua.LString(s))
	v := lua.LValue(lua.LString("")) // an empty string's box is static: no allocation
	(*luaIface)(unsafe.Pointer(&v)).word = unsafe.Pointer(&lv.strs[len(lv.strs)-1])
	return v
}

// num boxes n.
func (lv *luaValues) num(n lua.LNumber) lua.LValue {
	if i := int64(n); float64(i) == float64(n) && i >= -2 && i < int64(len(smallLuaNumbers))-2 {
		return smallLuaNumbers[i+2]
	}
	if len(lv.nums) == cap(lv.nums) {
		lv.nums = make([]lua.LNumber, 0, luaNumberBlock)
	}
	lv.nums = append(lv.nums, n)
	v := smallLuaNumbers[2] // any LNumber box: its type word is what is kept
	(*luaIface)(unsafe.Pointer(&v)).word = unsafe.Pointer(&lv.nums[len(lv.nums)-1])
	return v
}

// take returns n fresh bytes (length 0, capacity n) of a block.
func (lv *luaValues) take(n int) []byte {
	if n > luaBytesBlock/4 {
		return make([]byte, 0, n)
	}
	if cap(lv.bytes)-len(lv.bytes) < n {
		lv.bytes = make([]byte, 0, luaBytesBlock)
	}
	at := len(lv.bytes)
	lv.bytes = lv.bytes[:at+n]
	return lv.bytes[at : at : at+n]
}

// fill fills t's elements 1..len(ss) with ss (t was built for them).
// The bytes of those that differ from what t holds are copied into one
// string, so a table refilled with mostly the same arguments (ARGV of a
// script called again) copies and boxes only what changed.
func (lv *luaValues) fill(t *lua.LTable, ss [][]byte) {
	changed, size := lv.changed[:0], 0
	for i, s := range ss {
		if old, ok := t.RawGetInt(i + 1).(lua.LString); ok && string(old) == string(s) {
			continue
		}
		changed = append(changed, i)
		size += len(s)
	}
	lv.changed = changed
	if len(changed) == 0 {
		return
	}
	var all strings.Builder
	all.Grow(size)
	for _, i := range changed {
		all.Write(ss[i])
	}
	joined := all.String()
	at := 0
	for _, i := range changed {
		n := len(ss[i])
		t.RawSetInt(i+1, lv.str(joined[at:at+n]))
		at += n
	}
}
