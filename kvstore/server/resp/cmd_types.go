package resp

// The collection commands (hashes, lists, sets, sorted sets): their rows of
// the command table and what they share. Each command that writes reads and
// writes its keys through one transaction (c.update), as the string
// commands do, so it is atomic, runs inside EXEC's update, and its writes
// are one engine record of the size of the change. A command that reads one
// key and writes nothing (HGET, LRANGE, SMEMBERS, ZRANGE...) reads it on the
// engine's read view (c.read): no write lock, no place in a commit group,
// never behind an fsync. Commands that read several keys (SINTER, ZUNION...)
// stay in an update, which sees them all at one point of the log order.

import (
	"errors"
	"iter"
	"math"
	"strconv"
	"strings"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// collTxn is what the collection commands use of a transaction
// (*kvstore.Tx's typed API).
type collTxn interface {
	Kind(key []byte) kvstore.Kind
	Dump(key []byte) (kvstore.Value, error)
	Restore(key []byte, v kvstore.Value) error
	CopyValue(from, to []byte) error

	HSet(key []byte, pairs ...[]byte) (int, error)
	HSetNX(key, field, value []byte) (bool, error)
	HGet(key, field []byte) ([]byte, error)
	HDel(key []byte, fields ...[]byte) (int, error)
	HLen(key []byte) (int, error)
	HGetAll(key []byte) ([][]byte, error)
	HGetAllSeq(key []byte) (int, iter.Seq[[]byte], error)
	HScan(key []byte, cursor uint64, count int) ([][]byte, uint64, error)
	HPairsAt(key []byte, indexes []int) ([][]byte, error)

	LPush(key []byte, values ...[]byte) (int, error)
	RPush(key []byte, values ...[]byte) (int, error)
	LPop(key []byte, count int) ([][]byte, error)
	RPop(key []byte, count int) ([][]byte, error)
	LLen(key []byte) (int, error)
	LRange(key []byte, start, stop int) ([][]byte, error)
	LRangeSeq(key []byte, start, stop int) (int, iter.Seq[[]byte], error)
	LIndex(key []byte, index int) ([]byte, error)
	LSet(key []byte, index int, value []byte) error
	LInsert(key []byte, before bool, pivot, value []byte) (int, error)
	LRem(key []byte, count int, value []byte) (int, error)
	LTrim(key []byte, start, stop int) error

	SAdd(key []byte, members ...[]byte) (int, error)
	SRem(key []byte, members ...[]byte) (int, error)
	SIsMember(key, m []byte) (bool, error)
	SCard(key []byte) (int, error)
	SMembers(key []byte) ([][]byte, error)
	SMembersSeq(key []byte) (int, iter.Seq[[]byte], error)
	SScan(key []byte, cursor uint64, count int) ([][]byte, uint64, error)
	SMembersAt(key []byte, indexes []int) ([][]byte, error)

	ZAdd(key []byte, members ...kvstore.ZMember) (int, error)
	ZAddChanged(key []byte, members ...kvstore.ZMember) (added, changed int, err error)
	ZScore(key, member []byte) (float64, bool, error)
	ZRem(key []byte, members ...[]byte) (int, error)
	ZCard(key []byte) (int, error)
	ZRank(key, member []byte, reverse bool) (rank int, ok bool, err error)
	ZRangeRank(key []byte, start, stop int, reverse bool) ([]kvstore.ZMember, error)
	ZRangeRankSeq(key []byte, start, stop int, reverse bool) (int, iter.Seq[kvstore.ZMember], error)
	ZWalk(key []byte, from float64, reverse bool, fn func(kvstore.ZMember) bool) error
	ZRange(key []byte, start, stop int) ([]kvstore.ZMember, error)
	ZScan(key []byte, cursor uint64, count int) ([]kvstore.ZMember, uint64, error)
	ZRankWhere(key []byte, before func(kvstore.ZMember) bool) (int, error)
	ZMembersAt(key []byte, indexes []int) ([]kvstore.ZMember, error)
}

// Rows of the command table for the collection commands.
func collectionCommands() []command {
	const (
		w  = flagWrite | flagDefers | flagTx
		wf = w | flagFast
		r  = flagReadonly | flagTx
		rf = r | flagFast
	)
	row := collectionRow
	return append([]command{
		row("hset", -4, wf, 1, 1, 1, "hash", "Sets fields of a hash; returns how many are new.", cmdHSet),
		row("hmset", -4, wf, 1, 1, 1, "hash", "Sets fields of a hash (OK).", cmdHSet),
		row("hsetnx", 4, wf, 1, 1, 1, "hash", "Sets a field only when it does not exist.", cmdHSetNX),
		row("hget", 3, rf, 1, 1, 1, "hash", "Returns a field's value.", cmdHGet),
		row("hmget", -3, rf, 1, 1, 1, "hash", "Returns the values of fields.", cmdHMGet),
		row("hdel", -3, wf, 1, 1, 1, "hash", "Deletes fields; returns how many existed.", cmdHDel),
		row("hexists", 3, rf, 1, 1, 1, "hash", "Whether a field exists.", cmdHExists),
		row("hlen", 2, rf, 1, 1, 1, "hash", "Number of fields.", cmdHLen),
		row("hstrlen", 3, rf, 1, 1, 1, "hash", "Length of a field's value.", cmdHStrlen),
		row("hkeys", 2, r, 1, 1, 1, "hash", "Every field.", cmdHGetAll),
		row("hvals", 2, r, 1, 1, 1, "hash", "Every value.", cmdHGetAll),
		row("hgetall", 2, r, 1, 1, 1, "hash", "Every field and value.", cmdHGetAll),
		row("hincrby", 4, wf, 1, 1, 1, "hash", "Adds an integer to a field.", cmdHIncrBy),
		row("hincrbyfloat", 4, wf, 1, 1, 1, "hash", "Adds a float to a field.", cmdHIncrByFloat),
		row("hrandfield", -2, r, 1, 1, 1, "hash", "Random fields; COUNT, WITHVALUES.", cmdHRandField),
		row("hscan", -3, r, 1, 1, 1, "hash", "Iterates over fields and values (one page: cursor 0).", cmdHScan),

		row("lpush", -3, wf, 1, 1, 1, "list", "Inserts elements at the head.", cmdPush),
		row("rpush", -3, wf, 1, 1, 1, "list", "Appends elements at the tail.", cmdPush),
		row("lpushx", -3, wf, 1, 1, 1, "list", "LPUSH onto an existing list only.", cmdPush),
		row("rpushx", -3, wf, 1, 1, 1, "list", "RPUSH onto an existing list only.", cmdPush),
		row("lpop", -2, wf, 1, 1, 1, "list", "Removes and returns elements from the head.", cmdPop),
		row("rpop", -2, wf, 1, 1, 1, "list", "Removes and returns elements from the tail.", cmdPop),
		row("llen", 2, rf, 1, 1, 1, "list", "Length of a list.", cmdLLen),
		row("lrange", 4, r, 1, 1, 1, "list", "Elements from start to stop.", cmdLRange),
		row("lindex", 3, r, 1, 1, 1, "list", "The element at an index.", cmdLIndex),
		row("lset", 4, w, 1, 1, 1, "list", "Replaces the element at an index.", cmdLSet),
		row("linsert", 5, w, 1, 1, 1, "list", "Inserts before or after a pivot element.", cmdLInsert),
		row("lrem", 4, w, 1, 1, 1, "list", "Removes elements equal to a value.", cmdLRem),
		row("ltrim", 4, w, 1, 1, 1, "list", "Keeps a range of elements.", cmdLTrim),
		row("lpos", -3, r, 1, 1, 1, "list", "Positions of an element; RANK, COUNT, MAXLEN.", cmdLPos),
		row("lmove", 5, w, 1, 2, 1, "list", "Pops from one list and pushes onto another.", cmdLMove),
		row("rpoplpush", 3, w, 1, 2, 1, "list", "As LMOVE src dst RIGHT LEFT.", cmdLMove),
		row("lmpop", -4, w, 0, 0, 0, "list", "Pops from the first non-empty list; LEFT|RIGHT, COUNT.", cmdLMPop),

		row("sadd", -3, wf, 1, 1, 1, "set", "Adds members; returns how many are new.", cmdSAdd),
		row("srem", -3, wf, 1, 1, 1, "set", "Removes members; returns how many existed.", cmdSRem),
		row("sismember", 3, rf, 1, 1, 1, "set", "Whether a member exists.", cmdSIsMember),
		row("smismember", -3, rf, 1, 1, 1, "set", "Whether each member exists.", cmdSMIsMember),
		row("smembers", 2, r, 1, 1, 1, "set", "Every member.", cmdSMembers),
		row("scard", 2, rf, 1, 1, 1, "set", "Number of members.", cmdSCard),
		row("spop", -2, wf, 1, 1, 1, "set", "Removes and returns random members.", cmdSPop),
		row("srandmember", -2, r, 1, 1, 1, "set", "Random members.", cmdSRandMember),
		row("sinter", -2, r, 1, -1, 1, "set", "Intersection of sets.", cmdSetOp),
		row("sunion", -2, r, 1, -1, 1, "set", "Union of sets.", cmdSetOp),
		row("sdiff", -2, r, 1, -1, 1, "set", "Difference of sets.", cmdSetOp),
		row("sinterstore", -3, w, 1, -1, 1, "set", "Stores an intersection.", cmdSetOp),
		row("sunionstore", -3, w, 1, -1, 1, "set", "Stores a union.", cmdSetOp),
		row("sdiffstore", -3, w, 1, -1, 1, "set", "Stores a difference.", cmdSetOp),
		row("sintercard", -3, r, 0, 0, 0, "set", "Size of an intersection; LIMIT.", cmdSInterCard),
		row("smove", 4, wf, 1, 2, 1, "set", "Moves a member to another set.", cmdSMove),
		row("sscan", -3, r, 1, 1, 1, "set", "Iterates over members (one page: cursor 0).", cmdSScan),
		row("memory", -2, flagReadonly|flagTx, 2, 2, 1, "server", "MEMORY USAGE key: the bytes its record takes.", cmdMemory),
	}, append(zsetCommands(), blockingCommands()...)...)
}

// collectionRow is one row of a collection command.
func collectionRow(name string, arity int, flags cmdFlags, first, last, step int, group, summary string, run func(*call)) command {
	op := metrics.OpGet
	if flags&flagWrite != 0 {
		op = metrics.OpSet
	}
	return command{name: name, arity: arity, flags: flags, firstKey: first, lastKey: last, step: step, op: op,
		group: group, summary: summary, run: run}
}

// intArg parses an integer argument as Redis does, or answers its error.
func (c *call) intArg(b []byte) (int64, bool) {
	n, ok := parseStrictInt(b)
	if !ok {
		c.fail(errNotInteger)
	}
	return n, ok
}

// clampInt is n as an int index (Redis's are longs; ours index slices).
func clampInt(n int64) int {
	return int(max(min(n, math.MaxInt32), math.MinInt32))
}

// bulks writes an array of bulk strings.
func (w *replyWriter) bulks(items [][]byte) {
	w.array(len(items))
	for _, b := range items {
		w.bulk(b)
	}
}

// bulkSet writes items as a set (RESP2: an array).
func (w *replyWriter) bulkSet(items [][]byte) {
	w.setLen(len(items))
	for _, b := range items {
		w.bulk(b)
	}
}

// bulkPairs writes items, a flat list of pairs (field and value), as
// pairs (pairsLen): RESP3 nests them, RESP2 keeps them flat.
func (w *replyWriter) bulkPairs(items [][]byte) {
	w.pairsLen(len(items) / 2)
	for i := 0; i+1 < len(items); i += 2 {
		w.pair()
		w.bulk(items[i])
		w.bulk(items[i+1])
	}
}

// bulkSeq writes an array of the n bulk strings of items, as they come
// (a collection's own bytes, uncopied).
func (w *replyWriter) bulkSeq(n int, items iter.Seq[[]byte]) {
	w.array(n)
	for b := range items {
		w.bulk(b)
	}
}

// bulkOrNull writes b, or nil when missing.
func (w *replyWriter) bulkOrNull(b []byte, ok bool) {
	if ok {
		w.bulk(b)
	} else {
		w.null()
	}
}

// double writes a float as Redis 7.0 does: "%.17g", inf and -inf, a bulk
// string in RESP2 and a double in RESP3.
func (w *replyWriter) double(f float64) {
	var digits [32]byte // %.17g and its exponent fit: no allocation per score
	if w.resp3 {
		w.buf = append(w.buf, ',')
		w.buf = append(appendDouble(w.buf, f), '\r', '\n')
		return
	}
	w.bulk(appendDouble(digits[:0], f))
}

func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case f == 0:
		return append(b, '0') // -0 too, as a listpack stores it
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}

// scanArgs parses a scan's cursor [MATCH p] [COUNT n] (10 by default, at
// most MaxScanCount), and [TYPE t] when typ is not nil (SCAN's: a known
// type name, lower case); ok false: the error is written.
func (c *call) scanArgs(args [][]byte, typ *string) (cursor uint64, pattern []byte, count int, ok bool) {
	cursor, err := strconv.ParseUint(string(args[0]), 10, 64)
	if err != nil {
		c.w.error("ERR invalid cursor")
		return 0, nil, 0, false
	}
	count = 10
	for i := 1; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.fail(errSyntax)
			return 0, nil, 0, false
		}
		switch name := strings.ToUpper(string(args[i])); {
		case name == "MATCH":
			pattern = args[i+1]
		case name == "COUNT":
			n, ok := c.intArg(args[i+1])
			if !ok {
				return 0, nil, 0, false
			}
			if n < 1 {
				c.fail(errSyntax) // as Redis
				return 0, nil, 0, false
			}
			count = int(min(n, int64(c.s.opts.MaxScanCount)))
		case name == "TYPE" && typ != nil:
			*typ = strings.ToLower(string(args[i+1]))
			if !knownType(*typ) {
				c.w.error("ERR unknown type name '" + string(args[i+1]) + "'")
				return 0, nil, 0, false
			}
		default:
			c.fail(errSyntax)
			return 0, nil, 0, false
		}
	}
	return cursor, pattern, count, true
}

// scanReply answers a page of a collection scan (pairs: step 2, the first
// of each matched) and its next cursor: a big collection's page holds about
// COUNT entries, a small (packed) one answers whole with cursor 0, as Redis
// does for a listpack.
func (c *call) scanReply(items [][]byte, step int, pattern []byte, next uint64) {
	out := items[:0]
	for i := 0; i+step-1 < len(items); i += step {
		if pattern == nil || globMatch(pattern, items[i]) {
			out = append(out, items[i:i+step]...)
		}
	}
	c.w.array(2)
	c.w.bulkString(strconv.FormatUint(next, 10))
	c.w.bulks(out)
}

func errorsIsNotFound(err error) bool { return errors.Is(err, kvstore.ErrNotFound) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// knownType reports whether SCAN TYPE names a kind Redis has (stream
// included: it matches nothing here).
func knownType(t string) bool {
	switch t {
	case "string", "list", "set", "zset", "hash", "stream":
		return true
	}
	return false
}

// kindIs reports whether key holds a value of the kind named t.
func (c *call) kindIs(key []byte, t string) bool {
	k, err := c.s.store.Kind(key)
	return err == nil && k.String() == t
}

// objectOfCollection answers OBJECT for a collection (encodings.go).
func objectOfCollection(c *call, sub string, kind kvstore.Kind) {
	switch sub {
	case "ENCODING":
		c.w.bulkString(objectEncoding(c, c.args[2], kind))
	case "REFCOUNT":
		c.w.integer(1)
	case "FREQ":
		c.w.error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	case "IDLETIME":
		c.w.integer(0)
	}
}

// cmdMemory answers MEMORY USAGE key [SAMPLES n]: the bytes the key's
// record takes in the memtable (key, packed value and the record's header),
// nil for a missing key.
func cmdMemory(c *call) {
	if !strings.EqualFold(string(c.args[1]), "USAGE") {
		unknownSubcommand(c.w, c.args[1], "MEMORY")
		return
	}
	if len(c.args) != 3 && (len(c.args) != 5 || !strings.EqualFold(string(c.args[3]), "SAMPLES")) {
		c.fail(errSyntax)
		return
	}
	var n int
	found := false
	err := c.read(func(tx txn) error {
		v, err := tx.Dump(c.args[2])
		if errors.Is(err, kvstore.ErrNotFound) {
			return nil
		}
		found, n = err == nil, len(c.args[2])+len(v.Packed)+recordOverhead
		return err
	})
	switch {
	case err != nil:
		c.fail(err)
	case !found:
		c.w.null()
	default:
		c.w.integer(int64(n))
	}
}

// recordOverhead is a memtable record's header and its index slots.
const recordOverhead = 24 + 8 + 8

// read runs fn, the reads of a command that reads one key, on the
// engine's read view: what is acknowledged, with the Tx methods the update
// uses, so WRONGTYPE and expiry answer the same. The connection's own
// earlier writes are acknowledged before a command without flagDefers runs
// (Server.execute), so it reads them. Inside EXEC (or a script) fn runs on
// its transaction, and a writing command that shares the reply code (ZRANGESTORE
// with ZRANGE, SADD with SCARD's count) goes on using an update.
func (c *call) read(fn func(tx txn) error) error {
	if c.tx != nil || c.cmd.flags&flagWrite != 0 {
		return c.update(fn)
	}
	return c.s.store.View(func(tx *kvstore.Tx) error { return fn(tx) })
}

// updateCount runs f, one write update or (for a command that only reads)
// a read, and answers the count it returns (the SADD, SREM, HDEL, HLEN...
// shape), or its error.
func updateCount(c *call, f func(tx txn) (int, error)) {
	var n int
	err := c.read(func(tx txn) (err error) {
		n, err = f(tx)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(int64(n))
}
