package resp

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's words for a call of nil. gopher-lua says "attempt to call a
// non-function object" for any such call; Lua 5.1, and so Redis, names
// what was called where it can ("attempt to call field 'register_function'
// (a nil value)", "attempt to call a nil value"), which is what a script's
// author needs to find the mistake (and what Redis's tests match).
//
// nil gets a metatable whose __call raises Lua 5.1's message: gopher-lua
// consults a value's metatable before it gives up on a call. The metatable
// is hidden (__metatable: getmetatable(nil) answers false) and no script
// can reach it to change it (setmetatable takes tables only). Only nil: it
// is what a misspelled field or a failed loadstring gives, and numbers,
// booleans and strings keep gopher-lua's lookups as they were.

// luaOpcode and the argument A of a gopher-lua instruction (its opcode.go
// layout: the opcode in the top 6 bits, A in the next 8).
func luaOpcode(inst uint32) int { return int(inst >> 26) }
func luaArgA(inst uint32) int   { return int(inst>>18) & 0xff }

// installCallOfNil gives nil the metatable described above.
func installCallOfNil(L *lua.LState) {
	mt := L.NewTable()
	mt.RawSetString("__call", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s", callOfNilText(L))
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(lua.LNil, mt)
}

// callOfNilText is Lua 5.1's message for the call of nil that the running
// __call stands for: with the callee's kind and name when the caller's
// code says them (global, field, method, local, upvalue), else without.
func callOfNilText(L *lua.LState) string {
	const plain = "attempt to call a nil value"
	self, ok := L.GetStack(0) // the __call, called in the caller's place
	if !ok {
		return plain
	}
	if _, err := L.GetInfo("n", self, lua.LNil); err != nil {
		return plain
	}
	name := self.Name // gopher-lua's name of the callee, from the caller's debug info
	caller, ok := L.GetStack(1)
	if !ok || name == "" || name == "?" || name == "(anonymous)" {
		return plain
	}
	fv, err := L.GetInfo("lf", caller, lua.LNil)
	fn, isFn := fv.(*lua.LFunction)
	if err != nil || !isFn || fn.IsG || fn.Proto == nil {
		return plain
	}
	// The calls of that name on the caller's current line: one kind for
	// all of them, or no kind is said.
	p := fn.Proto
	kind := ""
	for _, call := range p.DbgCalls {
		if call.Name != name || call.Pc >= len(p.Code) || call.Pc >= len(p.DbgSourcePositions) ||
			p.DbgSourcePositions[call.Pc] != caller.CurrentLine {
			continue
		}
		k := calleeKind(p, call.Pc)
		if k == "" || (kind != "" && k != kind) {
			return plain
		}
		kind = k
	}
	if kind == "" {
		return plain
	}
	return fmt.Sprintf("attempt to call %s '%s' (a nil value)", kind, name)
}

// calleeKind is how the register an OP_CALL at pc calls was filled, as Lua
// 5.1's getobjname says it: the last instruction before pc that writes it.
func calleeKind(p *lua.FunctionProto, pc int) string {
	a := luaArgA(p.Code[pc])
	for i := pc - 1; i >= 0; i-- {
		inst := p.Code[i]
		op := luaOpcode(inst)
		switch {
		case (op == lua.OP_LOADNIL || op == lua.OP_CALL || op == lua.OP_VARARG || op == lua.OP_TFORLOOP) && luaArgA(inst) <= a:
			return "" // a run of registers from A: not a named value
		case op == lua.OP_SELF && (luaArgA(inst) == a || luaArgA(inst)+1 == a):
			if luaArgA(inst) == a {
				return "method"
			}
			return ""
		case luaArgA(inst) != a:
			continue
		}
		switch op {
		case lua.OP_GETGLOBAL:
			return "global"
		case lua.OP_GETTABLE, lua.OP_GETTABLEKS:
			return "field"
		case lua.OP_GETUPVAL:
			return "upvalue"
		case lua.OP_MOVE, lua.OP_MOVEN:
			return "local"
		case lua.OP_JMP, lua.OP_EQ, lua.OP_LT, lua.OP_LE, lua.OP_TEST, lua.OP_SETGLOBAL, lua.OP_SETUPVAL,
			lua.OP_SETTABLE, lua.OP_SETTABLEKS, lua.OP_SETLIST, lua.OP_CLOSE, lua.OP_RETURN, lua.OP_FORPREP,
			lua.OP_TFORLOOP:
			continue // A is not a target of these
		}
		return ""
	}
	return ""
}
