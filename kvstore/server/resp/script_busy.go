package resp

// A script cannot take the server down.
//
// Invariants: while a script runs past Options.BusyScriptTime every other
// connection is answered Redis's BUSY error for everything but SCRIPT KILL,
// FUNCTION KILL/STATS and SHUTDOWN NOSAVE — also the connections of the
// event loop that runs the script, which the watchdog serves while the
// loop's goroutine runs the script — and a
// script that wrote cannot be killed (its writes would be half a script);
// a script that allocates past Options.ScriptMaxMemory is stopped with an
// error. The process never exits or crashes because of a script.

import (
	"context"
	"fmt"
	"runtime/metrics"
	"strings"
	"time"
)

// busyPoll is how often the watchdog checks the running script's time and
// memory and, once the script is busy, serves the other connections.
const busyPoll = 5 * time.Millisecond

// watchIdle is how long the watchdog outlives the last script: a server
// that runs scripts keeps one goroutine ticking, an idle one none.
const watchIdle = time.Second

// begin publishes run as the running script (BUSY, SCRIPT KILL and FUNCTION
// STATS see it from now on) and makes sure the watchdog is alive. The
// script then runs on the caller's goroutine: no hand-off, no timer per call.
func (e *scriptEngine) begin(run *scriptRun) {
	e.runs.Add(1)
	e.running.Store(run)
	if !e.watched.Load() && e.watched.CompareAndSwap(false, true) {
		go e.watch()
	}
}

// end takes run down once its script returned. It waits for a serving of
// the loop's other connections that is under way (the watchdog serves them
// on its goroutine while the loop's own runs the script), so the loop's
// state is the loop's again when end returns; running stays set until
// then, so the connections served meanwhile were all answered BUSY.
func (e *scriptEngine) end(run *scriptRun) {
	run.serving.Lock()
	run.ended = true
	run.serving.Unlock()
	e.running.Store(nil)
}

// watch is the engine's one watchdog: every busyPoll it looks at the
// running script, stops it past Options.ScriptMaxMemory, marks it busy past
// the busy time and then serves the other connections of its event loop.
// It exits after watchIdle without a script (begin starts it again).
func (e *scriptEngine) watch() {
	tick := time.NewTicker(busyPoll)
	defer tick.Stop()
	var seen *scriptRun
	var heap0 uint64
	runs, idleSince := e.runs.Load(), time.Now()
	for now := range tick.C {
		run := e.running.Load()
		if n := e.runs.Load(); run != nil || n != runs {
			runs, idleSince = n, now
		} else if now.Sub(idleSince) >= watchIdle {
			e.watched.Store(false)
			// A script that began after the load above has seen watched
			// true: take the watch back for it, or leave.
			if e.running.Load() == nil && e.runs.Load() == runs || !e.watched.CompareAndSwap(false, true) {
				return
			}
		}
		if run == nil {
			seen = nil
			continue
		}
		heap := heapObjectBytes()
		if run != seen {
			// A script seen for the first time: what it allocates is the
			// heap's growth from its lowest point since, give or take a
			// GC cycle (garbage of before the script is swept meanwhile).
			seen, heap0 = run, heap
			continue
		}
		heap0 = min(heap0, heap)
		e.watchRun(run, heap-heap0)
	}
}

// watchRun is one look of the watchdog at a script it saw before, which
// has grown the heap by grown bytes.
func (e *scriptEngine) watchRun(run *scriptRun, grown uint64) {
	if e.maxMemory > 0 && grown > uint64(e.maxMemory) {
		run.stop(fmt.Sprintf("ERR Script exceeded the memory limit of %d bytes (devkit kv serve --script-max-memory)", e.maxMemory))
	}
	if after := time.Duration(e.busyAfterNanos.Load()); !run.busy.Load() && after > 0 && time.Since(run.start) >= after {
		run.busy.Store(true)
		e.log.Warn("a script has run longer than the busy time; other clients get BUSY until it ends (SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE)",
			"script", run.name, "busy_after", after)
	}
	if !run.busy.Load() || run.serveBusy == nil {
		return
	}
	run.serving.Lock()
	defer run.serving.Unlock()
	if !run.ended {
		run.serveBusy()
	}
}

// heapObjectBytes is the heap's object bytes (live and not yet swept): the
// growth while a script runs is what it allocated, give or take a GC cycle.
func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// busyReply is the BUSY error for cmd when a script is busy, or "" when cmd
// may run (Redis's allow-busy commands).
func (s *Server) busyReply(cmd *command, args [][]byte) string {
	run := s.scripts.running.Load()
	if run == nil || !run.busy.Load() {
		return ""
	}
	sub := ""
	if len(args) > 1 {
		sub = strings.ToUpper(string(args[1]))
	}
	switch cmd.name {
	case "script":
		if sub == "KILL" {
			return ""
		}
	case "function":
		if sub == "KILL" || sub == "STATS" {
			return ""
		}
	// Redis 7.0's allow-busy commands, but EXEC (which Redis refuses with
	// EXECABORT, execute's answer) and WATCH (which would wait for the
	// script's update to read its keys' versions).
	case "shutdown", "auth", "multi", "discard", "unwatch", "quit":
		return ""
	}
	if run.eval {
		return busyEvalErr
	}
	return busyFunctionErr
}

// shutdownScript handles SHUTDOWN while a script runs: NOSAVE stops it
// (its writes are dropped) and the shutdown goes on; else Redis refuses.
func (s *Server) shutdownScript(nosave bool) bool {
	run := s.scripts.running.Load()
	if run == nil {
		return true
	}
	if !nosave {
		return false
	}
	run.shutdown.Store(true)
	run.stop("ERR the server is shutting down (SHUTDOWN NOSAVE)")
	return true
}

// cmdShutdown answers SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: the server stops
// as a signal stops it (every acknowledged write is already durable, so
// SAVE and NOSAVE differ only while a script runs: NOSAVE drops its writes).
func cmdShutdown(c *call) {
	nosave := false
	for _, a := range c.args[1:] {
		switch strings.ToUpper(string(a)) {
		case "NOSAVE":
			nosave = true
		case "SAVE", "NOW", "FORCE":
		case "ABORT":
			c.w.error("ERR No shutdown in progress.")
			return
		default:
			c.fail(errSyntax)
			return
		}
	}
	if c.s.opts.OnShutdown == nil {
		c.w.error("ERR SHUTDOWN is not enabled on this server")
		return
	}
	if !c.s.shutdownScript(nosave) {
		c.w.error("UNKILLABLE Errors trying to SHUTDOWN. Check logs.")
		return
	}
	c.s.opts.Logger.Warn("SHUTDOWN received; stopping", "nosave", nosave)
	go c.s.opts.OnShutdown(context.Background())
	c.cl.quit = true
}

// configSet handles CONFIG SET busy-reply-threshold (lua-time-limit), in
// milliseconds, the one scripting setting that changes at run time; it
// reports whether the command was answered.
func (e *scriptEngine) configSet(c *call) bool {
	if len(c.args) != 4 {
		return false
	}
	name := strings.ToLower(string(c.args[2]))
	if name != "busy-reply-threshold" && name != "lua-time-limit" {
		return false
	}
	ms, ok := parseStrictInt(c.args[3])
	if !ok || ms < 0 {
		c.w.error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - argument couldn't be parsed into an integer", name))
		return true
	}
	e.busyAfterNanos.Store(int64(time.Duration(ms) * time.Millisecond))
	c.w.ok()
	return true
}
