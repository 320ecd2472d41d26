package resp

// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: Redis's scripting.
//
// Invariants: a script runs inside one atomic update (call.update, the
// machinery of EXEC), so no other write is ordered between its calls and
// its writes are one engine batch — one log record, one fsync — whose
// reply leaves only once it is acknowledged; a script that fails after a
// write keeps what it wrote, as Redis does (the update commits whatever
// the transaction holds); the log holds the writes, never the script, so
// recovery never runs Lua. One script runs at a time (the update holds
// the commit pipeline), on the goroutine of the connection that called it;
// the engine's one watchdog answers others BUSY once it runs too long
// (script_busy.go).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Defaults of the scripting options.
const (
	// DefaultBusyScriptTime is Redis's busy-reply-threshold (lua-time-limit).
	DefaultBusyScriptTime = 5 * time.Second
	// DefaultScriptMaxMemory bounds what one script may allocate.
	DefaultScriptMaxMemory = 256 << 20
)

// scriptEngine holds the script cache, the VMs and the running script.
type scriptEngine struct {
	s   *Server
	log *slog.Logger

	mu    sync.Mutex
	cache map[string]*evalScript // sha -> script (not persisted, as in Redis)

	vmMu sync.Mutex   // the VMs run one script at a time
	vm   *luaVM       // EVAL's VM; replaced when a script taints it
	rand rand48       // math.random's sequence (vmMu)
	fset *functionSet // the function libraries (vmMu)

	libCount, funcCount atomic.Int64 // for FUNCTION STATS while a script runs
	persistErr          error        // the functions file could not be read at start

	running atomic.Pointer[scriptRun]
	runs    atomic.Uint64 // scripts started, for the watchdog's idle test
	watched atomic.Bool   // the watchdog goroutine is alive

	busyAfterNanos atomic.Int64 // busy-reply-threshold (CONFIG SET changes it)
	maxMemory      int64
}

// evalScript is one cached script.
type evalScript struct {
	sha      string
	body     string
	proto    *lua.FunctionProto
	noWrites bool // #!lua flags=no-writes
}

// scriptRun is the script being run, as other connections see it (SCRIPT
// KILL, BUSY, FUNCTION STATS).
type scriptRun struct {
	start  time.Time
	eval   bool   // EVAL/EVALSHA (else FCALL)
	name   string // the sha, or the function's name
	busy   atomic.Bool
	killed atomic.Bool
	wrote  atomic.Bool
	// shutdown: SHUTDOWN NOSAVE asked for the process to end; the script's
	// writes are dropped (its update fails).
	shutdown atomic.Bool
	ctx      stopContext  // what the script runs under: stop ends it
	cause    atomic.Value // string: why the script was stopped
	command  [][]byte     // the EVAL or FCALL (FUNCTION STATS)
	// serveBusy serves the other connections of the event loop that runs
	// the script (nil off the event loops); the watchdog calls it, under
	// serving, which end takes before the loop goes on.
	serveBusy func()
	serving   sync.Mutex
	ended     bool // (serving) the script returned: serve no more
}

// scriptCtx is one run as the Lua side sees it (redis.call). It is the
// VM's own, reused from run to run with its buffers (one script runs at a
// time on a VM, under vmMu).
type scriptCtx struct {
	e        *scriptEngine
	c        *call
	tx       txn
	run      *scriptRun
	readOnly bool
	resp3    bool
	tracked  bool // its caller's tracking has its keys (tracking.go)
	charged  int64
	fn       string      // the name in error messages: sha or function name
	source   string      // @user_script or @user_function
	reply    replyWriter // redis.call's reply, reused (exec)
	sub      call        // redis.call's command, reused (exec)
	args     [][]byte    // redis.call's argument array, reused (luaArgs)
}

func newScriptEngine(s *Server) *scriptEngine {
	e := &scriptEngine{s: s, log: s.opts.Logger, cache: map[string]*evalScript{},
		maxMemory: s.opts.ScriptMaxMemory, rand: newRand48()}
	e.busyAfterNanos.Store(int64(s.opts.BusyScriptTime))
	return e
}

// charge counts bytes a library function is about to build; false: past
// the script's memory bound.
func (sc *scriptCtx) charge(n int64) bool {
	sc.charged += n
	return sc.e.maxMemory <= 0 || sc.charged <= sc.e.maxMemory
}

// parseShebang reads "#!lua [flags=a,b]" at the start of a script: the
// flags, how many bytes it takes (the line feed stays, for line numbers),
// or Redis's error.
func parseShebang(body string) (flags []string, skip int, err error) {
	if !strings.HasPrefix(body, "#!") {
		return nil, 0, nil
	}
	line := body
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		line = body[:i]
	}
	parts := strings.Fields(line[2:])
	if len(parts) == 0 || parts[0] != "lua" {
		return nil, 0, errors.New("ERR Unexpected engine in script shebang")
	}
	for _, p := range parts[1:] {
		v, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return nil, 0, fmt.Errorf("ERR Unknown lua shebang option: %s", p)
		}
		for f := range strings.SplitSeq(v, ",") {
			switch f {
			case "no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys", "":
				if f != "" {
					flags = append(flags, f)
				}
			default:
				return nil, 0, fmt.Errorf("ERR Unexpected flag in script shebang: %s", f)
			}
		}
	}
	return flags, len(line), nil
}

// load compiles body into the cache (or finds it there).
func (e *scriptEngine) load(body []byte) (*evalScript, error) {
	sha := sha1hex(body)
	e.mu.Lock()
	sc := e.cache[sha]
	e.mu.Unlock()
	if sc != nil {
		return sc, nil
	}
	flags, skip, err := parseShebang(string(body))
	if err != nil {
		return nil, err
	}
	// The shebang line is replaced by a comment so that lines keep their numbers.
	src := string(body)
	if skip > 0 {
		src = "--" + src[2:]
	}
	proto, err := compileLua(src, "user_script")
	if err != nil {
		return nil, fmt.Errorf("ERR Error compiling script (new function): %s", luaCompileError(err))
	}
	sc = &evalScript{sha: sha, body: string(body), proto: proto}
	for _, f := range flags {
		if f == "no-writes" {
			sc.noWrites = true
		}
	}
	e.mu.Lock()
	if old := e.cache[sha]; old != nil {
		sc = old
	} else {
		e.cache[sha] = sc
	}
	e.mu.Unlock()
	return sc, nil
}

// luaCompileError is gopher-lua's syntax error in Lua 5.1's shape,
// "user_script:LINE: message" (gopher-lua says "user_script line:3(column:5)
// near 'x':   syntax error", or "user_script at EOF:   message").
func luaCompileError(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "user_script line:"); ok {
		if i := strings.IndexByte(rest, '('); i > 0 {
			what := rest
			if k := strings.Index(rest, ":"); k >= 0 {
				what = rest[k+1:]
			}
			return fmt.Sprintf("user_script:%s: %s", rest[:i], strings.TrimSpace(what))
		}
	}
	if rest, ok := strings.CutPrefix(msg, "user_script at EOF:"); ok {
		return "user_script: " + strings.TrimSpace(rest) + " near '<eof>'"
	}
	return msg
}

func (e *scriptEngine) lookup(sha []byte) *evalScript {
	if len(sha) != 40 {
		return nil
	}
	var lower [40]byte // the cache's key, without a string to allocate
	for i, c := range sha {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cache[string(lower[:])]
}

// cachedScripts is the number of scripts in the cache (INFO memory).
func (e *scriptEngine) cachedScripts() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.cache)
}

// evalVM returns EVAL's VM (vmMu held).
func (e *scriptEngine) evalVM() *luaVM {
	if e.vm == nil {
		e.vm = newLuaVM(e)
	}
	return e.vm
}

// cmdEval answers EVAL, EVALSHA, EVAL_RO and EVALSHA_RO.
func cmdEval(c *call) {
	if c.s.monitors.n.Load() > 0 { // before the script's own commands, as Redis
		c.s.feedMonitorsNow(c.cl, false, c.cmd.name, c.args)
	}
	name := c.cmd.name
	ro := strings.HasSuffix(name, "_ro")
	keys, argv, ok := scriptKeys(c)
	if !ok {
		return
	}
	e := c.s.scripts
	var script *evalScript
	if strings.HasPrefix(name, "evalsha") {
		if script = e.lookup(c.args[1]); script == nil {
			c.w.error("NOSCRIPT No matching script. Please use EVAL.")
			return
		}
	} else {
		var err error
		if script, err = e.load(c.args[1]); err != nil {
			c.w.error(err.Error())
			return
		}
	}
	e.run(c, func(e *scriptEngine) (*luaVM, runSpec, string) {
		vm := e.evalVM()
		fn, ok := vm.fns[script.sha]
		if !ok {
			fn = vm.L.NewFunctionFromProto(script.proto)
			fn.Env = vm.globalsProxy
			vm.fns[script.sha] = fn
		}
		return vm, runSpec{eval: true, name: script.sha, source: "@user_script", readOnly: ro || script.noWrites,
			keys: keys, argv: argv, fn: fn}, ""
	})
}

// scriptKeys splits EVAL's and FCALL's numkeys key... arg... with Redis's errors.
func scriptKeys(c *call) (keys, argv [][]byte, ok bool) {
	n, isInt := parseStrictInt(c.args[2])
	switch {
	case !isInt:
		c.fail(errNotInteger)
		return nil, nil, false
	case n > int64(len(c.args)-3):
		c.w.error("ERR Number of keys can't be greater than number of args")
		return nil, nil, false
	case n < 0:
		c.w.error("ERR Number of keys can't be negative")
		return nil, nil, false
	}
	return c.args[3 : 3+n], c.args[3+n:], true
}

// luaStrings is a new table of ss (FCALL's keys and args: a function may
// keep them).
func (vm *luaVM) luaStrings(ss [][]byte) *lua.LTable {
	t := vm.L.CreateTable(len(ss), 0)
	vm.vals.fill(t, ss)
	return t
}

// runSpec is one script or function call.
type runSpec struct {
	eval     bool
	name     string
	source   string
	readOnly bool
	resp3    bool
	// keys and argv: EVAL's KEYS and ARGV globals, FCALL's two arguments.
	keys, argv [][]byte
	fn         *lua.LFunction
}

// errScriptDropped fails a script's update: its writes are not kept
// (SHUTDOWN NOSAVE).
var errScriptDropped = errors.New("the script was stopped by SHUTDOWN NOSAVE; its writes are dropped")

// run runs a script inside the call's atomic update and writes its reply.
// pick chooses the VM and the function once the update and vmMu are held
// (lock order: the commit pipeline, then vmMu — EVAL inside EXEC holds the
// pipeline already), or returns an error reply.
func (e *scriptEngine) run(c *call, pick func(e *scriptEngine) (*luaVM, runSpec, string)) {
	// The reply is built in the connection's own buffer for it (the VM's
	// are the next script's once vmMu is released) and copied out once the
	// update is in: a failed update answers its error alone.
	reply := &c.cl.scriptReply
	err := c.update(func(tx txn) error {
		reply.buf, reply.errs, reply.resp3 = reply.buf[:0], 0, c.w.resp3
		e.vmMu.Lock()
		defer e.vmMu.Unlock()
		vm, spec, refused := pick(e)
		if refused != "" {
			reply.error(refused)
			return nil
		}
		run := &scriptRun{eval: spec.eval, name: spec.name, command: c.args, serveBusy: c.cl.serveBusy}
		run.start = time.Now()
		sc := vm.begin(e, c, tx, run, spec)
		e.begin(run)
		func() {
			defer e.end(run)
			defer func() {
				if p := recover(); p != nil {
					e.log.Error("script panicked", "script", spec.name, "panic", fmt.Sprint(p))
					reply.buf = reply.buf[:0]
					reply.error("ERR internal error running the script")
				}
			}()
			vm.call(sc, spec, reply)
		}()
		if spec.eval && !vm.intact() {
			vm.L.Close()
			e.vm = nil
		}
		if run.shutdown.Load() {
			return errScriptDropped
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.buf = append(c.w.buf, reply.buf...)
	c.w.errs += reply.errs
	if cap(reply.buf) > keepScratchBytes {
		reply.buf = nil
	}
}

// begin readies the VM's run context for one run (vmMu held).
func (vm *luaVM) begin(e *scriptEngine, c *call, tx txn, run *scriptRun, spec runSpec) *scriptCtx {
	sc := &vm.sc
	reply, args := sc.reply.buf[:0], sc.args[:0]
	*sc = scriptCtx{e: e, c: c, tx: tx, run: run, readOnly: spec.readOnly, resp3: spec.resp3, fn: spec.name,
		source: spec.source, args: args}
	sc.reply.buf, sc.reply.stats = reply, &e.s.errors
	return sc
}

// call runs the function on the VM and converts its result.
func (vm *luaVM) call(sc *scriptCtx, spec runSpec, w *replyWriter) {
	L := vm.L
	vm.runUD.Value = sc
	vm.cur = sc
	defer func() {
		vm.cur = nil
		vm.runUD.Value = nil
		sc.c, sc.tx, sc.run = nil, nil, nil // nothing of the run outlives it
		L.RemoveContext()
		L.SetTop(0)
	}()
	nargs := 0
	L.Push(spec.fn)
	if spec.eval {
		vm.keys.set(vm, "KEYS", spec.keys)
		vm.argv.set(vm, "ARGV", spec.argv)
	} else {
		L.Push(vm.luaStrings(spec.keys))
		L.Push(vm.luaStrings(spec.argv))
		nargs = 2
	}
	L.SetContext(&sc.run.ctx)
	err := L.PCall(nargs, 1, nil)
	if err != nil {
		w.errorOnce(sc.errorText(err), counted(err))
		return
	}
	luaToReply(w, L.Get(-1), 0, sc.resp3)
}

// argTable is EVAL's KEYS or ARGV table, kept from one call to the next
// while the script left it as it was given (Redis builds new ones every
// call; a script can tell the two apart only by changing one, and then the
// next call gets a new one).
type argTable struct {
	t *lua.LTable
	n int // the elements set last
}

// set makes t the global name with the elements ss.
func (at *argTable) set(vm *luaVM, name string, ss [][]byte) {
	if at.t == nil || !at.intact(&vm.vals) {
		at.t, at.n = vm.L.CreateTable(len(ss), 0), 0
		vm.globals.RawSetString(name, at.t)
	}
	vm.vals.fill(at.t, ss)
	for i := len(ss) + 1; i <= at.n; i++ {
		at.t.RawSetInt(i, lua.LNil)
	}
	at.n = len(ss)
}

// intact: no metatable and nothing past the elements set (those are
// compared, and replaced where they differ, when the table is filled
// again). The last element must still be there: integer keys live in
// gopher-lua's array part, which table.remove shortens, and Next from past
// the array's end would skip the hash part's first key.
func (at *argTable) intact(vals *luaValues) bool {
	if at.t.Metatable != lua.LNil {
		return false
	}
	var after lua.LValue = lua.LNil
	if at.n > 0 {
		if at.t.RawGetInt(at.n) == lua.LNil {
			return false
		}
		after = vals.num(lua.LNumber(at.n))
	}
	k, _ := at.t.Next(after)
	return k == lua.LNil
}

// stopContext is the context a script runs under. gopher-lua selects on
// its Done before every instruction; a context.WithCancel's is a real
// channel to poll (the select and the atomic load of the channel were 8 %
// of the server's CPU under the rate limiter's script), this one's is nil
// until the script is stopped, which chanrecv answers at once. Its
// children never see the stop (context.WithCancel of a nil Done does not
// propagate): coroutine.resume hands the resumed thread the resumer's
// context instead (script_lua.go).
type stopContext struct {
	done atomic.Pointer[chan struct{}]
}

func (c *stopContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *stopContext) Value(any) any               { return nil }

func (c *stopContext) Done() <-chan struct{} {
	if p := c.done.Load(); p != nil {
		return *p
	}
	return nil
}

func (c *stopContext) Err() error {
	if c.done.Load() != nil {
		return context.Canceled
	}
	return nil
}

// stop ends the script at its next instruction (scriptRun.cancel).
func (c *stopContext) stop() {
	ch := make(chan struct{})
	close(ch)
	c.done.CompareAndSwap(nil, &ch)
}

// errorText is the reply to a script that failed, in Redis 7's shape:
// "<CODE message> script: <name>, on @user_script:<line>.".
func (sc *scriptCtx) errorText(err error) string {
	run := sc.run
	var ae *lua.ApiError
	isAPI := errors.As(err, &ae)
	if cause, ok := run.cause.Load().(string); ok {
		// Stopped (SCRIPT KILL, the memory bound, SHUTDOWN NOSAVE): Redis
		// names the line the script was stopped on.
		line := 0
		if isAPI {
			if line = lineOf(ae.Object.String()); line == 0 {
				line = lineIn(ae.StackTrace)
			}
		}
		return cause + sc.where(line)
	}
	if !isAPI {
		return "ERR " + err.Error()
	}
	switch v := ae.Object.(type) {
	case *lua.LTable:
		msg, _ := v.RawGetString("err").(lua.LString)
		if msg == "" {
			return "ERR execution failure"
		}
		line := lineIn(ae.StackTrace)
		if n, ok := v.RawGetString("line").(lua.LNumber); ok {
			line = int(n)
		}
		return string(msg) + sc.where(line)
	default:
		msg := ae.Object.String()
		if ae.Type == lua.ApiErrorPanic && strings.Contains(msg, "callstack overflow") {
			msg = "stack overflow"
		}
		line := lineOf(msg)
		if line == 0 {
			line = lineIn(ae.StackTrace)
		}
		return "ERR " + msg + sc.where(line)
	}
}

// where is the " script: name, on @source:line." suffix (none without a line).
func (sc *scriptCtx) where(line int) string {
	if line <= 0 {
		return ""
	}
	return fmt.Sprintf(" script: %s, on %s:%d.", sc.fn, sc.source, line)
}

// lineIn finds the first "user_script:N:" of a stack trace.
func lineIn(trace string) int {
	for _, p := range []string{"user_script:", "user_function:"} {
		if i := strings.Index(trace, p); i >= 0 {
			return lineOf(trace[i:])
		}
	}
	return 0
}

// lineOf reads the line of "user_script:12: message".
func lineOf(msg string) int {
	for _, p := range []string{"user_script:", "user_function:"} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			if i := strings.IndexByte(rest, ':'); i > 0 {
				n, _ := strconv.Atoi(rest[:i])
				return n
			}
		}
	}
	return 0
}

// exec runs one command of redis.call/pcall inside the script's update. It
// returns the command's RESP reply, or the text of a refusal.
func (sc *scriptCtx) exec(args [][]byte) (reply []byte, refused string) {
	cmd := sc.c.s.cmds.lookup(args[0])
	switch {
	case cmd == nil:
		return nil, "Unknown Redis command called from script"
	case !cmd.arityOK(len(args)):
		refused = "Wrong number of args calling Redis command from script"
	case !allowedInScript(cmd):
		refused = "This Redis command is not allowed from script"
	case cmd.flags&flagWrite != 0 && sc.readOnly:
		refused = "Write commands are not allowed from read-only scripts."
	}
	if refused != "" {
		cmd.stats.rejected.Add(1) // INFO commandstats: rejected_calls, as in Redis
		return nil, refused
	}
	if cmd.flags&flagWrite != 0 {
		sc.run.wrote.Store(true)
	}
	// The reply buffer is the run's, reused by each call: the reply is
	// converted (copied) into Lua values before the next one.
	sc.reply.buf, sc.reply.errs, sc.reply.resp3 = sc.reply.buf[:0], 0, sc.resp3
	sc.sub = call{s: sc.c.s, cl: sc.c.cl, cmd: cmd, args: args, w: &sc.reply, tx: sc.tx, fromScript: true}
	if cl := sc.c.cl; cl.trk.on && cmd.flags&flagReadonly != 0 && !sc.tracked {
		// A read: the script's declared keys are tracked for its caller (Redis 7.0).
		sc.tracked = true
		sc.c.s.trackKeys(cl, declaredKeys(sc.c.args))
	}
	runCounted(&sc.sub)
	sc.sub = call{}
	return sc.reply.buf, ""
}

// allowedInScript: a command that runs inside the atomic update (flagTx)
// and is not one of Redis's no-script commands.
func allowedInScript(cmd *command) bool {
	if cmd.flags&flagTx == 0 || cmd.flags&(flagNoQueue|flagNoScript) != 0 {
		return false
	}
	return true
}

// redisLib builds the redis table of the sandbox.
func (vm *luaVM) redisLib(e *scriptEngine) *lua.LTable {
	L := vm.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return vm.redisCall(L, true) },
		"pcall": func(L *lua.LState) int { return vm.redisCall(L, false) },
		"error_reply": func(L *lua.LState) int {
			s, ok := L.Get(1).(lua.LString)
			if L.GetTop() != 1 || !ok {
				L.Error(luaErrorTable(L, "ERR wrong number or type of arguments"), 1)
			}
			msg := string(s)
			if !strings.HasPrefix(msg, "-") {
				msg = "-" + msg
			}
			L.Push(luaErrorTable(L, errorReplyText(msg)))
			return 1
		},
		"status_reply": func(L *lua.LState) int {
			s, ok := L.Get(1).(lua.LString)
			if L.GetTop() != 1 || !ok {
				L.Error(luaErrorTable(L, "ERR wrong number or type of arguments"), 1)
			}
			r := L.NewTable()
			r.RawSetString("ok", s)
			L.Push(r)
			return 1
		},
		"sha1hex": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.Error(luaErrorTable(L, "ERR wrong number of arguments"), 1)
			}
			L.Push(lua.LString(sha1hex([]byte(L.ToString(1)))))
			return 1
		},
		"log": func(L *lua.LState) int {
			if L.GetTop() < 2 {
				L.Error(luaErrorTable(L, "ERR redis.log() requires two arguments or more."), 1)
			}
			lvl, ok := L.Get(1).(lua.LNumber)
			if !ok {
				L.Error(luaErrorTable(L, "ERR First argument must be a number (log level)."), 1)
			}
			if lvl < 0 || lvl > 3 {
				L.Error(luaErrorTable(L, "ERR Invalid debug level."), 1)
			}
			parts := make([]string, 0, L.GetTop()-1)
			for i := 2; i <= L.GetTop(); i++ {
				parts = append(parts, L.ToString(i))
			}
			level := []slog.Level{slog.LevelDebug, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn}[int(lvl)]
			e.log.Log(context.Background(), level, strings.Join(parts, " "), "source", "script")
			return 0
		},
		"setresp": func(L *lua.LState) int {
			sc := vm.cur
			if sc == nil {
				L.Error(luaErrorTable(L, "ERR redis.setresp can only be called inside a script invocation"), 1)
			}
			if L.GetTop() != 1 {
				L.Error(luaErrorTable(L, "ERR redis.setresp() requires one argument."), 1)
			}
			v := L.CheckInt(1)
			if v != 2 && v != 3 {
				L.Error(luaErrorTable(L, "ERR RESP version must be 2 or 3."), 1)
			}
			sc.resp3 = v == 3
			return 0
		},
		"set_repl": func(L *lua.LState) int {
			if vm.cur == nil {
				L.Error(luaErrorTable(L, "ERR redis.set_repl can only be called inside a script invocation"), 1)
			}
			if L.GetTop() != 1 {
				L.Error(luaErrorTable(L, "ERR redis.set_repl() requires two arguments."), 1)
			}
			if f, ok := L.Get(1).(lua.LNumber); !ok || f < 0 || f > 3 {
				L.Error(luaErrorTable(L, "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."), 1)
			}
			return 0
		},
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(redisVersion))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(redisVersionNum))
	return t
}

// The Redis version scripts see (redis.REDIS_VERSION), the one INFO reports.
const (
	redisVersion    = "7.0.15"
	redisVersionNum = 0x0007000f
)

// redisCall is redis.call (raise) and redis.pcall.
func (vm *luaVM) redisCall(L *lua.LState, raise bool) int {
	fail := func(t *lua.LTable) int {
		if raise {
			if line := lineOf(L.Where(1)); line > 0 {
				t.RawSetString("line", lua.LNumber(line))
			}
			L.Error(t, 1)
		}
		L.Push(t)
		return 1
	}
	sc := vm.cur
	if sc == nil {
		return fail(luaErrorTable(L, "ERR redis.call/pcall can only be called inside a script invocation"))
	}
	if L.GetTop() == 0 {
		return fail(luaErrorTable(L, "ERR Please specify at least one argument for this redis lib call"))
	}
	args, ok := luaArgs(L, &vm.vals, sc.args)
	if !ok {
		return fail(luaErrorTable(L, "ERR Lua redis lib command arguments must be strings or integers"))
	}
	sc.args = args[:0] // the array, for the next call (no command keeps it)
	reply, refused := sc.exec(args)
	if refused != "" {
		// A refused command's error counts here, once (Redis: the
		// script's client got it), and not again if the script passes it on.
		msg := errorReplyText(refused)
		sc.c.s.errors.record(msg)
		return fail(markCounted(luaErrorTable(L, msg)))
	}
	v, _, isErr := respToLua(L, &vm.vals, reply, sc.resp3)
	if isErr {
		return fail(markCounted(v.(*lua.LTable))) // counted by the command's writer (sc.reply)
	}
	L.Push(v)
	return 1
}

// cmdScript answers SCRIPT LOAD, EXISTS, FLUSH, KILL and HELP.
func cmdScript(c *call) {
	w, e := c.w, c.s.scripts
	sub := strings.ToUpper(string(c.args[1]))
	switch sub {
	case "LOAD":
		if len(c.args) != 3 {
			wrongArgs(w, "script|load")
			return
		}
		sc, err := e.load(c.args[2])
		if err != nil {
			w.error(err.Error())
			return
		}
		w.bulkString(sc.sha)
	case "EXISTS":
		if len(c.args) < 3 {
			wrongArgs(w, "script|exists")
			return
		}
		w.array(len(c.args) - 2)
		for _, sha := range c.args[2:] {
			if e.lookup(sha) != nil {
				w.integer(1)
			} else {
				w.integer(0)
			}
		}
	case "FLUSH":
		if len(c.args) > 3 || (len(c.args) == 3 && !strings.EqualFold(string(c.args[2]), "SYNC") && !strings.EqualFold(string(c.args[2]), "ASYNC")) {
			w.error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		e.mu.Lock()
		e.cache = map[string]*evalScript{}
		e.mu.Unlock()
		e.vmMu.Lock()
		if e.vm != nil {
			e.vm.L.Close()
			e.vm = nil
		}
		e.vmMu.Unlock()
		w.ok()
	case "KILL":
		if len(c.args) != 2 {
			wrongArgs(w, "script|kill")
			return
		}
		e.kill(c, true)
	case "HELP":
		w.bulkStrings(scriptHelp...)
	default:
		unknownSubcommand(w, c.args[1], "SCRIPT")
	}
}

var scriptHelp = []string{
	"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
	"HELP",
	"    Print this help.",
}

// kill is SCRIPT KILL (eval) and FUNCTION KILL, with Redis's answers.
func (e *scriptEngine) kill(c *call, eval bool) {
	run := e.running.Load()
	switch {
	case run == nil:
		c.w.error("NOTBUSY No scripts in execution right now.")
	case run.wrote.Load():
		c.w.error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
	case eval && !run.eval:
		c.w.error(busyFunctionErr)
	case !eval && run.eval:
		c.w.error(busyEvalErr)
	default:
		run.stop("ERR Script killed by user with SCRIPT KILL...")
		run.killed.Store(true)
		c.w.ok()
	}
}

// stop ends the script at its next instruction with cause as its error.
func (run *scriptRun) stop(cause string) {
	run.cause.CompareAndSwap(nil, cause)
	run.ctx.stop()
}

// Redis's BUSY errors.
const (
	busyEvalErr     = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	busyFunctionErr = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)

// scriptGetKeys is COMMAND GETKEYS of EVAL/EVALSHA/FCALL...: the numkeys
// arguments after numkeys.
func scriptGetKeys(c *call, sub [][]byte) {
	c.w.bulks(declaredKeys(sub)) // none when numkeys is wrong: Redis, no mandatory keys
}

// declaredKeys is the keys EVAL's or FCALL's numkeys declares (none when
// numkeys is not a count of the arguments after it).
func declaredKeys(args [][]byte) [][]byte {
	n, ok := parseStrictInt(args[2])
	if !ok || n < 0 || n > int64(len(args)-3) {
		return nil
	}
	return args[3 : 3+n]
}
