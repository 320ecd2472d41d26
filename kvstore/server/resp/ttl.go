package resp

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/devkit-go/devkit/kvstore"
)

// ttlKind says what a write does with the key's expiry.
type ttlKind int

const (
	ttlNone ttlKind = iota // clear it (a plain SET)
	ttlKeep                // keep it (KEEPTTL)
	ttlAt                  // expire at a time
)

type ttlOption struct {
	kind ttlKind
	at   time.Time
}

// expireMillis turns the argument of SET's EX, PX, EXAT or PXAT (and
// SETEX, PSETEX, GETEX) into an absolute unix time in milliseconds with
// Redis's checks (getExpireMillisecondsOrReply): not above zero, or a sum
// or product that overflows int64 milliseconds, is "invalid expire time"
// naming cmd; the arithmetic never wraps.
func expireMillis(c *call, opt string, arg []byte, cmd string) (time.Time, error) {
	n, ok := parseStrictInt(arg)
	if !ok {
		return time.Time{}, errNotInteger
	}
	bad := invalidExpire(cmd)
	seconds := opt == "EX" || opt == "EXAT"
	if n <= 0 || (seconds && n > math.MaxInt64/1000) {
		return time.Time{}, bad
	}
	if seconds {
		n *= 1000
	}
	if opt == "EX" || opt == "PX" {
		base := c.now().UnixMilli()
		if n > math.MaxInt64-base {
			return time.Time{}, bad
		}
		n += base
	}
	return time.UnixMilli(n), nil
}

// now is the time a command counts relative expiries (EX, PX, EXPIRE,
// TTL) from: a script's commands all count from the script's time, the one
// its keys expire by, so a key the script sees has a TTL above zero and a
// TTL it sets reads back as set (Redis 7.2's command time snapshot; 7.0
// read the clock at each command); other commands from the clock.
func (c *call) now() time.Time {
	if c.fromScript {
		return c.tx.Now()
	}
	return time.Now()
}

// invalidExpire is Redis's error for an expiry out of range.
func invalidExpire(cmd string) error {
	return cmdError(fmt.Sprintf("ERR invalid expire time in '%s' command", cmd))
}

// set writes value under key with the option's effect on the expiry.
func (o ttlOption) set(tx txn, key, value []byte) error {
	switch o.kind {
	case ttlKeep:
		return tx.SetKeepTTL(key, value)
	case ttlAt:
		return tx.SetWithTTL(key, value, o.at)
	}
	return tx.Set(key, value)
}

// expiresAt reads key's existence and expiry in one lookup, through the
// transaction when there is one; exists is false for a missing key. (Two
// reads could put a delete between them and answer "no expiry" for a key
// that is gone.)
func (c *call) expiresAt(key []byte) (at time.Time, hasTTL, exists bool, err error) {
	if c.tx != nil {
		at, hasTTL, err = c.tx.Expiry(key)
	} else {
		at, hasTTL, err = c.s.store.Expiry(key)
	}
	if errors.Is(err, kvstore.ErrNotFound) {
		return time.Time{}, false, false, nil
	}
	return at, hasTTL, err == nil, err
}

// cmdTTL answers TTL (seconds, rounded as Redis does) and PTTL (ms): -2 for a
// missing key, -1 for a key without expiry.
func cmdTTL(c *call) {
	replyExpiry(c, func(at time.Time) int64 {
		ms := max(at.UnixMilli()-c.now().UnixMilli(), 0) // in whole ms, as Redis's expire-mstime()
		if c.cmd.name == "ttl" {
			return (ms + 500) / 1000
		}
		return ms
	})
}

// cmdExpireTime answers EXPIRETIME (unix seconds) and PEXPIRETIME (ms).
func cmdExpireTime(c *call) {
	replyExpiry(c, func(at time.Time) int64 {
		if c.cmd.name == "expiretime" {
			return (at.UnixMilli() + 500) / 1000 // rounded, as Redis's ttlGenericCommand
		}
		return at.UnixMilli()
	})
}

// replyExpiry replies -2 for a missing key, -1 for a key without expiry,
// else conv of its expiry.
func replyExpiry(c *call, conv func(time.Time) int64) {
	at, hasTTL, exists, err := c.expiresAt(c.args[1])
	switch {
	case err != nil:
		c.fail(err)
	case !exists:
		c.w.integer(-2)
	case !hasTTL:
		c.w.integer(-1)
	default:
		c.w.integer(conv(at))
	}
}

// cmdExpire answers EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key n [NX|XX|GT|LT]:
// 1 when the expiry was set (a time in the past deletes the key), 0 when
// the key is missing or the condition did not hold. It follows Redis's
// expireGenericCommand step for step: options first, then the number, in
// int64 milliseconds with every product and sum checked for overflow.
func cmdExpire(c *call) {
	key := c.args[1]
	nx, xx, gt, lt := false, false, false, false
	for _, a := range c.args[3:] {
		switch strings.ToUpper(string(a)) {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "GT":
			gt = true
		case "LT":
			lt = true
		default:
			c.w.error("ERR Unsupported option " + printable(a))
			return
		}
	}
	if nx && (xx || gt || lt) {
		c.w.error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		c.w.error("ERR GT and LT options at the same time are not compatible")
		return
	}
	when, ok := parseStrictInt(c.args[2])
	if !ok {
		c.fail(errNotInteger)
		return
	}
	if c.cmd.name == "expire" || c.cmd.name == "expireat" {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			c.fail(invalidExpire(c.cmd.name))
			return
		}
		when *= 1000
	}
	if c.cmd.name == "expire" || c.cmd.name == "pexpire" {
		base := c.now().UnixMilli()
		if when > math.MaxInt64-base {
			c.fail(invalidExpire(c.cmd.name))
			return
		}
		when += base
	}
	at := time.UnixMilli(when)
	var set bool
	err := c.update(func(tx txn) error {
		set = false
		if _, _, err := tx.Expiry(key); err != nil { // any kind of value
			if errors.Is(err, kvstore.ErrNotFound) {
				return nil
			}
			return err
		}
		cur, hasTTL := tx.ExpiresAt(key)
		curMs := cur.UnixMilli()
		switch {
		case nx && hasTTL, xx && !hasTTL:
			return nil
		case gt && (!hasTTL || when <= curMs): // no TTL is forever: nothing is greater
			return nil
		case lt && hasTTL && when >= curMs:
			return nil
		}
		existed, err := tx.Expire(key, at)
		if set = existed; err == nil && existed {
			notifyExpire(tx, key, at)
		}
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(set))
}

func cmdPersist(c *call) {
	var had bool
	err := c.update(func(tx txn) error {
		var err error
		had, err = tx.Persist(c.args[1])
		if err == nil && had {
			notify(tx, notifyGeneric, "persist", c.args[1])
		}
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(had))
}

// expiryArgs are the expiry options of SET and GETEX as Redis's
// parseExtendedStringArgumentsOrReply parses them: the unit given (a
// repeated unit replaces its argument, a second unit is a syntax error) and
// its argument, KEEPTTL (SET only), PERSIST (GETEX only). The argument is
// parsed after every option, so a syntax error wins over a bad number.
type expiryArgs struct {
	unit             string
	arg              []byte
	keepTTL, persist bool
}

// take parses args[i] if it is an expiry option allowed after those parsed
// so far, and returns how many arguments it used (0: it is not one).
func (e *expiryArgs) take(args [][]byte, i int, set bool) int {
	switch opt := strings.ToUpper(string(args[i])); opt {
	case "KEEPTTL":
		if set && !e.persist && e.unit == "" {
			e.keepTTL = true
			return 1
		}
	case "PERSIST":
		if !set && !e.keepTTL && e.unit == "" {
			e.persist = true
			return 1
		}
	case "EX", "PX", "EXAT", "PXAT":
		if !e.keepTTL && !e.persist && (e.unit == "" || e.unit == opt) && i+1 < len(args) {
			e.unit, e.arg = opt, args[i+1]
			return 2
		}
	}
	return 0
}

// option is the parsed options' effect on the expiry; cmd names the
// command in an "invalid expire time" error.
func (e *expiryArgs) option(c *call, cmd string) (ttlOption, error) {
	switch {
	case e.keepTTL:
		return ttlOption{kind: ttlKeep}, nil
	case e.unit == "":
		return ttlOption{}, nil
	}
	at, err := expireMillis(c, e.unit, e.arg, cmd)
	return ttlOption{kind: ttlAt, at: at}, err
}

// cmdGetEx answers GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST].
func cmdGetEx(c *call) {
	key := c.args[1]
	var e expiryArgs
	for i := 2; i < len(c.args); {
		n := e.take(c.args, i, false)
		if n == 0 {
			c.fail(errSyntax)
			return
		}
		i += n
	}
	o, err := e.option(c, "getex")
	if err != nil {
		c.fail(err)
		return
	}
	persist := e.persist
	if o.kind == ttlNone && !persist {
		cmdGet(c) // no option: a plain read
		return
	}
	var v []byte
	var found bool
	err = c.update(func(tx txn) error {
		cur, err := tx.Get(key)
		if errors.Is(err, kvstore.ErrNotFound) {
			found = false
			return nil
		}
		if err != nil {
			return err
		}
		v, found = cur, true
		if persist {
			var had bool
			if had, err = tx.Persist(key); err == nil && had {
				notify(tx, notifyGeneric, "persist", key)
			}
		} else if _, err = tx.Expire(key, o.at); err == nil {
			notifyExpire(tx, key, o.at)
		}
		return err
	})
	switch {
	case err != nil:
		c.fail(err)
	case !found:
		c.w.null()
	default:
		c.w.bulk(v)
	}
}

// cmdSetEx answers SETEX key seconds value and PSETEX key ms value.
func cmdSetEx(c *call) {
	unit := "EX"
	if c.cmd.name == "psetex" {
		unit = "PX"
	}
	at, err := expireMillis(c, unit, c.args[2], c.cmd.name)
	if err != nil {
		c.fail(err)
		return
	}
	key, value := c.args[1], c.args[3]
	if err := c.update(func(tx txn) error {
		notifyNewKey(tx, key)
		if err := tx.SetWithTTL(key, value, at); err != nil {
			return err
		}
		notifySetString(tx, key, ttlOption{kind: ttlAt, at: at})
		return nil
	}); err != nil {
		c.fail(err)
		return
	}
	c.w.ok()
}

// notifySetString records a string write's events: "set", and "expire" when it
// set an expiry (as Redis's SET EX, SETEX, PSETEX).
func notifySetString(tx txn, key []byte, o ttlOption) {
	notify(tx, notifyString, "set", key)
	if o.kind == ttlAt {
		notify(tx, notifyGeneric, "expire", key)
	}
}

// notifyExpire records an expiry change: "expire", or "del" when the time
// has passed and the key went (Redis's EXPIRE and GETEX).
func notifyExpire(tx txn, key []byte, at time.Time) {
	if !at.After(tx.Now()) {
		notify(tx, notifyGeneric, "del", key)
		return
	}
	notify(tx, notifyGeneric, "expire", key)
}
