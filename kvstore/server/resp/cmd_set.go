package resp

import (
	"math/rand/v2"
	"strings"

	"github.com/devkit-go/devkit/kvstore"
)

// Set commands (SADD family); see cmd_types.go.

func cmdSAdd(c *call) {
	updateCount(c, func(tx txn) (int, error) {
		notifyNewKey(tx, c.args[1])
		n, err := tx.SAdd(c.args[1], c.args[2:]...)
		return notifyCount(tx, notifySet, "sadd", c.args[1], n, err)
	})
}

func cmdSRem(c *call) {
	updateCount(c, func(tx txn) (int, error) {
		n, err := tx.SRem(c.args[1], c.args[2:]...)
		return notifyRemoved(tx, notifySet, "srem", c.args[1], n, err)
	})
}

func cmdSIsMember(c *call) {
	var ok bool
	err := c.read(func(tx txn) (err error) {
		ok, err = tx.SIsMember(c.args[1], c.args[2])
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(ok))
}

func cmdSMIsMember(c *call) {
	res := make([]bool, len(c.args)-2)
	err := c.read(func(tx txn) error {
		for i, m := range c.args[2:] {
			var err error
			if res[i], err = tx.SIsMember(c.args[1], m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.array(len(res))
	for _, ok := range res {
		c.w.integer(boolInt64(ok))
	}
}

// cmdSMembers writes the members straight from the set into the reply,
// uncopied (as LRANGE's elements).
func cmdSMembers(c *call) {
	err := c.read(func(tx txn) error {
		n, members, err := tx.SMembersSeq(c.args[1])
		if err == nil {
			c.w.setLen(n) // Redis 7.0's SMEMBERS is SINTER of one key: a set
			for m := range members {
				c.w.bulk(m)
			}
		}
		return err
	})
	if err != nil {
		c.fail(err)
	}
}

func cmdSCard(c *call) {
	updateCount(c, func(tx txn) (int, error) { return tx.SCard(c.args[1]) })
}

// setCount parses SPOP's and SRANDMEMBER's optional count.
func (c *call) setCount(spop bool) (count int64, has, ok bool) {
	switch {
	case len(c.args) == 2:
		return 1, false, true
	case len(c.args) > 3:
		c.fail(errSyntax)
		return 0, false, false
	}
	if spop {
		count, ok = c.rangeArg(c.args[2], 0, "")
		return count, true, ok
	}
	count, ok = c.randCountArg(c.args[2])
	return count, true, ok
}

func cmdSPop(c *call) {
	count, has, ok := c.setCount(true)
	if !ok {
		return
	}
	var out [][]byte
	err := c.update(func(tx txn) error {
		size, err := tx.SCard(c.args[1])
		if err != nil {
			return err
		}
		out = nil
		if size == 0 {
			return nil
		}
		if out, err = tx.SMembersAt(c.args[1], randomPicks(size, count)); err != nil {
			return err
		}
		n, err := tx.SRem(c.args[1], out...)
		_, err = notifyRemoved(tx, notifySet, "spop", c.args[1], n, err)
		return err
	})
	switch {
	case err != nil:
		c.fail(err)
	case has:
		c.w.bulkSet(out) // none when the key is missing
	default:
		c.w.bulkOrNull(firstOrNil(out))
	}
}

func firstOrNil(items [][]byte) ([]byte, bool) {
	if len(items) == 0 {
		return nil, false
	}
	return items[0], true
}

func cmdSRandMember(c *call) {
	count, has, ok := c.setCount(false)
	if !ok {
		return
	}
	var out [][]byte
	err := c.read(func(tx txn) error {
		n, err := tx.SCard(c.args[1])
		if err != nil || n == 0 {
			return err
		}
		picks := []int{rand.IntN(n)}
		if has {
			picks = randomPicks(n, count)
		}
		out, err = tx.SMembersAt(c.args[1], picks)
		return err
	})
	switch {
	case err != nil:
		c.fail(err)
	case !has:
		c.w.bulkOrNull(firstOrNil(out))
	default:
		c.w.bulks(out)
	}
}

// setsOf reads the sets at keys (nil for a missing one).
func setsOf(tx txn, keys [][]byte) ([][][]byte, error) {
	out := make([][][]byte, len(keys))
	for i, k := range keys {
		var err error
		if out[i], err = tx.SMembers(k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// combineSets is the intersection, union or difference of sets, in the
// order of the first set's members (then of the others', for a union).
func combineSets(op string, sets [][][]byte) [][]byte {
	seen := map[string]bool{}
	var out [][]byte
	if op == "union" {
		for _, s := range sets {
			for _, m := range s {
				if !seen[string(m)] {
					seen[string(m)] = true
					out = append(out, m)
				}
			}
		}
		return out
	}
	others := make([]map[string]struct{}, len(sets)-1)
	for i, s := range sets[1:] {
		others[i] = make(map[string]struct{}, len(s))
		for _, m := range s {
			others[i][string(m)] = struct{}{}
		}
	}
	for _, m := range sets[0] {
		inAll, inAny := true, false
		for _, o := range others {
			_, in := o[string(m)]
			inAll, inAny = inAll && in, inAny || in
		}
		if op == "inter" && inAll || op == "diff" && !inAny {
			out = append(out, m)
		}
	}
	return out
}

// cmdSetOp answers SINTER, SUNION, SDIFF and their STORE forms.
func cmdSetOp(c *call) {
	name := c.cmd.name
	store := strings.HasSuffix(name, "store")
	op := strings.TrimSuffix(strings.TrimPrefix(name, "s"), "store")
	keys := c.args[1:]
	var dst []byte
	if store {
		dst, keys = c.args[1], c.args[2:]
	}
	var out [][]byte
	err := c.update(func(tx txn) error {
		sets, err := setsOf(tx, keys)
		if err != nil {
			return err
		}
		out = combineSets(op, sets)
		if !store {
			return nil
		}
		existed, err := tx.Delete(dst)
		if err != nil {
			return err
		}
		if len(out) == 0 {
			if existed {
				notify(tx, notifyGeneric, "del", dst)
			}
			return nil
		}
		if !existed {
			notify(tx, notifyNew, "new", dst)
		}
		if _, err = tx.SAdd(dst, out...); err == nil {
			notify(tx, notifySet, name, dst)
		}
		return err
	})
	switch {
	case err != nil:
		c.fail(err)
	case store:
		c.w.integer(int64(len(out)))
	default:
		c.w.bulkSet(out)
	}
}

func cmdSInterCard(c *call) {
	numkeys, ok := c.rangeArg(c.args[1], 1, "numkeys should be greater than 0")
	if !ok {
		return
	}
	if numkeys > int64(len(c.args)-2) {
		c.w.error("ERR Number of keys can't be greater than number of args")
		return
	}
	keys := c.args[2 : 2+numkeys]
	var limit int64
	for j := 2 + int(numkeys); j < len(c.args); j++ {
		if strings.EqualFold(string(c.args[j]), "LIMIT") && j+1 < len(c.args) {
			j++
			if limit, ok = c.rangeArg(c.args[j], 0, "LIMIT can't be negative"); !ok {
				return
			}
			continue
		}
		c.fail(errSyntax)
		return
	}
	var n int64
	err := c.update(func(tx txn) error {
		sets, err := setsOf(tx, keys)
		if err != nil {
			return err
		}
		n = int64(len(combineSets("inter", sets)))
		if limit > 0 {
			n = min(n, limit)
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(n)
}

func cmdSMove(c *call) {
	src, dst, m := c.args[1], c.args[2], c.args[3]
	moved := false
	err := c.update(func(tx txn) error {
		moved = false
		for _, k := range [][]byte{src, dst} {
			if kind := tx.Kind(k); kind != kvstore.KindNone && kind != kvstore.KindSet {
				return kvstore.ErrWrongType
			}
		}
		n, err := tx.SRem(src, m)
		if err != nil || n == 0 {
			return err
		}
		moved = true
		same := string(src) == string(dst) // Redis answers without an event
		if !same {
			notifyRemoval(tx, notifySet, "srem", src)
			notifyNewKey(tx, dst)
		}
		if n, err = tx.SAdd(dst, m); err == nil && n > 0 && !same {
			notify(tx, notifySet, "sadd", dst)
		}
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(moved))
}

func cmdSScan(c *call) {
	cursor, pattern, count, ok := c.scanArgs(c.args[2:], nil)
	if !ok {
		return
	}
	var page [][]byte
	var next uint64
	err := c.read(func(tx txn) (err error) {
		page, next, err = tx.SScan(c.args[1], cursor, count)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.scanReply(page, 1, pattern, next)
}
