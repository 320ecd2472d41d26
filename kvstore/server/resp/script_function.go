package resp

// Redis 7 functions: FUNCTION LOAD/DELETE/FLUSH/LIST/DUMP/RESTORE/KILL/STATS,
// FCALL and FCALL_RO.
//
// Invariants: a library is loaded whole or not at all (a failed LOAD or
// RESTORE leaves the libraries as they were); the libraries are persisted
// before the command that changed them is answered — a file next to the
// data (Options.FunctionsFile), replaced atomically (write, fsync, rename,
// directory fsync) — and read back when the server starts, while the
// script cache is not persisted (both as in Redis). An FCALL runs as an
// EVAL does: one atomic engine batch.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// functionLib is one loaded library.
type functionLib struct {
	name  string
	code  string // the whole payload, shebang included
	funcs map[string]*functionDef
}

// functionDef is one registered function.
type functionDef struct {
	name, desc string
	flags      []string
	fn         *lua.LFunction
	lib        *functionLib
}

// functionSet is the loaded libraries and their VM (guarded by the
// engine's vmMu).
type functionSet struct {
	vm    *luaVM
	libs  map[string]*functionLib
	funcs map[string]*functionDef
	// loading collects what register_function registers during a LOAD.
	loading *functionLib
}

func (e *scriptEngine) functions() *functionSet {
	if e.fset == nil {
		e.fset = &functionSet{libs: map[string]*functionLib{}, funcs: map[string]*functionDef{}}
	}
	if e.fset.vm == nil {
		e.fset.vm = newLuaVM(e)
	}
	return e.fset
}

// parseLibraryHeader reads "#!lua name=<lib>" with Redis's errors.
func parseLibraryHeader(code string) (name string, err error) {
	if !strings.HasPrefix(code, "#!") {
		return "", errors.New("ERR Missing library metadata")
	}
	nl := strings.IndexByte(code, '\n')
	if nl < 0 {
		return "", errors.New("ERR Invalid library metadata")
	}
	parts := strings.Fields(code[:nl])
	if len(parts) == 0 {
		return "", errors.New("ERR Invalid library metadata")
	}
	engine := parts[0][2:]
	for _, p := range parts[1:] {
		p = strings.ReplaceAll(p, `"`, "") // Redis splits as sdssplitargs: name="foo" is foo
		if len(p) >= 5 && strings.EqualFold(p[:5], "name=") {
			if name != "" {
				return "", errors.New("ERR Invalid metadata value, name argument was given multiple times")
			}
			name = p[5:]
			continue
		}
		return "", fmt.Errorf("ERR Invalid metadata value given: %s", p)
	}
	if name == "" {
		return "", errors.New("ERR Library name was not given")
	}
	if !validFunctionName(name) {
		return "", errors.New("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	if !strings.EqualFold(engine, "lua") {
		return "", fmt.Errorf("ERR Engine '%s' not found", engine)
	}
	return name, nil
}

func validFunctionName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// load compiles and runs a library's code and, when it registers functions
// that collide with none, installs it (replacing its namesake if replace).
func (fs *functionSet) load(code string, replace bool) (string, error) {
	name, err := parseLibraryHeader(code)
	if err != nil {
		return "", err
	}
	old := fs.libs[name]
	if old != nil && !replace {
		return "", fmt.Errorf("ERR Library '%s' already exists", name)
	}
	// The shebang line becomes a comment: line numbers stay.
	proto, err := compileLua("--"+code[2:], "user_function")
	if err != nil {
		return "", fmt.Errorf("ERR Error compiling function: %s", strings.ReplaceAll(luaCompileError(err), "user_script", "user_function"))
	}
	vm := fs.vm
	L := vm.L
	lib := &functionLib{name: name, code: code, funcs: map[string]*functionDef{}}
	fs.loading = lib
	defer func() { fs.loading = nil }()
	fn := L.NewFunctionFromProto(proto)
	fn.Env = vm.loadEnv(fs)
	// A library's code runs at most functionLoadTimeout, as in Redis.
	ctx, cancel := context.WithTimeout(context.Background(), functionLoadTimeout)
	defer cancel()
	L.SetContext(ctx)
	defer L.RemoveContext()
	L.Push(fn)
	if err := L.PCall(0, 0, nil); err != nil {
		L.SetTop(0)
		if ctx.Err() != nil {
			return "", errors.New("ERR Error registering functions: ERR FUNCTION LOAD timeout")
		}
		msg := err.Error()
		var ae *lua.ApiError
		if errors.As(err, &ae) {
			if t, ok := ae.Object.(*lua.LTable); ok {
				msg = t.RawGetString("err").String()
			} else {
				msg = "ERR " + ae.Object.String()
			}
		}
		return "", fmt.Errorf("ERR Error registering functions: %s", msg)
	}
	L.SetTop(0)
	if len(lib.funcs) == 0 {
		return "", errors.New("ERR No functions registered")
	}
	for key, f := range lib.funcs {
		if other := fs.funcs[key]; other != nil && other.lib != old {
			return "", fmt.Errorf("ERR Function %s already exists", f.name)
		}
	}
	if old != nil {
		fs.unlink(old)
	}
	fs.link(lib)
	return name, nil
}

func (fs *functionSet) link(lib *functionLib) {
	fs.libs[lib.name] = lib
	for n, f := range lib.funcs {
		f.fn.Env = fs.vm.globalsProxy
		fs.funcs[n] = f
	}
}

func (fs *functionSet) unlink(lib *functionLib) {
	delete(fs.libs, lib.name)
	for n := range lib.funcs {
		delete(fs.funcs, n)
	}
}

// loadEnv is the globals of a library's code: while it loads, the redis
// table with register_function and log only (Redis 7's load sandbox);
// afterwards — for the local functions it defined, called by its
// functions — the globals every script sees.
func (vm *luaVM) loadEnv(fs *functionSet) *lua.LTable {
	L := vm.L
	redisLoad := L.NewTable()
	for _, k := range []string{"log", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM"} {
		redisLoad.RawSetString(k, vm.redisTable.RawGetString(k))
	}
	redisLoad.RawSetString("register_function", L.NewFunction(fs.register))
	loading := L.NewTable()
	loading.RawSetString("redis", vm.protectMissing(redisLoad))
	proxy := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		if fs.loading == nil {
			L.Push(L.GetField(vm.globalsProxy, L.CheckString(2)))
			return 1
		}
		v := loading.RawGet(L.Get(2))
		if v == lua.LNil {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.Get(2).String())
		}
		L.Push(v)
		return 1
	}))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyErr)
		return 0
	}))
	mt.RawSetString("__metatable", readonlyMeta(L))
	L.SetMetatable(proxy, mt)
	return proxy
}

// protectMissing is protect with Redis's error for a name that is not there.
func (vm *luaVM) protectMissing(t *lua.LTable) *lua.LTable {
	L := vm.L
	proxy := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		v := t.RawGet(L.Get(2))
		if v == lua.LNil {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.Get(2).String())
		}
		L.Push(v)
		return 1
	}))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyErr)
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(proxy, mt)
	return proxy
}

// register is redis.register_function, in its two forms.
func (fs *functionSet) register(L *lua.LState) int {
	raise := func(msg string) {
		L.Error(luaErrorTable(L, "ERR "+msg), 1)
	}
	lib := fs.loading
	if lib == nil {
		raise("redis.register_function can only be called on FUNCTION LOAD command")
	}
	f := &functionDef{lib: lib}
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			raise("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var bad string
		luaPairs(t, func(k, v lua.LValue) { // a table with several bad arguments names the same one every time
			if bad != "" {
				return
			}
			ks, ok := k.(lua.LString)
			if !ok {
				bad = "named argument key given to redis.register_function is not a string"
				return
			}
			switch string(ks) {
			case "function_name":
				s, ok := v.(lua.LString)
				if !ok {
					bad = "function_name argument given to redis.register_function must be a string"
				}
				f.name = string(s)
			case "description":
				s, ok := v.(lua.LString)
				if !ok {
					bad = "description argument given to redis.register_function must be a string"
				}
				f.desc = string(s)
			case "callback":
				fn, ok := v.(*lua.LFunction)
				if !ok {
					bad = "callback argument given to redis.register_function must be a function"
				}
				f.fn = fn
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					bad = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				luaPairs(ft, func(_, fv lua.LValue) {
					s, ok := fv.(lua.LString)
					if !ok || !slices.Contains(functionFlags, string(s)) {
						bad = "unknown flag given"
						return
					}
					f.flags = append(f.flags, string(s))
				})
			default:
				bad = "unknown argument given to redis.register_function"
			}
		})
		switch {
		case bad != "":
			raise(bad)
		case f.name == "":
			raise("redis.register_function must get a function name argument")
		case f.fn == nil:
			raise("redis.register_function must get a callback argument")
		}
	case 2:
		s, ok := L.Get(1).(lua.LString)
		if !ok {
			raise("first argument to redis.register_function must be a string")
		}
		fn, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			raise("second argument to redis.register_function must be a function")
		}
		f.name, f.fn = string(s), fn
	default:
		raise("wrong number of arguments to redis.register_function")
	}
	if !validFunctionName(f.name) {
		// Redis 7.0 says "Library names" here too.
		raise("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	// Function names are case-insensitive, as in Redis.
	if lib.funcs[strings.ToLower(f.name)] != nil {
		raise("Function already exists in the library")
	}
	lib.funcs[strings.ToLower(f.name)] = f
	return 0
}

// functionLoadTimeout bounds a library's load (Redis's LOAD_TIMEOUT_MS).
const functionLoadTimeout = 500 * time.Millisecond

// functionFlags are Redis 7's function flags.
var functionFlags = []string{"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}

// FunctionsFileName is the functions file devkit kv serve keeps in its data
// directory (Options.FunctionsFile).
const FunctionsFileName = "functions.json"

// functionsFile is the payload of FUNCTION DUMP and of the persisted file.
type functionsFile struct {
	Format    string   `json:"format"`
	Libraries []string `json:"libraries"` // each library's code, shebang included
}

const functionsFormat = "devkit-kv-functions-1"

func (fs *functionSet) dump() []byte {
	f := functionsFile{Format: functionsFormat, Libraries: []string{}}
	for _, name := range fs.names() {
		f.Libraries = append(f.Libraries, fs.libs[name].code)
	}
	b, _ := json.Marshal(f)
	return b
}

func (fs *functionSet) names() []string {
	names := make([]string, 0, len(fs.libs))
	for n := range fs.libs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// restore loads payload's libraries under policy (FLUSH, APPEND, REPLACE),
// all or none.
func (fs *functionSet) restore(payload []byte, policy string) error {
	var f functionsFile
	if err := json.Unmarshal(payload, &f); err != nil || f.Format != functionsFormat {
		return errors.New("ERR DUMP payload version or checksum are wrong")
	}
	saved := fs.snapshot()
	if policy == "FLUSH" {
		fs.libs, fs.funcs = map[string]*functionLib{}, map[string]*functionDef{}
	}
	for _, code := range f.Libraries {
		name, err := parseLibraryHeader(code)
		if err == nil && policy == "APPEND" && fs.libs[name] != nil {
			err = fmt.Errorf("ERR Library %s already exists", name)
		}
		if err == nil {
			_, err = fs.load(code, policy == "REPLACE")
		}
		if err != nil {
			fs.libs, fs.funcs = saved.libs, saved.funcs
			return err
		}
	}
	return nil
}

func (fs *functionSet) snapshot() functionSet {
	libs := make(map[string]*functionLib, len(fs.libs))
	funcs := make(map[string]*functionDef, len(fs.funcs))
	for k, v := range fs.libs {
		libs[k] = v
	}
	for k, v := range fs.funcs {
		funcs[k] = v
	}
	return functionSet{libs: libs, funcs: funcs}
}

// persist writes the libraries to the functions file, replacing it
// atomically; nothing when the server has none.
func (e *scriptEngine) persist() error {
	path := e.s.opts.FunctionsFile
	if path == "" {
		return nil
	}
	if e.persistErr != nil {
		return fmt.Errorf("ERR the persisted functions could not be read at start (%w); fix or remove %s and restart", e.persistErr, path)
	}
	if err := writeFileAtomic(path, e.functions().dump()); err != nil {
		return fmt.Errorf("ERR cannot persist the functions: %w", err)
	}
	return nil
}

// restoreFile loads the persisted libraries (at the server's start).
func (e *scriptEngine) restoreFile() error {
	path := e.s.opts.FunctionsFile
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	e.vmMu.Lock()
	defer e.vmMu.Unlock()
	if err := e.functions().restore(b, "REPLACE"); err != nil {
		return fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "ERR "))
	}
	e.countFunctions()
	return nil
}

// writeFileAtomic replaces path with b: a temporary file written and
// fsynced, renamed over path, then the directory fsynced.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // not supported on every system (Windows); the rename stands
		d.Close()
	}
	return nil
}

// cmdFunction answers the FUNCTION subcommands.
func cmdFunction(c *call) {
	w, e := c.w, c.s.scripts
	sub := strings.ToUpper(string(c.args[1]))
	switch sub {
	case "KILL":
		if len(c.args) != 2 {
			wrongArgs(w, "function|kill")
			return
		}
		e.kill(c, false)
		return
	case "STATS":
		if len(c.args) != 2 {
			wrongArgs(w, "function|stats")
			return
		}
		e.stats(c)
		return
	case "HELP":
		w.bulkStrings(functionHelp...)
		return
	}
	e.vmMu.Lock()
	defer e.vmMu.Unlock()
	fs := e.functions()
	var done func() // the success reply, once the change is persisted
	switch sub {
	case "LOAD":
		args := c.args[2:]
		replace := false
		for len(args) > 1 {
			if !strings.EqualFold(string(args[0]), "REPLACE") {
				w.error(fmt.Sprintf("ERR Unknown option given: %s", printable(args[0])))
				return
			}
			replace, args = true, args[1:]
		}
		if len(args) == 0 {
			if replace {
				w.error("ERR Function code is missing")
			} else {
				wrongArgs(w, "function|load")
			}
			return
		}
		name, err := fs.load(string(args[0]), replace)
		if err != nil {
			w.error(err.Error())
			return
		}
		done = func() { w.bulkString(name) }
	case "DELETE":
		if len(c.args) != 3 {
			wrongArgs(w, "function|delete")
			return
		}
		lib := fs.libs[string(c.args[2])]
		if lib == nil {
			w.error("ERR Library not found")
			return
		}
		fs.unlink(lib)
		done = w.ok
	case "FLUSH":
		if len(c.args) > 3 {
			w.error(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try FUNCTION HELP.", printable(c.args[1])))
			return
		}
		if len(c.args) == 3 && !strings.EqualFold(string(c.args[2]), "ASYNC") && !strings.EqualFold(string(c.args[2]), "SYNC") {
			w.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
			return
		}
		fs.libs, fs.funcs = map[string]*functionLib{}, map[string]*functionDef{}
		fs.vm.L.Close()
		fs.vm = nil
		e.functions()
		done = w.ok
	case "LIST":
		functionList(c, fs)
	case "DUMP":
		if len(c.args) != 2 {
			wrongArgs(w, "function|dump")
			return
		}
		w.bulk(fs.dump())
	case "RESTORE":
		if len(c.args) < 3 {
			wrongArgs(w, "function|restore")
			return
		}
		if len(c.args) > 4 {
			functionArity(w, "restore")
			return
		}
		policy := "APPEND"
		if len(c.args) == 4 {
			policy = strings.ToUpper(string(c.args[3]))
			if policy != "FLUSH" && policy != "APPEND" && policy != "REPLACE" {
				w.error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
				return
			}
		}
		if err := fs.restore(c.args[2], policy); err != nil {
			w.error(err.Error())
			return
		}
		done = w.ok
	default:
		unknownSubcommand(w, c.args[1], "FUNCTION")
		return
	}
	if done == nil {
		return
	}
	e.countFunctions()
	if err := e.persist(); err != nil {
		w.error(err.Error())
		return
	}
	done()
}

// functionArity is Redis 7's answer to a FUNCTION subcommand with the
// wrong number of arguments.
func functionArity(w *replyWriter, sub string) {
	w.error(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try FUNCTION HELP.", sub))
}

var functionHelp = []string{
	"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LOAD [REPLACE] <FUNCTION CODE>",
	"DELETE <LIBRARY NAME>",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"FLUSH [<ASYNC | SYNC>]",
	"DUMP", "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"STATS", "KILL",
	"HELP",
	"    Print this help.",
}

// functionList answers FUNCTION LIST [WITHCODE] [LIBRARYNAME pattern].
func functionList(c *call, fs *functionSet) {
	w := c.w
	withCode := false
	var pattern []byte
	for i := 2; i < len(c.args); i++ {
		switch strings.ToUpper(string(c.args[i])) {
		case "WITHCODE":
			if withCode {
				w.error(fmt.Sprintf("ERR Unknown argument %s", printable(c.args[i])))
				return
			}
			withCode = true
		case "LIBRARYNAME":
			if pattern != nil {
				w.error(fmt.Sprintf("ERR Unknown argument %s", printable(c.args[i])))
				return
			}
			if i+1 >= len(c.args) {
				w.error("ERR library name argument was not given")
				return
			}
			i++
			pattern = c.args[i]
		default:
			w.error(fmt.Sprintf("ERR Unknown argument %s", printable(c.args[i])))
			return
		}
	}
	var libs []*functionLib
	for _, n := range fs.names() {
		if pattern == nil || globMatch(pattern, []byte(n)) {
			libs = append(libs, fs.libs[n])
		}
	}
	w.array(len(libs))
	for _, lib := range libs {
		fields := 3
		if withCode {
			fields = 4
		}
		w.mapLen(fields)
		w.bulkString("library_name")
		w.bulkString(lib.name)
		w.bulkString("engine")
		w.bulkString("LUA")
		w.bulkString("functions")
		names := make([]string, 0, len(lib.funcs))
		for n := range lib.funcs {
			names = append(names, n)
		}
		sort.Strings(names)
		w.array(len(names))
		for _, n := range names {
			f := lib.funcs[n] // keyed by the lower-case name
			w.mapLen(3)
			w.bulkString("name")
			w.bulkString(f.name)
			w.bulkString("description")
			if f.desc == "" {
				w.null()
			} else {
				w.bulkString(f.desc)
			}
			w.bulkString("flags")
			w.setLen(len(f.flags))
			for _, fl := range f.flags {
				w.simple(fl)
			}
		}
		if withCode {
			w.bulkString("library_code")
			w.bulkString(lib.code)
		}
	}
}

// stats answers FUNCTION STATS: the running script and the engine's counts.
func (e *scriptEngine) stats(c *call) {
	w := c.w
	w.mapLen(2)
	w.bulkString("running_script")
	if run := e.running.Load(); run != nil && !run.eval {
		w.mapLen(3)
		w.bulkString("name")
		w.bulkString(run.name)
		w.bulkString("command")
		w.array(len(run.command))
		for _, a := range run.command {
			w.bulk(a)
		}
		w.bulkString("duration_ms")
		w.integer(time.Since(run.start).Milliseconds())
	} else {
		w.null()
	}
	w.bulkString("engines")
	w.mapLen(1)
	w.bulkString("LUA")
	w.mapLen(2)
	w.bulkString("libraries_count")
	libs, funcs := e.functionCounts()
	w.integer(int64(libs))
	w.bulkString("functions_count")
	w.integer(int64(funcs))
}

// functionCounts reads the counts without waiting for a running script.
func (e *scriptEngine) functionCounts() (libs, funcs int) {
	return int(e.libCount.Load()), int(e.funcCount.Load())
}

// cmdFCall answers FCALL and FCALL_RO.
func cmdFCall(c *call) {
	if c.s.monitors.n.Load() > 0 { // before the function's own commands, as Redis
		c.s.feedMonitorsNow(c.cl, false, c.cmd.name, c.args)
	}
	ro := strings.HasSuffix(c.cmd.name, "_ro")
	if _, isInt := parseStrictInt(c.args[2]); !isInt {
		c.w.error("ERR Bad number of keys provided")
		return
	}
	keys, argv, ok := scriptKeys(c)
	if !ok {
		return
	}
	c.s.scripts.run(c, func(e *scriptEngine) (*luaVM, runSpec, string) {
		fs := e.functions()
		f := fs.funcs[strings.ToLower(string(c.args[1]))]
		if f == nil {
			return nil, runSpec{}, "ERR Function not found"
		}
		noWrites := slices.Contains(f.flags, "no-writes")
		if ro && !noWrites {
			return nil, runSpec{}, "ERR Can not execute a script with write flag using *_ro command."
		}
		return fs.vm, runSpec{eval: false, name: f.name, source: "@user_function", readOnly: noWrites,
			keys: keys, argv: argv, fn: f.fn}, ""
	})
}

// countFunctions refreshes the counts FUNCTION STATS reads (vmMu held).
func (e *scriptEngine) countFunctions() {
	if e.fset == nil {
		e.libCount.Store(0)
		e.funcCount.Store(0)
		return
	}
	e.libCount.Store(int64(len(e.fset.libs)))
	e.funcCount.Store(int64(len(e.fset.funcs)))
}
