package resp

// The command table is the one source of what the server knows about a
// command: dispatch looks a command up here, checks its arity and flags
// (auth, MULTI), counts it under its metrics op, and COMMAND (COUNT, LIST,
// INFO, DOCS) reports exactly these rows — a command cannot be served
// without being listed, nor listed without being served.

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// cmdFlags say how a command may be run.
type cmdFlags uint16

const (
	// flagWrite: the command may change the keyspace.
	flagWrite cmdFlags = 1 << iota
	// flagReadonly: the command reads keys and changes nothing.
	flagReadonly
	// flagFast: O(1) or O(log N).
	flagFast
	// flagAdmin: a server-wide operation (SAVE, FLUSHDB).
	flagAdmin
	// flagNoAuth: allowed before AUTH when a password is set.
	flagNoAuth
	// flagTx: runs inside EXEC's atomic update (it reads and writes keys
	// only through the transaction, or touches nothing). Other commands run
	// between EXEC's atomic updates (see cmdExec).
	flagTx
	// flagNoQueue: runs at once even between MULTI and EXEC (EXEC, DISCARD,
	// MULTI, WATCH, QUIT).
	flagNoQueue
	// flagDefers: the command's writes may stay pending until the end of the
	// connection's burst; every other command first awaits them.
	flagDefers
	// flagNoMulti: refused between MULTI and EXEC (Redis's no-multi: SAVE).
	flagNoMulti
	// flagNoScript: refused inside a script (Redis's noscript: EVAL, SCRIPT).
	flagNoScript
	// flagPubSub: served in subscribed mode (the (un)subscribe commands,
	// PING, QUIT, RESET); every other command is refused there.
	flagPubSub
	// flagSkipMonitor: not shown to MONITOR after it runs: server
	// administration, and the script commands, shown before they run
	// (monitor.go).
	flagSkipMonitor
)

// flagNames are the Redis names COMMAND INFO reports.
var flagNames = []struct {
	f    cmdFlags
	name string
}{
	{flagWrite, "write"}, {flagReadonly, "readonly"}, {flagFast, "fast"}, {flagAdmin, "admin"},
	{flagNoAuth, "no_auth"}, {flagNoMulti, "no_multi"}, {flagNoScript, "noscript"},
}

// command is one row of the table.
type command struct {
	name string // lower case, as COMMAND reports it
	// arity follows Redis: N means exactly N arguments (the name included),
	// -N at least N.
	arity int
	flags cmdFlags
	// firstKey, lastKey, step locate the keys among the arguments, as in
	// COMMAND INFO (lastKey -1: up to the last argument).
	firstKey, lastKey, step int
	op                      metrics.Op
	group, summary          string
	run                     func(c *call)
	stats                   *cmdStats // INFO commandstats (set by newCommandSet)
}

// cmdStats are one command's INFO commandstats counters, as Redis keeps
// them: calls run, their time, calls refused before running (arity,
// NOAUTH) and calls that answered an error.
type cmdStats struct{ calls, usec, rejected, failed atomic.Int64 }

// monoBase is a fixed instant: time.Since(monoBase) reads the monotonic
// clock alone, where time.Now reads the wall clock too (two clock reads).
var monoBase = time.Now()

// runCounted runs c's command — every command that runs goes through it:
// a connection's, each of EXEC's, a script's — and counts it in INFO
// commandstats. A tracking client's read is recorded before it reads
// (tracking.go; a script's reads by its own rule, scriptCtx.exec), and the
// monitors are shown the command after it ran (monitor.go).
func runCounted(c *call) {
	if c.cl.trk.on && !c.fromScript {
		c.s.trackRead(c.cl, c.cmd, c.args)
	}
	errs, t0 := c.w.errs, time.Since(monoBase)
	c.cmd.run(c)
	st := c.cmd.stats
	st.calls.Add(1)
	st.usec.Add((time.Since(monoBase) - t0).Microseconds())
	if c.w.errs > errs {
		st.failed.Add(1)
	}
	if c.s.monitors.n.Load() > 0 {
		c.s.feedMonitors(c.cl, c.fromScript, c.cmd, c.args)
	}
}

// commandTable lists every command served, in the order COMMAND reports them.
// It is built once per server (it holds no mutable state) so that handlers
// may refer to the table itself (COMMAND) without an initialisation cycle.
func commandTable() []command {
	return []command{
		// connection
		{name: "ping", arity: -1, flags: flagFast | flagTx | flagPubSub, op: metrics.OpPing, group: "connection", summary: "Returns PONG, or the argument.", run: cmdPing},
		{name: "echo", arity: 2, flags: flagFast | flagTx, op: metrics.OpPing, group: "connection", summary: "Returns the argument.", run: cmdEcho},
		{name: "quit", arity: -1, flags: flagFast | flagNoAuth | flagNoQueue | flagPubSub, op: metrics.OpOther, group: "connection", summary: "Closes the connection.", run: cmdQuit},
		{name: "monitor", arity: 1, flags: flagAdmin | flagNoScript | flagTx, op: metrics.OpOther, group: "server", summary: "Streams every command the server runs, from every connection, as Redis's MONITOR lines.", run: cmdMonitor},
		{name: "reset", arity: 1, flags: flagFast | flagNoAuth | flagNoQueue | flagPubSub | flagNoScript, op: metrics.OpOther, group: "connection", summary: "Resets the connection: discards MULTI, unwatches, unsubscribes, RESP2, no name, CLIENT REPLY ON, and logs out under --requirepass.", run: cmdReset},
		{name: "auth", arity: -2, flags: flagFast | flagNoAuth | flagNoQueue, op: metrics.OpOther, group: "connection", summary: "Authenticates the connection (--requirepass).", run: cmdAuth},
		{name: "hello", arity: -1, flags: flagFast | flagNoAuth | flagTx | flagNoScript, op: metrics.OpOther, group: "connection", summary: "HELLO [2 [AUTH user pass] [SETNAME name]]: authenticates, names and describes the connection; protocol 3 is NOPROTO (RESP2 only).", run: cmdHello},
		{name: "publish", arity: 3, flags: flagTx | flagFast, op: metrics.OpOther, group: "pubsub", summary: "Delivers a message to a channel's subscribers; returns how many received it.", run: cmdPublish},
		{name: "spublish", arity: 3, flags: flagTx | flagFast, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpOther, group: "pubsub", summary: "As PUBLISH, to a shard channel (one node holds every slot).", run: cmdSPublish},
		{name: "subscribe", arity: -2, flags: flagTx | flagNoScript | flagPubSub, op: metrics.OpOther, group: "pubsub", summary: "Listens for messages published to channels.", run: cmdSubscribe},
		{name: "unsubscribe", arity: -1, flags: flagTx | flagNoScript | flagPubSub, op: metrics.OpOther, group: "pubsub", summary: "Stops listening to channels (all without arguments).", run: cmdUnsubscribe},
		{name: "psubscribe", arity: -2, flags: flagTx | flagNoScript | flagPubSub, op: metrics.OpOther, group: "pubsub", summary: "Listens for messages published to channels matching glob patterns.", run: cmdPSubscribe},
		{name: "punsubscribe", arity: -1, flags: flagTx | flagNoScript | flagPubSub, op: metrics.OpOther, group: "pubsub", summary: "Stops listening to patterns (all without arguments).", run: cmdPUnsubscribe},
		{name: "ssubscribe", arity: -2, flags: flagTx | flagNoScript | flagPubSub, firstKey: 1, lastKey: -1, step: 1, op: metrics.OpOther, group: "pubsub", summary: "Listens for messages published to shard channels.", run: cmdSSubscribe},
		{name: "sunsubscribe", arity: -1, flags: flagTx | flagNoScript | flagPubSub, firstKey: 1, lastKey: -1, step: 1, op: metrics.OpOther, group: "pubsub", summary: "Stops listening to shard channels (all without arguments).", run: cmdSUnsubscribe},
		{name: "pubsub", arity: -2, flags: flagTx, op: metrics.OpOther, group: "pubsub", summary: "PUBSUB CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS, SHARDNUMSUB.", run: cmdPubsub},
		{name: "wait", arity: 3, flags: flagTx | flagNoScript, op: metrics.OpOther, group: "generic", summary: "Answers 0 at once: there are no replicas to wait for.", run: cmdWait},
		{name: "select", arity: 2, flags: flagFast | flagTx, op: metrics.OpOther, group: "connection", summary: "Selects database 0 (the only one).", run: cmdSelect},
		{name: "client", arity: -2, flags: flagTx | flagNoScript, op: metrics.OpOther, group: "connection", summary: "CLIENT LIST, INFO, ID, SETNAME, GETNAME, SETINFO.", run: cmdClient},

		// strings
		{name: "get", arity: 2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "string", summary: "Returns the value of a key.", run: cmdGet},
		{name: "set", arity: -3, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Sets the value of a key; NX, XX, GET, EX, PX, EXAT, PXAT, KEEPTTL.", run: cmdSet},
		{name: "setnx", arity: 3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Sets the value of a key only when it does not exist.", run: cmdSetNX},
		{name: "getset", arity: 3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Sets a key and returns its previous value.", run: cmdGetSet},
		{name: "getdel", arity: 2, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpDelete, group: "string", summary: "Returns the value of a key and deletes it.", run: cmdGetDel},
		{name: "mget", arity: -2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: -1, step: 1, op: metrics.OpGet, group: "string", summary: "Returns the values of keys.", run: cmdMGet},
		{name: "mset", arity: -3, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: -1, step: 2, op: metrics.OpSet, group: "string", summary: "Sets keys atomically (one engine batch).", run: cmdMSet},
		{name: "append", arity: 3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Appends to the value of a key; returns the new length.", run: cmdAppend},
		{name: "strlen", arity: 2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "string", summary: "Returns the length of a value.", run: cmdStrlen},
		{name: "incr", arity: 2, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Adds 1 to the integer value of a key.", run: cmdIncr},
		{name: "decr", arity: 2, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Subtracts 1 from the integer value of a key.", run: cmdDecr},
		{name: "incrby", arity: 3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Adds an integer to the integer value of a key.", run: cmdIncrBy},
		{name: "decrby", arity: 3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Subtracts an integer from the integer value of a key.", run: cmdDecrBy},
		{name: "incrbyfloat", arity: 3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Adds a float to the numeric value of a key.", run: cmdIncrByFloat},

		{name: "getrange", arity: 4, flags: flagReadonly | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "string", summary: "Returns a substring of a value (negative indexes count from the end).", run: cmdGetRange},
		{name: "substr", arity: 4, flags: flagReadonly | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "string", summary: "As GETRANGE.", run: cmdGetRange},
		{name: "setrange", arity: 4, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Overwrites part of a value at an offset, padding with zero bytes; returns the new length.", run: cmdSetRange},
		{name: "msetnx", arity: -3, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: -1, step: 2, op: metrics.OpSet, group: "string", summary: "Sets keys atomically only when none of them exists.", run: cmdMSetNX},
		{name: "setbit", arity: 4, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "bitmap", summary: "Sets or clears a bit; returns its old value.", run: cmdSetBit},
		{name: "getbit", arity: 3, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "bitmap", summary: "Returns a bit of a value.", run: cmdGetBit},
		{name: "bitcount", arity: -2, flags: flagReadonly | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "bitmap", summary: "Counts the set bits of a value, or of a BYTE or BIT range.", run: cmdBitCount},
		{name: "bitpos", arity: -3, flags: flagReadonly | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "bitmap", summary: "Returns the first set or clear bit, in a BYTE or BIT range.", run: cmdBitPos},
		{name: "bitfield", arity: -2, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "bitmap", summary: "GET, SET and INCRBY of i1..i64 and u1..u63 fields at bit offsets, with OVERFLOW WRAP, SAT or FAIL.", run: cmdBitField},
		{name: "bitfield_ro", arity: -2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "bitmap", summary: "BITFIELD's GET only.", run: cmdBitFieldRO},
		{name: "bitop", arity: -4, flags: flagWrite | flagDefers | flagTx, firstKey: 2, lastKey: -1, step: 1, op: metrics.OpSet, group: "bitmap", summary: "Stores the AND, OR, XOR or NOT of values; returns its length.", run: cmdBitOp},
		{name: "lcs", arity: -3, flags: flagReadonly | flagTx, firstKey: 1, lastKey: 2, step: 1, op: metrics.OpGet, group: "string", summary: "Returns the longest common subsequence of two values, its length (LEN) or its matches (IDX).", run: cmdLCS},

		// expiry
		{name: "setex", arity: 4, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Sets a key with an expiry in seconds.", run: cmdSetEx},
		{name: "psetex", arity: 4, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "string", summary: "Sets a key with an expiry in milliseconds.", run: cmdSetEx},
		{name: "getex", arity: -2, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "string", summary: "Returns a value and sets or clears its expiry.", run: cmdGetEx},
		{name: "expire", arity: -3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "generic", summary: "Sets an expiry in seconds; NX, XX, GT, LT.", run: cmdExpire},
		{name: "pexpire", arity: -3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "generic", summary: "Sets an expiry in milliseconds; NX, XX, GT, LT.", run: cmdExpire},
		{name: "expireat", arity: -3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "generic", summary: "Sets an expiry as a unix time in seconds.", run: cmdExpire},
		{name: "pexpireat", arity: -3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "generic", summary: "Sets an expiry as a unix time in milliseconds.", run: cmdExpire},
		{name: "ttl", arity: 2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "generic", summary: "Seconds until a key expires; -1 none, -2 missing.", run: cmdTTL},
		{name: "pttl", arity: 2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "generic", summary: "Milliseconds until a key expires; -1 none, -2 missing.", run: cmdTTL},
		{name: "expiretime", arity: 2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "generic", summary: "Unix time in seconds a key expires at.", run: cmdExpireTime},
		{name: "pexpiretime", arity: 2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "generic", summary: "Unix time in milliseconds a key expires at.", run: cmdExpireTime},
		{name: "persist", arity: 2, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "generic", summary: "Removes a key's expiry.", run: cmdPersist},

		// keys
		{name: "del", arity: -2, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: -1, step: 1, op: metrics.OpDelete, group: "generic", summary: "Deletes keys (one engine batch); returns how many existed.", run: cmdDel},
		{name: "unlink", arity: -2, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: -1, step: 1, op: metrics.OpDelete, group: "generic", summary: "As DEL.", run: cmdDel},
		{name: "touch", arity: -2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: -1, step: 1, op: metrics.OpGet, group: "generic", summary: "Counts the keys that exist (repeats count).", run: cmdExists},
		{name: "renamenx", arity: 3, flags: flagWrite | flagDefers | flagFast | flagTx, firstKey: 1, lastKey: 2, step: 1, op: metrics.OpSet, group: "generic", summary: "Renames a key only when the new name does not exist.", run: cmdRename},
		{name: "copy", arity: -3, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 2, step: 1, op: metrics.OpSet, group: "generic", summary: "Copies a value and its expiry to another key; REPLACE, DB 0.", run: cmdCopy},
		{name: "randomkey", arity: 1, flags: flagReadonly, op: metrics.OpGet, group: "generic", summary: "Returns a random key, or nil when there is none.", run: cmdRandomKey},
		{name: "exists", arity: -2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: -1, step: 1, op: metrics.OpGet, group: "generic", summary: "Counts the keys that exist (repeats count).", run: cmdExists},
		{name: "dump", arity: 2, flags: flagReadonly | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "generic", summary: "Returns a string's value in Redis's DUMP format (RDB version 10).", run: cmdDump},
		{name: "restore", arity: -4, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpSet, group: "generic", summary: "Creates a string from a DUMP payload; REPLACE, ABSTTL, IDLETIME, FREQ.", run: cmdRestore},
		{name: "type", arity: 2, flags: flagReadonly | flagFast | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "generic", summary: "Returns string, or none for a missing key.", run: cmdType},
		{name: "sort", arity: -2, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "generic", summary: "Sorts a list, set or sorted set; BY, LIMIT, GET, ASC|DESC, ALPHA, STORE.", run: cmdSort},
		{name: "sort_ro", arity: -2, flags: flagReadonly | flagTx, firstKey: 1, lastKey: 1, step: 1, op: metrics.OpGet, group: "generic", summary: "SORT without STORE.", run: cmdSortRO},
		{name: "rename", arity: 3, flags: flagWrite | flagDefers | flagTx, firstKey: 1, lastKey: 2, step: 1, op: metrics.OpSet, group: "generic", summary: "Renames a key atomically.", run: cmdRename},
		{name: "keys", arity: 2, flags: flagReadonly, op: metrics.OpScan, group: "generic", summary: "Returns the keys matching a glob pattern (O(N): prefer SCAN).", run: cmdKeys},
		{name: "scan", arity: -2, flags: flagReadonly, op: metrics.OpScan, group: "generic", summary: "Iterates over keys; MATCH glob, COUNT, TYPE.", run: cmdScan},
		{name: "dbsize", arity: 1, flags: flagReadonly | flagFast, op: metrics.OpStats, group: "server", summary: "Returns the number of keys.", run: cmdDBSize},

		// transactions
		{name: "multi", arity: 1, flags: flagFast | flagNoQueue, op: metrics.OpOther, group: "transactions", summary: "Starts a transaction.", run: cmdMulti},
		{name: "exec", arity: 1, flags: flagNoQueue | flagDefers, op: metrics.OpOther, group: "transactions", summary: "Runs the queued commands as one atomic engine batch.", run: cmdExec},
		{name: "watch", arity: -2, flags: flagFast | flagNoQueue, firstKey: 1, lastKey: -1, step: 1, op: metrics.OpOther, group: "transactions", summary: "Makes the next EXEC run only if none of the keys changed.", run: cmdWatch},
		{name: "unwatch", arity: 1, flags: flagFast | flagNoQueue, op: metrics.OpOther, group: "transactions", summary: "Forgets the watched keys.", run: cmdUnwatch},
		{name: "discard", arity: 1, flags: flagFast | flagNoQueue, op: metrics.OpOther, group: "transactions", summary: "Drops the queued commands.", run: cmdDiscard},

		// server
		{name: "info", arity: -1, flags: 0, op: metrics.OpStats, group: "server", summary: "Sections server, clients, memory, persistence, stats, keyspace.", run: cmdInfo},
		{name: "time", arity: 1, flags: flagFast | flagTx, op: metrics.OpOther, group: "server", summary: "Returns the server's time (seconds, microseconds).", run: cmdTime},
		{name: "lastsave", arity: 1, flags: flagFast, op: metrics.OpStats, group: "server", summary: "Unix time of the last snapshot.", run: cmdLastSave},
		{name: "save", arity: 1, flags: flagAdmin | flagNoMulti, op: metrics.OpOther, group: "server", summary: "Writes a snapshot now and compacts the log.", run: cmdSave},
		{name: "bgsave", arity: -1, flags: flagAdmin, op: metrics.OpOther, group: "server", summary: "Writes a snapshot now (answers once it is written).", run: cmdSave},
		{name: "flushdb", arity: -1, flags: flagWrite | flagDefers | flagAdmin, op: metrics.OpDelete, group: "server", summary: "Deletes every key; refused unless serve runs with --allow-flush.", run: cmdFlush},
		{name: "flushall", arity: -1, flags: flagWrite | flagDefers | flagAdmin, op: metrics.OpDelete, group: "server", summary: "As FLUSHDB (one database).", run: cmdFlush},
		{name: "command", arity: -1, flags: flagTx, op: metrics.OpOther, group: "server", summary: "COMMAND [COUNT|LIST|INFO|DOCS] from this table.", run: cmdCommand},
		{name: "function", arity: -2, flags: flagTx | flagNoScript, op: metrics.OpOther, group: "scripting", summary: "FUNCTION LOAD, LIST, DELETE, FLUSH, DUMP, RESTORE, KILL, STATS: Redis 7 functions, persisted.", run: cmdFunction},
		{name: "fcall", arity: -3, flags: flagTx | flagNoScript | flagDefers, op: metrics.OpOther, group: "scripting", summary: "Calls a function as one atomic engine batch.", run: cmdFCall},
		{name: "fcall_ro", arity: -3, flags: flagTx | flagNoScript | flagReadonly, op: metrics.OpOther, group: "scripting", summary: "Calls a no-writes function.", run: cmdFCall},
		{name: "eval", arity: -3, flags: flagTx | flagNoScript | flagDefers, op: metrics.OpOther, group: "scripting", summary: "Runs a Lua script as one atomic engine batch.", run: cmdEval},
		{name: "evalsha", arity: -3, flags: flagTx | flagNoScript | flagDefers, op: metrics.OpOther, group: "scripting", summary: "Runs a cached Lua script by its SHA1.", run: cmdEval},
		{name: "eval_ro", arity: -3, flags: flagTx | flagNoScript | flagReadonly, op: metrics.OpOther, group: "scripting", summary: "Runs a read-only Lua script.", run: cmdEval},
		{name: "evalsha_ro", arity: -3, flags: flagTx | flagNoScript | flagReadonly, op: metrics.OpOther, group: "scripting", summary: "Runs a cached read-only Lua script by its SHA1.", run: cmdEval},
		{name: "script", arity: -2, flags: flagNoScript, op: metrics.OpOther, group: "scripting", summary: "SCRIPT LOAD, EXISTS, FLUSH, KILL.", run: cmdScript},
		{name: "shutdown", arity: -1, flags: flagAdmin | flagNoScript | flagNoMulti, op: metrics.OpOther, group: "server", summary: "Stops the server; NOSAVE also stops a busy script, dropping its writes.", run: cmdShutdown},
		{name: "object", arity: -2, flags: flagReadonly | flagTx, firstKey: 2, lastKey: 2, step: 1, op: metrics.OpGet, group: "generic", summary: "OBJECT ENCODING/REFCOUNT/FREQ/IDLETIME of a string, as far as meaningful.", run: cmdObject},
		{name: "config", arity: -2, flags: flagAdmin, op: metrics.OpOther, group: "server", summary: "CONFIG GET (read-only view of the flags), CONFIG RESETSTAT.", run: cmdConfig},
	}
}

// commandSet is the table with its index by upper-case name.
type commandSet struct {
	rows   []command
	byName map[string]*command
}

func newCommandSet() *commandSet {
	cs := &commandSet{rows: append(commandTable(), collectionCommands()...)}
	cs.byName = make(map[string]*command, len(cs.rows))
	for i := range cs.rows {
		cs.rows[i].stats = new(cmdStats)
		switch cs.rows[i].name {
		case "save", "bgsave", "shutdown", "config", "monitor", // Redis's admin commands
			"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro": // fed before they run
			cs.rows[i].flags |= flagSkipMonitor
		}
		cs.byName[strings.ToUpper(cs.rows[i].name)] = &cs.rows[i]
	}
	return cs
}

// maxCommandName bounds the command names we look up; longer ones are unknown.
const maxCommandName = 16

// lookup finds a command by name, in any case, without allocating.
func (cs *commandSet) lookup(name []byte) *command {
	if len(name) > maxCommandName {
		return nil
	}
	var upper [maxCommandName]byte
	for i, c := range name {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper[i] = c
	}
	return cs.byName[string(upper[:len(name)])]
}

// keysAt is the arguments at the row's key positions (none when it has
// no keys).
func (cmd *command) keysAt(args [][]byte) [][]byte {
	if cmd.firstKey == 0 {
		return nil
	}
	last := cmd.lastKey
	if last < 0 {
		last += len(args)
	}
	var keys [][]byte
	for i := cmd.firstKey; i <= last && i < len(args); i += max(cmd.step, 1) {
		keys = append(keys, args[i])
	}
	return keys
}

// arityOK checks the argument count against the row's arity.
func (cmd *command) arityOK(n int) bool {
	if cmd.arity >= 0 {
		return n == cmd.arity
	}
	return n >= -cmd.arity
}

// commandGetKeys answers COMMAND GETKEYS cmd arg... (withFlags false) and
// COMMAND GETKEYSANDFLAGS cmd arg... (withFlags true: each key with its
// Redis key-spec flags) from the table's key positions, with Redis 7's errors.
func commandGetKeys(c *call, withFlags bool) {
	w := c.w
	if len(c.args) < 4 {
		wrongArgs(w, "command|"+strings.ToLower(string(c.args[1])))
		return
	}
	sub := c.args[2:]
	cmd := c.s.cmds.lookup(sub[0])
	if cmd != nil && cmd.group == "scripting" && cmd.arity == -3 && cmd.arityOK(len(sub)) {
		scriptGetKeys(c, sub) // EVAL and FCALL: numkeys says where the keys are
		return
	}
	switch {
	case cmd == nil:
		w.error("ERR Invalid command specified")
		return
	case !cmd.arityOK(len(sub)):
		w.error("ERR Invalid number of arguments specified for command")
		return
	case cmd.firstKey == 0:
		w.error("ERR The command has no key arguments")
		return
	}
	var keys []string
	for _, k := range cmd.keysAt(sub) {
		keys = append(keys, string(k))
	}
	storeKey := cmd.name == "sort" && sortStoreKey(sub) != ""
	if storeKey {
		keys = append(keys, sortStoreKey(sub))
	}
	if !withFlags {
		w.bulkStrings(keys...)
		return
	}
	w.array(len(keys))
	for i, k := range keys {
		w.array(2)
		w.bulkString(k)
		flags := cmd.keyFlagsOf(i) // (SORT's STORE key: its rest)
		w.setLen(len(flags))
		for _, f := range flags {
			w.simple(f)
		}
	}
}

// flagList is the row's flags by their Redis names.
func (cmd *command) flagList() []string {
	var out []string
	for _, f := range flagNames {
		if cmd.flags&f.f != 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// containers are the commands whose first argument names a subcommand:
// Redis names them "command|sub" in its errors.
var containers = map[string]bool{"client": true, "command": true, "config": true, "function": true,
	"script": true, "object": true, "pubsub": true}

// fullName is the command's name as Redis's errors give it.
func fullName(cmd *command, args [][]byte) string {
	if containers[cmd.name] && len(args) > 1 {
		return cmd.name + "|" + strings.ToLower(string(args[1]))
	}
	return cmd.name
}

func wrongArgs(w *replyWriter, name string) {
	w.error(fmt.Sprintf("ERR wrong number of arguments for '%s' command", name))
}

func unknownCommand(w *replyWriter, args [][]byte) {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", printable(args[0]))
	for _, a := range args[1:min(len(args), 4)] {
		fmt.Fprintf(&b, "'%s' ", printable(a))
	}
	w.error(b.String())
}

// printable cuts an argument for an error message and hides bytes that
// would not read well.
func printable(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '\uFFFD' {
			return '?'
		}
		return r
	}, string(b))
}

// cmdCommand answers COMMAND, COMMAND COUNT, LIST, INFO name..., DOCS [name...].
func cmdCommand(c *call) {
	w, cs := c.w, c.s.cmds
	sub := ""
	if len(c.args) > 1 {
		sub = strings.ToUpper(string(c.args[1]))
	}
	// rows are those named after the subcommand, or all.
	rows := func() []*command {
		var out []*command
		if len(c.args) <= 2 {
			for i := range cs.rows {
				out = append(out, &cs.rows[i])
			}
			return out
		}
		for _, name := range c.args[2:] {
			out = append(out, cs.lookup(name)) // nil: unknown
		}
		return out
	}
	switch sub {
	case "COUNT", "HELP":
		if len(c.args) != 2 {
			wrongArgs(w, "command|"+strings.ToLower(sub))
			return
		}
	}
	switch sub {
	case "COUNT":
		w.integer(int64(len(cs.rows)))
	case "LIST":
		commandList(c)
	case "", "INFO":
		list := rows()
		if sub == "" {
			list = rows()[:len(cs.rows)]
		}
		w.array(len(list))
		for _, cmd := range list {
			if cmd == nil {
				w.nullArray()
				continue
			}
			// Redis 5's shape: name, arity, flags, first key, last key, step.
			w.array(6)
			w.bulkString(cmd.name)
			w.integer(int64(cmd.arity))
			flags := cmd.flagList()
			w.setLen(len(flags))
			for _, f := range flags {
				w.simple(f)
			}
			w.integer(int64(cmd.firstKey))
			w.integer(int64(cmd.lastKey))
			w.integer(int64(cmd.step))
		}
	case "DOCS":
		list := rows()
		n := 0
		for _, cmd := range list {
			if cmd != nil {
				n++
			}
		}
		// A map (flattened in RESP2) of name to its doc fields.
		w.mapLen(n)
		for _, cmd := range list {
			if cmd == nil {
				continue
			}
			w.bulkString(cmd.name)
			w.mapLen(2)
			w.bulkString("summary")
			w.bulkString(cmd.summary)
			w.bulkString("group")
			w.bulkString(cmd.group)
		}
	case "HELP":
		w.bulkStrings(commandHelp...)
	case "GETKEYS":
		commandGetKeys(c, false)
	case "GETKEYSANDFLAGS":
		commandGetKeys(c, true)
	default:
		unknownSubcommand(w, c.args[1], "COMMAND")
	}
}

var commandHelp = []string{
	"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"(no subcommand)",
	"    Return details about all commands.",
	"COUNT",
	"    Return the total number of commands in this server.",
	"LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
	"    Return a list of all commands in this server.",
	"INFO [<command-name> ...]",
	"    Return details about multiple commands.",
	"DOCS [<command-name> ...]",
	"    Return documentation details about multiple commands.",
	"GETKEYS <full-command>",
	"    Return the keys from a full Redis command.",
	"GETKEYSANDFLAGS <full-command>",
	"    Return the keys and the access flags from a full Redis command.",
	"HELP",
	"    Print this help.",
}

// unknownSubcommand is Redis 7's answer to a subcommand it does not know.
func unknownSubcommand(w *replyWriter, sub []byte, cmd string) {
	w.error(fmt.Sprintf("ERR unknown subcommand '%s'. Try %s HELP.", printable(sub), cmd))
}

// commandList answers COMMAND LIST [FILTERBY MODULE name|ACLCAT cat|PATTERN
// glob] as Redis 7 does: any other argument is a syntax error, a module or
// an ACL category that does not exist matches nothing.
func commandList(c *call) {
	var match func(*command) bool
	for i := 2; i < len(c.args); i += 3 {
		if !strings.EqualFold(string(c.args[i]), "FILTERBY") || len(c.args)-1-i != 2 {
			c.fail(errSyntax)
			return
		}
		arg := c.args[i+2]
		switch strings.ToUpper(string(c.args[i+1])) {
		case "MODULE":
			match = func(*command) bool { return false } // no modules
		case "ACLCAT":
			cat := strings.ToLower(string(arg))
			match = func(cmd *command) bool { return slices.Contains(cmd.aclCategories(), cat) }
		case "PATTERN":
			pat := bytes.ToLower(arg)
			match = func(cmd *command) bool { return globMatch(pat, []byte(cmd.name)) }
		default:
			c.fail(errSyntax)
			return
		}
	}
	var names []string
	for i := range c.s.cmds.rows {
		if cmd := &c.s.cmds.rows[i]; match == nil || match(cmd) {
			names = append(names, cmd.name)
		}
	}
	c.w.bulkStrings(names...)
}

// aclCategories are the command's Redis ACL categories, from its flags and
// group.
func (cmd *command) aclCategories() []string {
	var cats []string
	switch cmd.group {
	case "string":
		cats = append(cats, "string")
	case "bitmap":
		cats = append(cats, "bitmap")
	case "generic":
		cats = append(cats, "keyspace")
	case "connection":
		cats = append(cats, "connection")
	case "transactions":
		cats = append(cats, "transaction")
	}
	if cmd.flags&flagWrite != 0 {
		cats = append(cats, "write")
	}
	if cmd.flags&flagReadonly != 0 {
		cats = append(cats, "read")
	}
	if cmd.flags&flagAdmin != 0 {
		cats = append(cats, "admin", "dangerous")
	}
	if cmd.flags&flagFast != 0 {
		cats = append(cats, "fast")
	} else {
		cats = append(cats, "slow")
	}
	return cats
}
