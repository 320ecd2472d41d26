package resp

// A script cannot take the server down.
//
// Invariants: while a script runs past Options.BusyScriptTime every other
// connection is answered Redis's BUSY error for everything but SCRIPT KILL,
// FUNCTION KILL/STATS and SHUTDOWN NOSAVE — also the connections of the
// event loop that runs the script, which serves them from the wait — and a
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

// busyPoll is how often the waiting side checks the script's time and
// memory and, once the script is busy, serves the other connections.
const busyPoll = 5 * time.Millisecond

// await waits for the script's goroutine, watching its time and memory.
func (e *scriptEngine) await(c *call, run *scriptRun, done <-chan struct{}) {
	select {
	case <-done:
		return
	default:
	}
	tick := time.NewTicker(busyPoll)
	defer tick.Stop()
	heap0 := heapObjectBytes()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		if now := heapObjectBytes(); e.maxMemory > 0 && now > heap0 && now-heap0 > uint64(e.maxMemory) {
			run.stop(fmt.Sprintf("ERR Script exceeded the memory limit of %d bytes (devkit kv serve --script-max-memory)", e.maxMemory))
		}
		if after := time.Duration(e.busyAfterNanos.Load()); !run.busy.Load() && after > 0 && time.Since(run.start) >= after {
			run.busy.Store(true)
			e.log.Warn("a script has run longer than the busy time; other clients get BUSY until it ends (SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE)",
				"script", run.name, "busy_after", after)
		}
		if run.busy.Load() && c.cl.serveBusy != nil {
			c.cl.serveBusy()
		}
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
	case "shutdown", "auth", "multi", "discard", "exec", "quit":
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
