package resp

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/devkit-go/devkit/kvstore"
)

// Hash commands (HSET family); see cmd_types.go.

func cmdHSet(c *call) {
	if len(c.args)%2 != 0 {
		wrongArgs(c.w, c.cmd.name)
		return
	}
	var n int
	err := c.update(func(tx txn) (err error) {
		notifyNewKey(tx, c.args[1])
		if n, err = tx.HSet(c.args[1], c.args[2:]...); err == nil {
			notify(tx, notifyHash, "hset", c.args[1])
		}
		return err
	})
	switch {
	case err != nil:
		c.fail(err)
	case c.cmd.name == "hmset":
		c.w.ok()
	default:
		c.w.integer(int64(n))
	}
}

func cmdHSetNX(c *call) {
	var set bool
	err := c.update(func(tx txn) (err error) {
		notifyNewKey(tx, c.args[1])
		if set, err = tx.HSetNX(c.args[1], c.args[2], c.args[3]); err == nil && set {
			notify(tx, notifyHash, "hset", c.args[1])
		}
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(set))
}

// hget reads one field: ok false when it (or the key) is missing.
func hget(tx txn, key, field []byte) ([]byte, bool, error) {
	v, err := tx.HGet(key, field)
	if errors.Is(err, kvstore.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func cmdHGet(c *call) {
	var v []byte
	var ok bool
	err := c.read(func(tx txn) (err error) {
		v, ok, err = hget(tx, c.args[1], c.args[2])
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.bulkOrNull(v, ok)
}

func cmdHMGet(c *call) {
	fields := c.args[2:]
	vals := make([][]byte, len(fields))
	found := make([]bool, len(fields))
	err := c.read(func(tx txn) error {
		if k := tx.Kind(c.args[1]); k != kvstore.KindNone && k != kvstore.KindHash {
			return kvstore.ErrWrongType
		}
		for i, f := range fields {
			var err error
			if vals[i], found[i], err = hget(tx, c.args[1], f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.array(len(fields))
	for i := range fields {
		c.w.bulkOrNull(vals[i], found[i])
	}
}

func cmdHDel(c *call) {
	updateCount(c, func(tx txn) (int, error) {
		n, err := tx.HDel(c.args[1], c.args[2:]...)
		return notifyRemoved(tx, notifyHash, "hdel", c.args[1], n, err)
	})
}

func cmdHExists(c *call) {
	var ok bool
	err := c.read(func(tx txn) (err error) {
		_, ok, err = hget(tx, c.args[1], c.args[2])
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(ok))
}

func cmdHStrlen(c *call) {
	var v []byte
	err := c.read(func(tx txn) (err error) {
		v, _, err = hget(tx, c.args[1], c.args[2])
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(int64(len(v)))
}

func cmdHLen(c *call) {
	updateCount(c, func(tx txn) (int, error) { return tx.HLen(c.args[1]) })
}

// cmdHGetAll answers HGETALL, HKEYS and HVALS, writing fields and values
// straight from the hash into the reply, uncopied (as LRANGE's elements).
func cmdHGetAll(c *call) {
	err := c.read(func(tx txn) error {
		fields, all, err := tx.HGetAllSeq(c.args[1])
		if err != nil {
			return err
		}
		if c.cmd.name == "hgetall" {
			c.w.mapLen(fields) // RESP2: the flat array of fields and values
			for e := range all {
				c.w.bulk(e)
			}
			return nil
		}
		c.w.array(fields)
		keep := c.cmd.name == "hkeys" // fields come first, then each value
		for e := range all {
			if keep {
				c.w.bulk(e)
			}
			keep = !keep
		}
		return nil
	})
	if err != nil {
		c.fail(err)
	}
}

func cmdHIncrBy(c *call) {
	d, ok := c.intArg(c.args[3])
	if !ok {
		return
	}
	var n int64
	err := c.update(func(tx txn) error {
		v, found, err := hget(tx, c.args[1], c.args[2])
		if err != nil {
			return err
		}
		cur := int64(0)
		if found {
			if cur, ok = parseStrictInt(v); !ok {
				return cmdError("ERR hash value is not an integer")
			}
		}
		if (d > 0 && cur > math.MaxInt64-d) || (d < 0 && cur < math.MinInt64-d) {
			return errOverflow
		}
		n = cur + d
		notifyNewKey(tx, c.args[1])
		if _, err = tx.HSet(c.args[1], c.args[2], strconv.AppendInt(nil, n, 10)); err == nil {
			notify(tx, notifyHash, "hincrby", c.args[1])
		}
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(n)
}

func cmdHIncrByFloat(c *call) {
	d, ok := parseRedisFloat(c.args[3])
	switch {
	case !ok:
		c.fail(errNotFloat)
		return
	case math.IsInf(d, 0):
		c.w.error("ERR value is NaN or Infinity")
		return
	}
	var out []byte
	err := c.update(func(tx txn) error {
		v, found, err := hget(tx, c.args[1], c.args[2])
		if err != nil {
			return err
		}
		cur := 0.0
		if found {
			if cur, ok = parseRedisFloat(v); !ok {
				return cmdError("ERR hash value is not a float")
			}
		}
		n := cur + d
		if math.IsInf(n, 0) || math.IsNaN(n) {
			return cmdError("ERR increment would produce NaN or Infinity")
		}
		out = strconv.AppendFloat(nil, n, 'f', -1, 64)
		notifyNewKey(tx, c.args[1])
		if _, err = tx.HSet(c.args[1], c.args[2], out); err == nil {
			notify(tx, notifyHash, "hincrbyfloat", c.args[1])
		}
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.bulk(out)
}

// randomPicks answers SRANDMEMBER and HRANDFIELD's count: up to count
// distinct positions of n when count >= 0 (in random order; a sample of
// count < n costs O(count), not O(n)), else -count positions with repeats.
func randomPicks(n int, count int64) []int {
	if count < 0 {
		picks := make([]int, -count)
		for i := range picks {
			picks[i] = rand.IntN(n)
		}
		return picks
	}
	if count >= int64(n) {
		return rand.Perm(n)
	}
	// Floyd's sample: each j adds a new position from 0..j.
	picks := make([]int, 0, count)
	seen := make(map[int]struct{}, count)
	for j := n - int(count); j < n; j++ {
		p := rand.IntN(j + 1)
		if _, dup := seen[p]; dup {
			p = j
		}
		seen[p] = struct{}{}
		picks = append(picks, p)
	}
	rand.Shuffle(len(picks), func(a, b int) { picks[a], picks[b] = picks[b], picks[a] })
	return picks
}

// randCountArg parses the count of SRANDMEMBER, HRANDFIELD and
// ZRANDMEMBER: within ±LONG_MAX as Redis, and a negative one (picks with
// repeats, one reply each) within maxRandRepeats, which bounds the reply.
func (c *call) randCountArg(b []byte) (int64, bool) {
	n, ok := c.intArg(b)
	switch {
	case !ok:
		return 0, false
	case n == math.MinInt64:
		c.w.error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return 0, false
	case n < -maxRandRepeats:
		c.w.error(fmt.Sprintf("ERR value is out of range: at most %d picks with repeats", maxRandRepeats))
		return 0, false
	}
	return n, true
}

const maxRandRepeats = 1 << 24

func cmdHRandField(c *call) {
	withValues, hasCount := false, len(c.args) >= 3
	var count int64 = 1
	if hasCount {
		switch {
		case len(c.args) == 4 && strings.EqualFold(string(c.args[3]), "withvalues"):
			withValues = true
		case len(c.args) > 3:
			c.fail(errSyntax)
			return
		}
		var ok bool
		if count, ok = c.randCountArg(c.args[2]); !ok {
			return
		}
	}
	var pairs [][]byte
	err := c.read(func(tx txn) error {
		n, err := tx.HLen(c.args[1])
		if err != nil || n == 0 {
			return err
		}
		picks := []int{rand.IntN(n)}
		if hasCount {
			picks = randomPicks(n, count)
		}
		pairs, err = tx.HPairsAt(c.args[1], picks)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	switch {
	case !hasCount && len(pairs) == 0:
		c.w.null()
		return
	case !hasCount:
		c.w.bulk(pairs[0])
		return
	}
	if withValues {
		c.w.bulkPairs(pairs)
		return
	}
	c.w.array(len(pairs) / 2)
	for i := 0; i < len(pairs); i += 2 {
		c.w.bulk(pairs[i])
	}
}

func cmdHScan(c *call) {
	cursor, pattern, count, ok := c.scanArgs(c.args[2:], nil)
	if !ok {
		return
	}
	var page [][]byte
	var next uint64
	err := c.read(func(tx txn) (err error) {
		page, next, err = tx.HScan(c.args[1], cursor, count)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.scanReply(page, 2, pattern, next)
}
