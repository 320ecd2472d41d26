package resp

import (
	"bytes"
	"strings"

	"github.com/devkit-go/devkit/kvstore"
)

// List commands (LPUSH family); the blocking ones are in cmd_block.go.

// positiveArg parses a count that must be >= 0 (>= 1 when min is 1),
// answering msg (or Redis's default texts) when it is not.
func (c *call) rangeArg(b []byte, lo int64, msg string) (int64, bool) {
	n, ok := parseStrictInt(b)
	switch {
	case ok && n >= lo:
		return n, true
	case msg != "":
		c.w.error("ERR " + msg)
	case !ok:
		c.fail(errNotInteger)
	default:
		c.w.error("ERR value is out of range, must be positive")
	}
	return 0, false
}

// cmdPush answers LPUSH, RPUSH, LPUSHX and RPUSHX.
func cmdPush(c *call) {
	name := c.cmd.name
	var n int
	err := c.update(func(tx txn) (err error) {
		if strings.HasSuffix(name, "x") {
			switch tx.Kind(c.args[1]) {
			case kvstore.KindNone:
				n = 0
				return nil
			case kvstore.KindList:
			default:
				return kvstore.ErrWrongType
			}
		}
		notifyNewKey(tx, c.args[1])
		if name[0] == 'l' {
			n, err = tx.LPush(c.args[1], c.args[2:]...)
		} else {
			n, err = tx.RPush(c.args[1], c.args[2:]...)
		}
		if err == nil {
			notify(tx, notifyList, name[:5], c.args[1]) // lpush or rpush, for the X forms too
		}
		return readyAfter(tx, c.args[1], err)
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(int64(n))
}

// cmdPop answers LPOP and RPOP [count].
func cmdPop(c *call) {
	if len(c.args) > 3 {
		wrongArgs(c.w, c.cmd.name)
		return
	}
	count, hasCount := int64(1), len(c.args) == 3
	if hasCount {
		var ok bool
		if count, ok = c.rangeArg(c.args[2], 0, ""); !ok {
			return
		}
	}
	var out [][]byte
	exists := false
	err := c.update(func(tx txn) (err error) {
		switch tx.Kind(c.args[1]) {
		case kvstore.KindNone:
			exists = false
			return nil
		case kvstore.KindList:
		default:
			return kvstore.ErrWrongType
		}
		exists = true
		if c.cmd.name == "lpop" {
			out, err = tx.LPop(c.args[1], clampInt(count))
		} else {
			out, err = tx.RPop(c.args[1], clampInt(count))
		}
		_, err = notifyRemoved(tx, notifyList, c.cmd.name, c.args[1], len(out), err)
		return err
	})
	switch {
	case err != nil:
		c.fail(err)
	case !exists && hasCount:
		c.w.nullArray()
	case !exists:
		c.w.null()
	case hasCount:
		c.w.bulks(out)
	default:
		c.w.bulk(out[0])
	}
}

func cmdLLen(c *call) {
	updateCount(c, func(tx txn) (int, error) { return tx.LLen(c.args[1]) })
}

func cmdLRange(c *call) {
	start, ok1 := c.intArg(c.args[2])
	if !ok1 {
		return
	}
	stop, ok2 := c.intArg(c.args[3])
	if !ok2 {
		return
	}
	// The elements go straight from the list into the reply, uncopied
	// (a copy each was a third of LRANGE_100's allocations).
	err := c.read(func(tx txn) error {
		n, elems, err := tx.LRangeSeq(c.args[1], clampInt(start), clampInt(stop))
		if err == nil {
			c.w.bulkSeq(n, elems)
		}
		return err
	})
	if err != nil {
		c.fail(err)
	}
}

func cmdLIndex(c *call) {
	i, ok := c.intArg(c.args[2])
	if !ok {
		return
	}
	var v []byte
	found := false
	err := c.read(func(tx txn) (err error) {
		v, err = tx.LIndex(c.args[1], clampInt(i))
		found = err == nil
		if errorsIsNotFound(err) {
			err = nil
		}
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.bulkOrNull(v, found)
}

func cmdLSet(c *call) {
	i, ok := c.intArg(c.args[2])
	if !ok {
		return
	}
	err := c.update(func(tx txn) error {
		err := tx.LSet(c.args[1], clampInt(i), c.args[3])
		if err == nil {
			notify(tx, notifyList, "lset", c.args[1])
		}
		switch {
		case errorsIsNotFound(err):
			return errNoSuchKey
		case errorsIs(err, kvstore.ErrOutOfRange):
			return cmdError("ERR index out of range")
		}
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.ok()
}

func cmdLInsert(c *call) {
	var before bool
	switch strings.ToUpper(string(c.args[2])) {
	case "BEFORE":
		before = true
	case "AFTER":
	default:
		c.fail(errSyntax)
		return
	}
	var n int
	err := c.update(func(tx txn) (err error) {
		n, err = tx.LInsert(c.args[1], before, c.args[3], c.args[4])
		if err == nil && n > 0 {
			notify(tx, notifyList, "linsert", c.args[1])
		}
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(int64(n))
}

func cmdLRem(c *call) {
	count, ok := c.intArg(c.args[2])
	if !ok {
		return
	}
	var n int
	err := c.update(func(tx txn) (err error) {
		n, err = tx.LRem(c.args[1], clampInt(count), c.args[3])
		n, err = notifyRemoved(tx, notifyList, "lrem", c.args[1], n, err)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(int64(n))
}

func cmdLTrim(c *call) {
	start, ok1 := c.intArg(c.args[2])
	if !ok1 {
		return
	}
	stop, ok2 := c.intArg(c.args[3])
	if !ok2 {
		return
	}
	err := c.update(func(tx txn) error {
		if err := tx.LTrim(c.args[1], clampInt(start), clampInt(stop)); err != nil {
			return err
		}
		notify(tx, notifyList, "ltrim", c.args[1]) // even when nothing went, as Redis
		notifyGone(tx, c.args[1])
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.ok()
}

func cmdLPos(c *call) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(c.args); j++ {
		opt := strings.ToUpper(string(c.args[j]))
		more := j+1 < len(c.args)
		var ok bool
		switch {
		case opt == "RANK" && more:
			j++
			if rank, ok = c.intArg(c.args[j]); !ok {
				return
			}
			if rank == 0 {
				c.w.error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
		case opt == "COUNT" && more:
			j++
			if count, ok = c.rangeArg(c.args[j], 0, "COUNT can't be negative"); !ok {
				return
			}
		case opt == "MAXLEN" && more:
			j++
			if maxlen, ok = c.rangeArg(c.args[j], 0, "MAXLEN can't be negative"); !ok {
				return
			}
		default:
			c.fail(errSyntax)
			return
		}
	}
	var all [][]byte
	err := c.read(func(tx txn) (err error) {
		all, err = tx.LRange(c.args[1], 0, -1)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	var found []int64
	want := count
	if want == -1 {
		want = 1
	}
	n := len(all)
	skip := rank
	if skip < 0 {
		skip = -skip
	}
	for k := 0; k < n && (maxlen == 0 || int64(k) < maxlen); k++ {
		i := k
		if rank < 0 {
			i = n - 1 - k
		}
		if !bytes.Equal(all[i], c.args[2]) {
			continue
		}
		if skip > 1 {
			skip--
			continue
		}
		found = append(found, int64(i))
		if want != 0 && int64(len(found)) == want {
			break
		}
	}
	if count == -1 {
		if len(found) == 0 {
			c.w.null()
		} else {
			c.w.integer(found[0])
		}
		return
	}
	c.w.array(len(found))
	for _, i := range found {
		c.w.integer(i)
	}
}

// listEnd parses LEFT or RIGHT.
func listEnd(b []byte) (left, ok bool) {
	switch strings.ToUpper(string(b)) {
	case "LEFT":
		return true, true
	case "RIGHT":
		return false, true
	}
	return false, false
}

// lmoveIn pops one element of src (from the left or right) and pushes it
// onto dst; ok false when src is missing.
func lmoveIn(tx txn, src, dst []byte, fromLeft, toLeft bool) (v []byte, ok bool, err error) {
	switch tx.Kind(src) {
	case kvstore.KindNone:
		return nil, false, nil
	case kvstore.KindList:
	default:
		return nil, false, kvstore.ErrWrongType
	}
	if k := tx.Kind(dst); k != kvstore.KindNone && k != kvstore.KindList {
		return nil, false, kvstore.ErrWrongType
	}
	var out [][]byte
	if fromLeft {
		out, err = tx.LPop(src, 1)
	} else {
		out, err = tx.RPop(src, 1)
	}
	if err != nil || len(out) == 0 {
		return nil, false, err
	}
	notifyNewKey(tx, dst)
	push, pop := "rpush", "rpop"
	if toLeft {
		push = "lpush"
		_, err = tx.LPush(dst, out[0])
	} else {
		_, err = tx.RPush(dst, out[0])
	}
	if fromLeft {
		pop = "lpop"
	}
	if err == nil { // Redis's order: the push, the pop, the source's del
		notify(tx, notifyList, push, dst)
		notifyRemoval(tx, notifyList, pop, src)
	}
	return out[0], true, err
}

// cmdLMove answers LMOVE src dst LEFT|RIGHT LEFT|RIGHT and RPOPLPUSH src dst.
func cmdLMove(c *call) {
	fromLeft, toLeft := false, true
	if c.cmd.name == "lmove" {
		var ok1, ok2 bool
		fromLeft, ok1 = listEnd(c.args[3])
		toLeft, ok2 = listEnd(c.args[4])
		if !ok1 || !ok2 {
			c.fail(errSyntax)
			return
		}
	}
	var v []byte
	var ok bool
	err := c.update(func(tx txn) (err error) {
		v, ok, err = lmoveIn(tx, c.args[1], c.args[2], fromLeft, toLeft)
		if ok {
			markReady(tx, c.args[2])
		}
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.bulkOrNull(v, ok)
}

// mpopArgs are LMPOP's (and BLMPOP's) keys, end and count.
type mpopArgs struct {
	keys  [][]byte
	left  bool
	count int64
	// skipWrong passes over a key of another kind (a woken blocking pop)
	// instead of answering WRONGTYPE.
	skipWrong bool
}

// parseMPop parses numkeys key... LEFT|RIGHT [COUNT n] from args.
func (c *call) parseMPop(args [][]byte, ends func([]byte) (bool, bool)) (mpopArgs, bool) {
	var m mpopArgs
	numkeys, ok := c.rangeArg(args[0], 1, "numkeys should be greater than 0")
	if !ok {
		return m, false
	}
	if numkeys >= int64(len(args)-1) {
		c.fail(errSyntax)
		return m, false
	}
	m.keys = args[1 : 1+numkeys]
	rest := args[1+numkeys:]
	if m.left, ok = ends(rest[0]); !ok {
		c.fail(errSyntax)
		return m, false
	}
	m.count = -1
	for j := 1; j < len(rest); j++ {
		if m.count == -1 && strings.EqualFold(string(rest[j]), "COUNT") && j+1 < len(rest) {
			j++
			if m.count, ok = c.rangeArg(rest[j], 1, "count should be greater than 0"); !ok {
				return m, false
			}
			continue
		}
		c.fail(errSyntax)
		return m, false
	}
	if m.count == -1 {
		m.count = 1
	}
	return m, true
}

// lmpopIn pops from the first non-empty list of m.keys.
func lmpopIn(tx txn, m mpopArgs) (key []byte, out [][]byte, err error) {
	for _, k := range m.keys {
		switch tx.Kind(k) {
		case kvstore.KindNone:
			continue
		case kvstore.KindList:
		default:
			if m.skipWrong {
				continue
			}
			return nil, nil, kvstore.ErrWrongType
		}
		event := "rpop"
		if m.left {
			event = "lpop"
			out, err = tx.LPop(k, clampInt(m.count))
		} else {
			out, err = tx.RPop(k, clampInt(m.count))
		}
		_, err = notifyRemoved(tx, notifyList, event, k, len(out), err)
		return k, out, err
	}
	return nil, nil, nil
}

func cmdLMPop(c *call) {
	m, ok := c.parseMPop(c.args[1:], listEnd)
	if !ok {
		return
	}
	var key []byte
	var out [][]byte
	err := c.update(func(tx txn) (err error) {
		key, out, err = lmpopIn(tx, m)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	writeKeyAndItems(c.w, key, out)
}

// writeKeyAndItems answers an MPOP: nil, or [key, [items]].
func writeKeyAndItems(w *replyWriter, key []byte, items [][]byte) {
	if key == nil {
		w.nullArray()
		return
	}
	w.array(2)
	w.bulk(key)
	w.bulks(items)
}
