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

// parseExpiry parses the argument of EX, PX, EXAT or PXAT into an absolute
// time; cmd names the command in the error.
func parseExpiry(opt string, arg []byte, cmd string) (ttlOption, error) {
	n, ok := parseStrictInt(arg)
	if !ok {
		return ttlOption{}, errNotInteger
	}
	bad := cmdError(fmt.Sprintf("ERR invalid expire time in '%s' command", cmd))
	if n <= 0 {
		return ttlOption{}, bad
	}
	var at time.Time
	switch strings.ToUpper(opt) {
	case "EX":
		if n > math.MaxInt64/int64(time.Second)-time.Now().Unix() {
			return ttlOption{}, bad
		}
		at = time.Now().Add(time.Duration(n) * time.Second)
	case "PX":
		if n > math.MaxInt64/int64(time.Millisecond)-time.Now().UnixMilli() {
			return ttlOption{}, bad
		}
		at = time.Now().Add(time.Duration(n) * time.Millisecond)
	case "EXAT":
		if n > math.MaxInt64/int64(time.Second) {
			return ttlOption{}, bad
		}
		at = time.Unix(n, 0)
	case "PXAT":
		at = time.UnixMilli(n)
	}
	return ttlOption{kind: ttlAt, at: at}, nil
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
		ms := max(time.Until(at).Milliseconds(), 0)
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
			return at.Unix()
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
// the key is missing or the condition did not hold.
func cmdExpire(c *call) {
	key := c.args[1]
	n, ok := parseStrictInt(c.args[2])
	if !ok {
		c.fail(errNotInteger)
		return
	}
	var at time.Time
	switch c.cmd.name {
	case "expire":
		at = time.Now().Add(time.Duration(max(min(n, math.MaxInt64/int64(time.Second)), -math.MaxInt64/int64(time.Second))) * time.Second)
	case "pexpire":
		at = time.Now().Add(time.Duration(max(min(n, math.MaxInt64/int64(time.Millisecond)), -math.MaxInt64/int64(time.Millisecond))) * time.Millisecond)
	case "expireat":
		at = time.Unix(max(min(n, math.MaxInt64/int64(time.Second)), 0), 0)
	case "pexpireat":
		at = time.UnixMilli(max(n, 0))
	}
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
	if (nx && (xx || gt || lt)) || (gt && lt) {
		c.w.error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	var set bool
	err := c.update(func(tx txn) error {
		set = false
		if _, err := tx.Get(key); err != nil {
			if errors.Is(err, kvstore.ErrNotFound) {
				return nil
			}
			return err
		}
		cur, hasTTL := tx.ExpiresAt(key)
		switch {
		case nx && hasTTL, xx && !hasTTL:
			return nil
		case gt && (!hasTTL || !at.After(cur)): // no TTL is forever: nothing is greater
			return nil
		case lt && hasTTL && !at.Before(cur):
			return nil
		}
		existed, err := tx.Expire(key, at)
		set = existed
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
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(had))
}

// cmdGetEx answers GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST].
func cmdGetEx(c *call) {
	key := c.args[1]
	var o ttlOption
	persist := false
	for i := 2; i < len(c.args); i++ {
		opt := strings.ToUpper(string(c.args[i]))
		switch {
		case opt == "PERSIST" && o.kind == ttlNone && !persist:
			persist = true
		case (opt == "EX" || opt == "PX" || opt == "EXAT" || opt == "PXAT") && o.kind == ttlNone && !persist && i+1 < len(c.args):
			i++
			t, err := parseExpiry(opt, c.args[i], "getex")
			if err != nil {
				c.fail(err)
				return
			}
			o = t
		default:
			c.fail(errSyntax)
			return
		}
	}
	if o.kind == ttlNone && !persist {
		cmdGet(c) // no option: a plain read
		return
	}
	var v []byte
	var found bool
	err := c.update(func(tx txn) error {
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
			_, err = tx.Persist(key)
		} else {
			_, err = tx.Expire(key, o.at)
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
	o, err := parseExpiry(unit, c.args[2], c.cmd.name)
	if err != nil {
		c.fail(err)
		return
	}
	key, value := c.args[1], c.args[3]
	if err := c.update(func(tx txn) error { return tx.SetWithTTL(key, value, o.at) }); err != nil {
		c.fail(err)
		return
	}
	c.w.ok()
}
