package resp

// The Lua runtime of EVAL and FCALL: gopher-lua (Lua 5.1, the dialect Redis
// embeds) set up as Redis sets up its interpreter.
//
// Invariants: a script sees only the sandbox — no os/io/loadfile/dofile/
// require/print, globals it can read but never create (Redis 7's "Attempt
// to modify a readonly table"), library tables it cannot change — and a VM
// that a script managed to change anyway (rawset on a proxy) is closed, not
// reused. A script reaches the keyspace only through redis.call/pcall,
// which run the command table's handlers inside the script's transaction.

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Bounds of one VM (a script that passes them gets an error, never a crash).
const (
	luaCallStackSize   = 200     // Lua call frames: deep recursion is "stack overflow"
	luaRegistrySize    = 1 << 10 // the value stack's first size
	luaRegistryMaxSize = 1 << 20 // the value stack's bound (a deep C-side recursion, huge unpack)
	// luaMaxString bounds one string a library function builds (string.rep).
	luaMaxString = 512 << 20
)

// luaVM is one prepared interpreter; a VM runs one script at a time.
type luaVM struct {
	L       *lua.LState
	proxies []*lua.LTable // must stay empty: a write to one taints the VM
	strMeta *lua.LTable   // the string metatable, whose __index must stay
	strIdx  lua.LValue
	globals *lua.LTable // the real globals behind the proxy
	fns     map[string]*lua.LFunction
	cur     *scriptCtx     // the call being run; nil between calls
	sc      scriptCtx      // what cur points to during a call
	runUD   *lua.LUserData // the registry's handle on cur, for the libraries (scriptOf)
	vals    luaValues
	keys    argTable // EVAL's KEYS and ARGV
	argv    argTable

	globalsProxy *lua.LTable // what scripts see as _G
	redisTable   *lua.LTable // the redis library behind its proxy
}

// readonlyErr is Redis 7's error for a write to a protected table.
const readonlyErr = "Attempt to modify a readonly table"

// newLuaVM builds a VM with Redis's libraries and sandbox.
func newLuaVM(eng *scriptEngine) *luaVM {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    luaCallStackSize,
		RegistrySize:     luaRegistrySize,
		RegistryMaxSize:  luaRegistryMaxSize,
		RegistryGrowStep: 1 << 10,
	})
	// The VM's own call stack is fixed (200 frames, about 20 KB, once per
	// server); the coroutines a script makes, each a thread built with these
	// options, grow theirs as they need, so that a script making many pays
	// for the frames it uses, not 20 KB each. gopher-lua's growing stack
	// costs a check at every call and return (Push and Last were 2 % of the
	// server's CPU under the rate limiter's script).
	L.Options.MinimizeStackMemory = true
	vm := &luaVM{L: L, fns: map[string]*lua.LFunction{}}
	vm.runUD = L.NewUserData()
	L.G.Registry.RawSetString(luaRunKey, vm.runUD)
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	installCallOfNil(L) // Lua 5.1's "attempt to call ... (a nil value)" (script_callerr.go)
	g := L.G.Global
	vm.globals = g
	// Not in Redis's sandbox (Redis 7's deny list, and what gopher-lua
	// adds). getfenv, setfenv and newproxy went from Redis 7.0.15's with
	// the fix of CVE-2025-46818 (the installed redis-server answers them as
	// nonexistent globals): here getfenv(0) was gopher-lua's real global
	// table, the host's, and setfenv(1, t) changed the cached function of
	// the script for its later calls.
	for _, name := range []string{"dofile", "loadfile", "print", "require", "module", "_printregs", "channel", "package", "os", "io",
		"getfenv", "setfenv", "newproxy"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("collectgarbage", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }))
	// setmetatable on a protected table is Redis's readonly error.
	baseSetMeta := g.RawGetString("setmetatable")
	g.RawSetString("setmetatable", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && slices.Contains(vm.proxies, t) {
			L.Error(lua.LString(readonlyErr), 0) // Redis's has no position
		}
		top := L.GetTop()
		L.Push(baseSetMeta)
		for i := 1; i <= top; i++ {
			L.Push(L.Get(i))
		}
		L.Call(top, 1)
		return 1
	}))
	// rawset on a protected table too (Redis's readonly tables refuse it
	// in lua_rawset; the proxy would take the key, and taint the VM).
	baseRawSet := g.RawGetString("rawset").(*lua.LFunction).GFunction
	g.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && slices.Contains(vm.proxies, t) {
			L.Error(lua.LString(readonlyErr), 0)
		}
		return baseRawSet(L)
	}))
	// Lua 5.1 prints numbers with %.14g (gopher-lua with Go's shortest form).
	base := g.RawGetString("tostring")
	g.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		if n, ok := L.Get(1).(lua.LNumber); ok {
			L.Push(lua.LString(formatLuaNumber(float64(n))))
			return 1
		}
		L.Push(base)
		L.Push(L.Get(1))
		L.Call(1, 1)
		return 1
	}))
	g.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }))
	// tonumber of a plain decimal (what scripts mostly convert: their
	// ARGV) is read here; anything else goes to gopher-lua's own, whose
	// answers these are too, called on the same frame (its errors name
	// tonumber).
	baseToNumber := g.RawGetString("tonumber").(*lua.LFunction).GFunction
	g.RawSetString("tonumber", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() == 1 {
			switch v := L.Get(1).(type) {
			case lua.LNumber:
				L.Push(v)
				return 1
			case lua.LString:
				if n, ok := plainDecimal(string(v)); ok {
					L.Push(vm.vals.num(lua.LNumber(n)))
					return 1
				}
			}
		}
		return baseToNumber(L)
	}))
	// type answers with names boxed once (gopher-lua's boxes a new string
	// at every call: one allocation per check of the rate limiter's script).
	var typeNames [lua.LTChannel + 1]lua.LValue
	for t := range typeNames {
		typeNames[t] = lua.LString(lua.LValueType(t).String())
	}
	g.RawSetString("type", L.NewFunction(func(L *lua.LState) int {
		L.Push(typeNames[L.CheckAny(1).Type()])
		return 1
	}))
	// Lua 5.1 bounds what one call may return (LUAI_MAXCSTACK); gopher-lua
	// would grow its stack step by step (quadratic) up to the registry bound.
	g.RawSetString("unpack", L.NewFunction(luaUnpack))
	str := g.RawGetString("string").(*lua.LTable)
	strByte := str.RawGetString("byte")
	str.RawSetString("byte", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		i, j := L.OptInt(2, 1), L.OptInt(3, L.OptInt(2, 1))
		if i < 0 {
			i += len(s) + 1
		}
		if j < 0 {
			j += len(s) + 1
		}
		if j-i >= luaMaxResults {
			L.RaiseError("string slice too long")
		}
		top := L.GetTop()
		L.Push(strByte)
		for k := 1; k <= top; k++ {
			L.Push(L.Get(k))
		}
		L.Call(top, lua.MultRet)
		return L.GetTop() - top
	}))
	str.RawSetString("rep", L.NewFunction(luaStringRep))
	str.RawSetString("dump", lua.LNil)
	math := g.RawGetString("math").(*lua.LTable)
	math.RawSetString("random", L.NewFunction(luaMathRandom))
	math.RawSetString("randomseed", L.NewFunction(luaMathRandomSeed))
	// A resumed coroutine runs under its resumer's context (the script's
	// stopContext, or FUNCTION LOAD's timeout), so that a kill stops a
	// loop inside one: the child context gopher-lua gave the thread at
	// coroutine.create never sees a stopContext's stop. coroutine.wrap is
	// built on this resume (gopher-lua's calls its own).
	co := g.RawGetString("coroutine").(*lua.LTable)
	baseResume := co.RawGetString("resume").(*lua.LFunction).GFunction
	baseCreate := co.RawGetString("create").(*lua.LFunction).GFunction
	resume := func(L *lua.LState) int {
		if th, ok := L.Get(1).(*lua.LState); ok {
			if ctx := L.Context(); ctx != nil {
				th.SetContext(ctx)
			}
		}
		return baseResume(L)
	}
	co.RawSetString("resume", L.NewFunction(resume))
	co.RawSetString("wrap", L.NewFunction(func(L *lua.LState) int {
		baseCreate(L)
		th := L.Get(-1)
		L.Push(L.NewFunction(func(L *lua.LState) int {
			L.Insert(th, 1)
			n := resume(L)
			base := L.GetTop() - n + 1
			if L.Get(base) == lua.LFalse {
				L.Error(L.Get(base+1), 0) // the coroutine's error, as it is
			}
			L.Remove(base)
			return n - 1
		}))
		return 1
	}))
	g.RawSetString("redis", vm.redisLib(eng))
	g.RawSetString("cjson", openCJSON(L))
	g.RawSetString("bit", openBit(L))
	g.RawSetString("struct", openStruct(L))
	g.RawSetString("cmsgpack", openCMsgpack(L))

	vm.redisTable = g.RawGetString("redis").(*lua.LTable)
	// Every library table becomes an empty proxy over a hidden table.
	for _, name := range []string{"string", "table", "math", "coroutine", "redis", "cjson", "bit", "struct", "cmsgpack"} {
		g.RawSetString(name, vm.protect(g.RawGetString(name).(*lua.LTable)))
	}
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		mt.RawSetString("__index", g.RawGetString("string"))
		mt.RawSetString("__metatable", lua.LFalse)
		vm.strMeta, vm.strIdx = mt, mt.RawGetString("__index")
	}
	// The globals: reading an undefined one is an error, creating one too.
	// Scripts read them through a chain of tables, no Go call on the way
	// (a Go __index function on the proxy cost 13 % of the server's CPU
	// under the rate limiter's script): the empty proxy's __index is a
	// copy of the globals, whose own __index (reached only for a name that
	// is not there) raises the error. gopher-lua's own L.G.Global keeps no
	// metatable, so Go code reading a missing global still gets nil.
	vars := L.NewTable()
	g.ForEach(func(k, v lua.LValue) { vars.RawSet(k, v) })
	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.Get(2).String())
		return 0
	}))
	L.SetMetatable(vars, missing)
	vm.globals = vars
	proxy := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", vars)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyErr)
		return 0
	}))
	mt.RawSetString("__metatable", vm.protect(L.NewTable()))
	L.SetMetatable(proxy, mt)
	g.RawSetString("_G", proxy)
	vars.RawSetString("_G", proxy)
	// loadstring and load give their chunk the environment of the frame
	// that calls them, which for a Go function is gopher-lua's real global
	// table: a chunk could write the host's globals, and keep state from
	// one script to the next. Lua 5.1 gives it the thread's globals, in
	// Redis the protected _G: here the proxy.
	for _, name := range []string{"loadstring", "load"} {
		base := vars.RawGetString(name).(*lua.LFunction).GFunction
		loader := L.NewFunction(func(L *lua.LState) int {
			n := base(L)
			if fn, ok := L.Get(-n).(*lua.LFunction); n > 0 && ok {
				fn.Env = proxy
			}
			return n
		})
		vars.RawSetString(name, loader)
		g.RawSetString(name, loader)
	}
	vm.proxies = append(vm.proxies, proxy)
	vm.globalsProxy = proxy
	return vm
}

// protect returns an empty table that reads t and refuses writes.
func (vm *luaVM) protect(t *lua.LTable) *lua.LTable {
	L := vm.L
	proxy := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyErr)
		return 0
	}))
	mt.RawSetString("__metatable", readonlyMeta(L))
	L.SetMetatable(proxy, mt)
	vm.proxies = append(vm.proxies, proxy)
	return proxy
}

// readonlyMeta is what getmetatable returns for a protected table: an
// empty table that refuses writes, so that changing it is Redis's
// readonly error.
func readonlyMeta(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyErr)
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(t, mt)
	return t
}

// intact reports whether the sandbox is as built (then the VM is reused).
func (vm *luaVM) intact() bool {
	for _, p := range vm.proxies {
		if k, _ := p.Next(lua.LNil); k != lua.LNil {
			return false
		}
	}
	return vm.strMeta == nil || vm.strMeta.RawGetString("__index") == vm.strIdx
}

// compile turns a script body into its function in this VM.
func compileLua(body, chunk string) (*lua.FunctionProto, error) {
	stmts, err := parse.Parse(strings.NewReader(body), chunk)
	if err != nil {
		return nil, err
	}
	proto, err := lua.Compile(stmts, chunk)
	if err != nil {
		return nil, err
	}
	// The main chunk has no "arg" table in Lua 5.1 (only a vararg function
	// inside it does, with CompatVarArg): without this gopher-lua builds
	// one, a table with a map, at every call of the script.
	proto.IsVarArg &^= lua.VarArgNeedsArg
	return proto, nil
}

// sha1hex is Redis's script id: the SHA1 of the body in lower-case hex.
func sha1hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// plainDecimal reads an optional '-' and 1 to 15 decimal digits, nothing
// else (exact in a float64, and what strconv.ParseInt reads the same).
func plainDecimal(s string) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	if neg {
		n = -n
	}
	return n, true
}

// luaMaxResults is Lua 5.1's LUAI_MAXCSTACK: the most values one call returns.
const luaMaxResults = 8000

func luaUnpack(L *lua.LState) int {
	tb := L.CheckTable(1)
	i := L.OptInt(2, 1)
	j := L.OptInt(3, tb.Len())
	if i > j {
		return 0
	}
	if j-i >= luaMaxResults {
		L.RaiseError("too many results to unpack")
	}
	for k := i; k <= j; k++ {
		L.Push(tb.RawGetInt(k))
	}
	return j - i + 1
}

// luaStringRep is string.rep with a size bound: a script asking for
// gigabytes gets an error instead of taking the process's memory.
func luaStringRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || len(s) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if int64(len(s))*int64(n) > luaMaxString {
		L.RaiseError("resulting string too large")
	}
	if sc := scriptOf(L); sc != nil && !sc.charge(int64(len(s))*int64(n)) {
		L.RaiseError("resulting string too large")
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// luaRunKey names, in a VM's registry, its handle on the running script.
const luaRunKey = "__devkit_run"

// scriptOf finds the run of the script on L (nil outside one).
func scriptOf(L *lua.LState) *scriptCtx {
	if ud, ok := L.G.Registry.RawGetString(luaRunKey).(*lua.LUserData); ok {
		if sc, ok := ud.Value.(*scriptCtx); ok {
			return sc
		}
	}
	return nil
}

// Redis's math.random is its own rand48 (redisLrand48), one sequence for
// the server's life from a fixed start; this is the same generator.
func luaMathRandom(L *lua.LState) int {
	sc := scriptOf(L)
	var r float64
	if sc != nil {
		r = float64(sc.e.rand.next()%0x7fffffff) / 2147483647.0
	}
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		lo, up := L.CheckInt(1), L.CheckInt(2)
		if lo > up {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(up-lo+1)) + float64(lo)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func luaMathRandomSeed(L *lua.LState) int {
	if sc := scriptOf(L); sc != nil {
		n, ok := lua.LVAsNumber(L.Get(1)), L.Get(1) != lua.LNil
		if s, isStr := L.Get(1).(lua.LString); isStr {
			f, err := strconv.ParseFloat(strings.TrimSpace(string(s)), 64)
			n, ok = lua.LNumber(f), err == nil
		} else if _, isNum := L.Get(1).(lua.LNumber); !isNum {
			ok = false
		}
		if !ok {
			L.ArgError(1, "number expected")
		}
		sc.e.rand.seed(int32(int64(n)))
	}
	return 0
}

// rand48 is Redis's redisLrand48 (rand.c); newRand48 is its start.
type rand48 struct{ x [3]uint16 }

func newRand48() rand48 { return rand48{x: [3]uint16{0x330E, 0xABCD, 0x1234}} }

func (r *rand48) seed(s int32) {
	r.x = [3]uint16{0x330E, uint16(s), uint16(uint32(s) >> 16)}
}

func (r *rand48) next() int32 {
	const a, c = 0x5DEECE66D, 0xB
	x := uint64(r.x[2])<<32 | uint64(r.x[1])<<16 | uint64(r.x[0])
	x = (a*x + c) & (1<<48 - 1)
	r.x = [3]uint16{uint16(x), uint16(x >> 16), uint16(x >> 32)}
	return int32(x >> 17)
}

// luaError is an error reply as a script sees it: {err="CODE message"}.
func luaErrorTable(L *lua.LState, msg string) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	return t
}

// ignoreErrorStats marks an error table whose error was counted in INFO
// errorstats where it was made (a command a script called): the script's
// own error reply, when it raises or returns the table, is not counted
// again. Redis's field, which scripts can see as Redis's can.
const ignoreErrorStats = "ignore_error_stats_update"

// markCounted marks the error table t as counted already; isCounted
// reads the mark.
func markCounted(t *lua.LTable) *lua.LTable {
	t.RawSetString(ignoreErrorStats, lua.LTrue)
	return t
}

func isCounted(t *lua.LTable) bool { return lua.LVAsBool(t.RawGetString(ignoreErrorStats)) }

// counted reports whether a script's error is a table marked counted.
func counted(err error) bool {
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return false
	}
	t, ok := ae.Object.(*lua.LTable)
	return ok && isCounted(t)
}

// errorReplyText is Redis's luaPushErrorBuff: "-CODE msg" keeps its code,
// a message without one gets ERR, and a trailing CRLF goes.
func errorReplyText(s string) string {
	if strings.HasPrefix(s, "-") {
		s = s[1:]
		if i := strings.IndexByte(s, ' '); i < 0 {
			s = "ERR " + s
		}
	} else {
		s = "ERR " + s
	}
	return strings.TrimRight(s, "\r\n")
}

// respToLua converts one reply (as the command table's handlers write it,
// RESP2 or, after redis.setresp(3), RESP3) into Redis's Lua value; it
// returns the value, the bytes read, and whether the reply was an error.
// As in Redis 7.0: a RESP2 null is false, RESP3's null nil; a map is
// {map={k=v...}}, a set {set={m=true...}}, a double {double=n}, a boolean
// true or false, a verbatim string {verbatim_string={format=, string=}},
// a big number {big_number="..."}; an attribute is skipped.
func respToLua(L *lua.LState, vals *luaValues, b []byte, resp3 bool) (v lua.LValue, n int, isErr bool) {
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 || len(b) == 0 {
		return lua.LFalse, len(b), false
	}
	line := b[1:end] // converted where kept: an integer reply allocates nothing
	n = end + 2
	nullValue := lua.LValue(lua.LFalse)
	if resp3 {
		nullValue = lua.LNil
	}
	switch b[0] {
	case '+':
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(line))
		return t, n, false
	case '-':
		return luaErrorTable(L, string(line)), n, true
	case ':':
		i, _ := strconv.ParseInt(string(line), 10, 64)
		return vals.num(lua.LNumber(i)), n, false
	case '$':
		size, _ := strconv.Atoi(string(line))
		if size < 0 {
			return nullValue, n, false
		}
		s := string(b[n : n+size])
		return vals.str(s), n + size + 2, false
	case '*', '>':
		count, _ := strconv.Atoi(string(line))
		if count < 0 {
			return nullValue, n, false
		}
		t := L.CreateTable(count, 0)
		for i := 1; i <= count; i++ {
			v, m, _ := respToLua(L, vals, b[n:], resp3)
			n += m
			t.RawSetInt(i, v)
		}
		return t, n, false
	case '_':
		return lua.LNil, n, false
	case '#':
		return lua.LBool(len(line) == 1 && line[0] == 't'), n, false
	case ',':
		f, _ := parseDoubleReply(line)
		t := L.NewTable()
		t.RawSetString("double", lua.LNumber(f))
		return t, n, false
	case '(':
		t := L.NewTable()
		t.RawSetString("big_number", lua.LString(line))
		return t, n, false
	case '=':
		size, _ := strconv.Atoi(string(line))
		text := b[n : n+size]
		vs := L.NewTable()
		if len(text) >= 4 && text[3] == ':' {
			vs.RawSetString("format", lua.LString(text[:3]))
			text = text[4:]
		}
		vs.RawSetString("string", lua.LString(text))
		t := L.NewTable()
		t.RawSetString("verbatim_string", vs)
		return t, n + size + 2, false
	case '%', '~', '|':
		count, _ := strconv.Atoi(string(line))
		inner := L.NewTable()
		for range count {
			k, m, _ := respToLua(L, vals, b[n:], resp3)
			n += m
			val := lua.LValue(lua.LTrue) // a set's members map to true
			if b[0] != '~' {
				val, m, _ = respToLua(L, vals, b[n:], resp3)
				n += m
			}
			if k != lua.LNil {
				inner.RawSet(k, val)
			}
		}
		if b[0] == '|' { // an attribute: the reply it describes follows
			v, m, isErr := respToLua(L, vals, b[n:], resp3)
			return v, n + m, isErr
		}
		t := L.NewTable()
		if b[0] == '%' {
			t.RawSetString("map", inner)
		} else {
			t.RawSetString("set", inner)
		}
		return t, n, false
	}
	return lua.LFalse, len(b), false
}

// parseDoubleReply reads a RESP3 double's text (inf, -inf and nan too).
func parseDoubleReply(b []byte) (float64, bool) {
	switch string(b) {
	case "inf":
		return math.Inf(1), true
	case "-inf":
		return math.Inf(-1), true
	case "nan":
		return math.NaN(), true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

// luaToReply writes a script's Lua value as Redis 7.0 converts it, to w's
// protocol. resp3 is the script's own (redis.setresp): under RESP2 a
// boolean is 1 or null, under RESP3 a boolean (1 or 0 to a RESP2 client).
// {double=}, {map=}, {set=}, {big_number=} and {verbatim_string=} tables
// are those types (RESP2's bulk string, flat array, array, bulk string and
// bulk string to a RESP2 client).
func luaToReply(w *replyWriter, v lua.LValue, depth int, resp3 bool) {
	switch v := v.(type) {
	case lua.LString:
		w.bulkString(string(v))
	case lua.LBool:
		switch {
		case resp3:
			w.boolean(bool(v))
		case bool(v):
			w.integer(1)
		default:
			w.null()
		}
	case lua.LNumber:
		w.integer(luaNumberToInt(float64(v)))
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			w.errorOnce(string(e), isCounted(v))
			return
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			w.simple(crlfToSpace.Replace(string(s)))
			return
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			w.double(float64(d))
			return
		}
		if s, ok := v.RawGetString("big_number").(lua.LString); ok {
			num := crlfToSpace.Replace(string(s))
			if w.resp3 {
				w.buf = append(append(append(w.buf, '('), num...), '\r', '\n')
			} else {
				w.bulkString(num)
			}
			return
		}
		if vs, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
			format, okf := vs.RawGetString("format").(lua.LString)
			text, oks := vs.RawGetString("string").(lua.LString)
			if okf && oks {
				w.verbatimAs(string(format), string(text))
				return
			}
		}
		if depth > luaMaxReplyDepth {
			w.error("ERR reached lua stack limit")
			return
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			n := 0
			luaPairs(m, func(lua.LValue, lua.LValue) { n++ })
			w.mapLen(n)
			luaPairs(m, func(k, val lua.LValue) {
				luaToReply(w, k, depth+1, resp3)
				luaToReply(w, val, depth+1, resp3)
			})
			return
		}
		if set, ok := v.RawGetString("set").(*lua.LTable); ok {
			n := 0
			luaPairs(set, func(lua.LValue, lua.LValue) { n++ })
			w.setLen(n)
			luaPairs(set, func(k, _ lua.LValue) { luaToReply(w, k, depth+1, resp3) })
			return
		}
		n := 0 // the array part up to the first nil, counted first: no slice to build
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		w.array(n)
		for i := 1; i <= n; i++ {
			luaToReply(w, v.RawGetInt(i), depth+1, resp3)
		}
	default:
		w.null()
	}
}

// luaMaxReplyDepth bounds the nesting of a returned table (a table that
// holds itself).
const luaMaxReplyDepth = 1000

// luaNumberToInt truncates a Lua number as C's (long long) cast does.
func luaNumberToInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return math.MinInt64
	case f >= math.MaxInt64:
		return math.MinInt64 // what x86's conversion gives for out of range
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// luaArgs turns redis.call's arguments into a command line, in args'
// array: strings and numbers.
func luaArgs(L *lua.LState, vals *luaValues, args [][]byte) ([][]byte, bool) {
	n := L.GetTop()
	size := 0
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			size += len(v)
		case lua.LNumber:
			size += 24 // dtoa's longest form
		default:
			return nil, false
		}
	}
	// One block holds every argument (each its own full slice, so that no
	// handler appending to one writes into the next); args' own array is
	// the caller's to reuse.
	args = args[:0]
	block := vals.take(size)
	for i := 1; i <= n; i++ {
		start := len(block)
		switch v := L.Get(i).(type) {
		case lua.LString:
			block = append(block, v...)
		case lua.LNumber:
			// Redis 7 converts with fpconv_dtoa: the shortest exact form.
			block = appendDtoa(block, float64(v))
		}
		args = append(args, block[start:len(block):len(block)])
	}
	return args, true
}

// appendDtoa appends fpconv_dtoa's form: the shortest digits that read back the same,
// in plain notation for magnitudes from 1e-4 to below 1e21.
func appendDtoa(b []byte, f float64) []byte {
	if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e21) {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// formatLuaNumber is Lua 5.1's %.14g, as Redis converts a number argument.
func formatLuaNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e14 { // up to 14 digits, %.14g is the integer
		return strconv.FormatInt(int64(f), 10)
	}
	return fmt.Sprintf("%.14g", f)
}
