package resp

// COMMAND GETKEYSANDFLAGS reports each key of a call with Redis 7's key-spec
// flags. A command's keys get the flags Redis gives them (keyFlagsByCommand);
// a command not listed there gets the flags its table row implies: RO access
// for a read-only command, RW update for a writing one.

import "strings"

// keyFlags are the flags of a command's first key and of the keys after it
// (rest empty: the same as first).
type keyFlags struct{ first, rest string }

// keyFlagsByCommand holds the commands whose key flags differ from those
// their table row implies, as Redis 7.0 reports them.
var keyFlagsByCommand = map[string]keyFlags{
	"sort":        {first: "RO access", rest: "OW update"},
	"set":         {first: "OW update"},
	"mset":        {first: "OW update"},
	"setnx":       {first: "OW insert"},
	"msetnx":      {first: "OW insert"},
	"psetex":      {first: "OW update"},
	"setex":       {first: "OW update"},
	"del":         {first: "RM delete"},
	"unlink":      {first: "RM delete"},
	"getdel":      {first: "RW access delete"},
	"getex":       {first: "RW access update"},
	"getset":      {first: "RW access update"},
	"incr":        {first: "RW access update"},
	"decr":        {first: "RW access update"},
	"incrby":      {first: "RW access update"},
	"decrby":      {first: "RW access update"},
	"incrbyfloat": {first: "RW access update"},
	"append":      {first: "RW insert"},
	"lpush":       {first: "RW insert"},
	"rpush":       {first: "RW insert"},
	"sadd":        {first: "RW insert"},
	"copy":        {first: "RO access", rest: "OW update"},
	"bitop":       {first: "OW update", rest: "RO access"},
	"bitfield":    {first: "RW access update"},
	"restore":     {first: "OW update"},
	"rename":      {first: "RW access delete", rest: "OW update"},
	"renamenx":    {first: "RW access delete", rest: "OW insert"},
	"rpoplpush":   {first: "RW access delete", rest: "RW insert"},
	"lmove":       {first: "RW access delete", rest: "RW insert"},
	"smove":       {first: "RW access delete", rest: "RW insert"},
	"exists":      {first: "RO"},
	"type":        {first: "RO"},
	"touch":       {first: "RO"},
	"strlen":      {first: "RO"},
	"object":      {first: "RO"},
	"pttl":        {first: "RO access"},
	"ttl":         {first: "RO access"},
	"expiretime":  {first: "RO access"},
	"pexpiretime": {first: "RO access"},
}

// keyFlagsOf are the Redis key-spec flags of the i-th key (from 0) of a
// call to cmd.
func (cmd *command) keyFlagsOf(i int) []string {
	kf, ok := keyFlagsByCommand[cmd.name]
	switch {
	case !ok && cmd.flags&flagReadonly != 0:
		kf.first = "RO access"
	case !ok:
		kf.first = "RW update"
	}
	if i > 0 && kf.rest != "" {
		return strings.Fields(kf.rest)
	}
	return strings.Fields(kf.first)
}

// cmdWait answers WAIT numreplicas timeout. The server has no replicas, so
// no write can be acknowledged by any: it answers 0 at once rather than
// blocking until the timeout (Redis blocks when numreplicas > 0).
func cmdWait(c *call) {
	if _, ok := parseStrictInt(c.args[1]); !ok {
		c.fail(errNotInteger)
		return
	}
	timeout, ok := parseStrictInt(c.args[2])
	switch {
	case !ok:
		c.w.error("ERR timeout is not an integer or out of range")
	case timeout < 0:
		c.w.error("ERR timeout is negative")
	default:
		c.w.integer(0)
	}
}
