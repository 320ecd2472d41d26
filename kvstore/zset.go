package kvstore

import (
	"errors"
	"iter"
	"math"
	"slices"
)

// Sorted sets: unique members ordered by score, then by member bytes
// (Redis's ZADD family).

// ErrNaNScore is a score that is not a number (an increment of an
// infinity by its opposite).
var ErrNaNScore = errors.New("kvstore: a score must not be NaN")

// ZAdd sets members' scores, creating the sorted set; it returns how many
// members were new.
func (tx *Tx) ZAdd(key []byte, members ...ZMember) (int, error) {
	for _, m := range members {
		if math.IsNaN(m.Score) {
			return 0, ErrNaNScore
		}
	}
	c, err := tx.edit(key, KindZSet, true)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range members {
		if c.zadd(m.Member, m.Score) {
			n++
		}
	}
	return n, tx.save(c)
}

// ZAddChanged is ZAdd that also counts the members whose score changed
// (Redis's ZADD ... CH counts both); a member given its current score is
// left alone (nothing logged), as Redis compares scores (-0 equals 0).
func (tx *Tx) ZAddChanged(key []byte, members ...ZMember) (added, changed int, err error) {
	for _, m := range members {
		if math.IsNaN(m.Score) {
			return 0, 0, ErrNaNScore
		}
	}
	c, err := tx.edit(key, KindZSet, true)
	if err != nil {
		return 0, 0, err
	}
	for _, m := range members {
		switch cur, ok := c.zscore(m.Member); {
		case ok && cur == m.Score:
		case c.zadd(m.Member, m.Score):
			added++
		default:
			changed++
		}
	}
	return added, changed, tx.save(c)
}

// ZScore returns a member's score; ok is false when it (or the key) is missing.
func (tx *Tx) ZScore(key, member []byte) (score float64, ok bool, err error) {
	c, err := tx.read(key, KindZSet)
	if err != nil || c == nil {
		return 0, false, err
	}
	score, ok = c.zscore(member)
	return score, ok, nil
}

// ZIncrBy adds delta to a member's score (from 0 when new) and returns the
// new score.
func (tx *Tx) ZIncrBy(key, member []byte, delta float64) (float64, error) {
	old, _, err := tx.ZScore(key, member)
	if err != nil {
		return 0, err
	}
	score := old + delta
	if math.IsNaN(score) {
		return 0, ErrNaNScore
	}
	_, err = tx.ZAdd(key, ZMember{Member: member, Score: score})
	return score, err
}

// ZRem removes members and returns how many were there.
func (tx *Tx) ZRem(key []byte, members ...[]byte) (int, error) {
	c, err := tx.edit(key, KindZSet, false)
	if err != nil || c == nil {
		return 0, err
	}
	n := 0
	for _, m := range members {
		if c.zrem(m) {
			n++
		}
	}
	return n, tx.save(c)
}

// ZCard is the number of members (0 for a missing key).
func (tx *Tx) ZCard(key []byte) (int, error) {
	c, err := tx.read(key, KindZSet)
	if err != nil || c == nil {
		return 0, err
	}
	return c.size(), nil
}

// ZRange returns the members ranked start to stop, inclusive (Redis's
// indexes: negative ones count from the highest), lowest score first, as copies.
func (tx *Tx) ZRange(key []byte, start, stop int) ([]ZMember, error) {
	c, err := tx.read(key, KindZSet)
	if err != nil || c == nil {
		return nil, err
	}
	lo, hi := listRange(start, stop, c.size())
	return c.zrange(lo, hi), nil
}

// ZRangeRank returns the members ranked start to stop, inclusive (Redis's
// indexes), lowest score first, or highest first when reverse (ZREVRANGE's
// ranks), as copies: O(log n + m) on a big sorted set.
func (tx *Tx) ZRangeRank(key []byte, start, stop int, reverse bool) ([]ZMember, error) {
	c, err := tx.read(key, KindZSet)
	if err != nil || c == nil {
		return nil, err
	}
	n := c.size()
	lo, hi := listRange(start, stop, n)
	if !reverse {
		return c.zrange(lo, hi), nil
	}
	out := c.zrange(n-hi, n-lo)
	slices.Reverse(out)
	return out, nil
}

// ZRangeRankSeq is ZRangeRank without the copies: the number of members
// ranked start to stop and the sequence of them, in ZRangeRank's order.
// Each Member aliases the set: range over them before the transaction
// writes again, and copy what must outlive the transaction.
func (tx *Tx) ZRangeRankSeq(key []byte, start, stop int, reverse bool) (n int, members iter.Seq[ZMember], err error) {
	c, err := tx.read(key, KindZSet)
	if err != nil || c == nil {
		return 0, func(func(ZMember) bool) {}, err
	}
	size := c.size()
	lo, hi := listRange(start, stop, size)
	if reverse {
		lo, hi = size-hi, size-lo
	}
	return hi - lo, func(yield func(ZMember) bool) { c.zwalkRank(lo, hi, reverse, yield) }, nil
}

// ZWalk calls fn with copies of the members of the sorted set at key in
// order — lowest score first from the first member scored at least from,
// or highest first from the last scored at most from when reverse — until
// fn returns false: O(log n) to the start on a big sorted set, where
// ZRANGEBYSCORE ... LIMIT reads only what it returns.
func (tx *Tx) ZWalk(key []byte, from float64, reverse bool, fn func(ZMember) bool) error {
	c, err := tx.read(key, KindZSet)
	if err != nil || c == nil {
		return err
	}
	tx.hold(c) // fn may change the key
	c.zwalk(from, reverse, fn)
	return nil
}

// ZRank returns a member's rank, lowest score first (highest first when
// reverse); ok is false when it (or the key) is missing.
func (tx *Tx) ZRank(key, member []byte, reverse bool) (rank int, ok bool, err error) {
	c, err := tx.read(key, KindZSet)
	if err != nil || c == nil {
		return 0, false, err
	}
	if rank, ok = c.zrank(member); ok && reverse {
		rank = c.size() - 1 - rank
	}
	return rank, ok, nil
}

// ZAll ranges over the members of the sorted set at key as it is now,
// lowest score first.
func (tx *Tx) ZAll(key []byte) (iter.Seq[ZMember], error) {
	all, err := tx.ZRange(key, 0, -1)
	if err != nil {
		return nil, err
	}
	return func(yield func(ZMember) bool) {
		for _, z := range all {
			if !yield(z) {
				return
			}
		}
	}, nil
}

// ZAdd is Tx.ZAdd in a transaction of its own.
func (db *DB) ZAdd(key []byte, members ...ZMember) (n int, err error) {
	err = db.Update(func(tx *Tx) error { n, err = tx.ZAdd(key, members...); return err })
	return n, err
}

// ZRange is Tx.ZRange in a read-only view of its own (View).
func (db *DB) ZRange(key []byte, start, stop int) (out []ZMember, err error) {
	err = db.View(func(tx *Tx) error { out, err = tx.ZRange(key, start, stop); return err })
	return out, err
}

// ZScore is Tx.ZScore in a read-only view of its own (View).
func (db *DB) ZScore(key, member []byte) (score float64, ok bool, err error) {
	err = db.View(func(tx *Tx) error { score, ok, err = tx.ZScore(key, member); return err })
	return score, ok, err
}
