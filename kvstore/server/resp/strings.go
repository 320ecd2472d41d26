package resp

// String commands. Every one that reads before it writes does both in one
// update (see exec.go); a plain SET goes straight to the engine.

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/devkit-go/devkit/kvstore"
)

func cmdGet(c *call) {
	var v []byte
	var err error
	if c.tx != nil {
		v, err = c.tx.Get(c.args[1])
	} else {
		// Into the connection's scratch buffer: no allocation per GET.
		v, err = c.s.store.GetAppend(c.cl.scratch[:0], c.args[1])
		if cap(v) <= keepScratchBytes {
			c.cl.scratch = v[:0]
		}
	}
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		c.w.null()
	case err != nil:
		c.fail(err)
	default:
		c.w.bulk(v)
	}
}

// setOptions are SET's options.
type setOptions struct {
	nx, xx, get bool
	ttl         ttlOption
}

// parseSetOptions parses [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]
// in any order, as Redis does (a repeated option is allowed, NX with XX or
// two expiry units are a syntax error); the expiry's number is checked
// last; a relative expiry counts from c's now.
func parseSetOptions(c *call, args [][]byte) (setOptions, error) {
	var o setOptions
	var e expiryArgs
	for i := 0; i < len(args); {
		switch opt := strings.ToUpper(string(args[i])); {
		case opt == "NX" && !o.xx:
			o.nx = true
		case opt == "XX" && !o.nx:
			o.xx = true
		case opt == "GET":
			o.get = true
		default:
			n := e.take(args, i, true)
			if n == 0 {
				return o, errSyntax
			}
			i += n
			continue
		}
		i++
	}
	var err error
	o.ttl, err = e.option(c, "set")
	return o, err
}

func cmdSet(c *call) {
	key, value := c.args[1], c.args[2]
	if len(c.args) == 3 && c.tx == nil && !c.s.notifying(notifyString|notifyNew) {
		// The common case needs no read: it joins the connection's run of
		// SETs, one engine record per burst. (With keyspace notifications
		// on, it is an update, published once logged.)
		c.openSet(key, value)
		return
	}
	o, err := parseSetOptions(c, c.args[3:])
	if err != nil {
		c.fail(err)
		return
	}
	var old []byte
	var had, written bool
	err = c.update(func(tx txn) error {
		if !o.get {
			// SET replaces a value of any kind, as Redis's does: only
			// NX and XX look at the key, and only at whether it exists.
			had = exists(tx, key)
		} else {
			cur, err := tx.Get(key) // WRONGTYPE for a collection, as in Redis 7
			switch {
			case errors.Is(err, kvstore.ErrNotFound):
				had = false
			case err != nil:
				return err
			default:
				had, old = true, cur
			}
		}
		if (o.nx && had) || (o.xx && !had) {
			written = false
			return nil
		}
		written = true
		if !had {
			notify(tx, notifyNew, "new", key)
		}
		if err := o.ttl.set(tx, key, value); err != nil {
			return err
		}
		notifySetString(tx, key, o.ttl)
		return nil
	})
	switch {
	case err != nil:
		c.fail(err)
	case o.get && had:
		c.w.bulk(old)
	case o.get, !written:
		c.w.null()
	default:
		c.w.ok()
	}
}

// exists reports whether key holds a live value of any kind. The string
// writes that only test existence (SET NX/XX, SETNX, MSETNX) see a
// collection as a key that exists, as Redis does, not as WRONGTYPE.
func exists(tx txn, key []byte) bool { return tx.Kind(key) != kvstore.KindNone }

func cmdSetNX(c *call) {
	key, value := c.args[1], c.args[2]
	var set bool
	err := c.update(func(tx txn) error {
		if set = !exists(tx, key); !set {
			return nil
		}
		notify(tx, notifyNew, "new", key)
		if err := tx.Set(key, value); err != nil {
			return err
		}
		notify(tx, notifyString, "set", key)
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(set))
}

// getAndWrite reads key and then writes (or deletes, when value is nil and
// del is set) in one update; it replies with the old value or nil.
func getAndWrite(c *call, key, value []byte, del bool) {
	var old []byte
	var had bool
	err := c.update(func(tx txn) error {
		cur, err := tx.Get(key)
		switch {
		case errors.Is(err, kvstore.ErrNotFound):
			had = false
		case err != nil:
			return err
		default:
			had, old = true, cur
		}
		if del {
			if !had {
				return nil
			}
			if _, err := tx.Delete(key); err != nil {
				return err
			}
			notify(tx, notifyGeneric, "del", key)
			return nil
		}
		if !had {
			notify(tx, notifyNew, "new", key)
		}
		if err := tx.Set(key, value); err != nil {
			return err
		}
		notify(tx, notifyString, "set", key)
		return nil
	})
	switch {
	case err != nil:
		c.fail(err)
	case had:
		c.w.bulk(old)
	default:
		c.w.null()
	}
}

func cmdGetSet(c *call) { getAndWrite(c, c.args[1], c.args[2], false) }
func cmdGetDel(c *call) { getAndWrite(c, c.args[1], nil, true) }

// cmdMGet reads the keys in one transaction when there are several, so
// that it never sees half of a concurrent MSET (Redis's MGET is atomic).
func cmdMGet(c *call) {
	keys := c.args[1:]
	if c.tx != nil || len(keys) == 1 {
		c.w.array(len(keys))
		for _, key := range keys {
			// Like Redis, a key that cannot hold a value reads as nil.
			if v, err := c.get(key); err == nil {
				c.w.bulk(v)
			} else {
				c.w.null()
			}
		}
		return
	}
	values := make([][]byte, len(keys))
	found := make([]bool, len(keys))
	err := c.update(func(tx txn) error {
		for i, key := range keys {
			v, err := tx.Get(key)
			values[i], found[i] = bytes.Clone(v), err == nil
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.array(len(keys))
	for i := range keys {
		if found[i] {
			c.w.bulk(values[i])
		} else {
			c.w.null()
		}
	}
}

// cmdMSet stores the pairs as one engine batch: atomic, as in Redis — after
// a crash all pairs are there or none — and, under SyncAlways, one fsync.
func cmdMSet(c *call) {
	if len(c.args)%2 == 0 {
		wrongArgs(c.w, c.cmd.name)
		return
	}
	if c.tx != nil || c.s.notifying(notifyString|notifyNew) {
		err := c.update(func(tx txn) error {
			for i := 1; i < len(c.args); i += 2 {
				notifyNewKey(tx, c.args[i])
				if err := tx.Set(c.args[i], c.args[i+1]); err != nil {
					return err
				}
				notify(tx, notifyString, "set", c.args[i])
			}
			return nil
		})
		if err != nil {
			c.fail(err)
			return
		}
		c.w.ok()
		return
	}
	b := &c.cl.msetBatch
	b.Reset()
	for i := 1; i < len(c.args); i += 2 {
		b.Set(c.args[i], c.args[i+1])
	}
	if err := c.apply(b); err != nil {
		c.fail(err)
		return
	}
	c.w.ok()
}

// cmdMSetNX stores the pairs in one update only when none of the keys
// exists: 1, else 0 and nothing is written.
func cmdMSetNX(c *call) {
	if len(c.args)%2 == 0 {
		wrongArgs(c.w, c.cmd.name)
		return
	}
	var set bool
	err := c.update(func(tx txn) error {
		set = false
		for i := 1; i < len(c.args); i += 2 {
			if exists(tx, c.args[i]) {
				return nil
			}
		}
		for i := 1; i < len(c.args); i += 2 {
			notify(tx, notifyNew, "new", c.args[i])
			if err := tx.Set(c.args[i], c.args[i+1]); err != nil {
				return err
			}
			notify(tx, notifyString, "set", c.args[i])
		}
		set = true
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(set))
}

func cmdAppend(c *call) {
	key, suffix := c.args[1], c.args[2]
	var n int
	err := c.update(func(tx txn) error {
		cur, err := tx.Get(key)
		if err != nil && !errors.Is(err, kvstore.ErrNotFound) {
			return err
		}
		v := make([]byte, 0, len(cur)+len(suffix))
		v = append(append(v, cur...), suffix...)
		n = len(v)
		if err != nil {
			notify(tx, notifyNew, "new", key)
		}
		if err := tx.SetKeepTTL(key, v); err != nil {
			return err
		}
		notify(tx, notifyString, "append", key)
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(int64(n))
}

func cmdStrlen(c *call) {
	v, err := c.get(c.args[1])
	if err != nil && !errors.Is(err, kvstore.ErrNotFound) {
		c.fail(err)
		return
	}
	c.w.integer(int64(len(v)))
}

// parseStrictInt parses an integer as Redis does (string2ll): the canonical
// decimal form only — no sign '+', no leading zeros or spaces, within int64.
func parseStrictInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	var canon [20]byte
	return n, string(strconv.AppendInt(canon[:0], n, 10)) == string(b)
}

// incrBy adds delta to the integer at key, keeping its expiry.
func incrBy(c *call, key []byte, delta int64) {
	var n int64
	var err error
	if c.tx != nil {
		// Inside a script or EXEC: no closure to build.
		n, err = c.incrByIn(c.tx, key, delta)
	} else {
		n, err = c.incrByUpdate(key, delta)
	}
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(n)
}

// incrByUpdate is incrByIn in an update of its own (apart, so that incrBy's
// result escapes to the heap only on this path).
func (c *call) incrByUpdate(key []byte, delta int64) (n int64, err error) {
	err = c.update(func(tx txn) error {
		var err error
		n, err = c.incrByIn(tx, key, delta)
		return err
	})
	return n, err
}

// incrByIn is INCRBY's read and write inside tx; the new value's digits go
// through the call's own buffer (the transaction copies what it writes).
func (c *call) incrByIn(tx txn, key []byte, delta int64) (int64, error) {
	cur := int64(0)
	v, err := tx.Get(key)
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
	case err != nil:
		return 0, err
	default:
		var ok bool
		if cur, ok = parseStrictInt(v); !ok {
			return 0, errNotInteger
		}
	}
	if (delta > 0 && cur > math.MaxInt64-delta) || (delta < 0 && cur < math.MinInt64-delta) {
		return 0, errOverflow
	}
	n := cur + delta
	if errors.Is(err, kvstore.ErrNotFound) {
		notify(tx, notifyNew, "new", key)
	}
	if err := tx.SetKeepTTL(key, strconv.AppendInt(c.digits[:0], n, 10)); err != nil {
		return 0, err
	}
	notify(tx, notifyString, "incrby", key)
	return n, nil
}

func cmdIncr(c *call) { incrBy(c, c.args[1], 1) }
func cmdDecr(c *call) { incrBy(c, c.args[1], -1) }

func cmdIncrBy(c *call) {
	d, ok := parseStrictInt(c.args[2])
	if !ok {
		c.fail(errNotInteger)
		return
	}
	incrBy(c, c.args[1], d)
}

func cmdDecrBy(c *call) {
	d, ok := parseStrictInt(c.args[2])
	if !ok || d == math.MinInt64 {
		c.fail(cmdError("ERR decrement would overflow"))
		return
	}
	incrBy(c, c.args[1], -d)
}

// parseRedisFloat parses a float as Redis does: no spaces, no NaN.
func parseRedisFloat(b []byte) (float64, bool) {
	s := string(b)
	if s == "" || strings.TrimSpace(s) != s {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func cmdIncrByFloat(c *call) {
	key := c.args[1]
	// An infinite increment parses (as strtold's does in Redis); the sum's
	// check below refuses it with Redis's error.
	d, ok := parseRedisFloat(c.args[2])
	if !ok {
		c.fail(errNotFloat)
		return
	}
	var out []byte
	err := c.update(func(tx txn) error {
		cur := 0.0
		v, err := tx.Get(key)
		missing := errors.Is(err, kvstore.ErrNotFound)
		switch {
		case missing:
		case err != nil:
			return err
		default:
			var ok bool
			if cur, ok = parseRedisFloat(v); !ok {
				return errNotFloat
			}
		}
		n := cur + d
		if math.IsInf(n, 0) || math.IsNaN(n) {
			return cmdError("ERR increment would produce NaN or Infinity")
		}
		out = strconv.AppendFloat(nil, n, 'f', -1, 64)
		if missing {
			notify(tx, notifyNew, "new", key)
		}
		if err := tx.SetKeepTTL(key, out); err != nil {
			return err
		}
		notify(tx, notifyString, "incrbyfloat", key)
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.bulk(out)
}

func boolInt64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
