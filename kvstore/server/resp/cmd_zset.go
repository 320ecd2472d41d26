package resp

import (
	"bytes"
	"errors"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/devkit-go/devkit/kvstore"
)

// Sorted set commands (ZADD family); see cmd_types.go. The blocking pops
// are in cmd_block.go.

func zsetCommands() []command {
	const (
		w  = flagWrite | flagDefers | flagTx
		wf = w | flagFast
		r  = flagReadonly | flagTx
		rf = r | flagFast
	)
	row := func(name string, arity int, flags cmdFlags, first, last, step int, summary string, run func(*call)) command {
		c := collectionRow(name, arity, flags, first, last, step, "sorted-set", summary, run)
		return c
	}
	return []command{
		row("zadd", -4, wf, 1, 1, 1, "Adds members or updates scores; NX, XX, GT, LT, CH, INCR.", cmdZAdd),
		row("zincrby", 4, wf, 1, 1, 1, "Adds to a member's score.", cmdZIncrBy),
		row("zrem", -3, wf, 1, 1, 1, "Removes members.", cmdZRem),
		row("zscore", 3, rf, 1, 1, 1, "A member's score.", cmdZScore),
		row("zmscore", -3, rf, 1, 1, 1, "Members' scores.", cmdZScore),
		row("zcard", 2, rf, 1, 1, 1, "Number of members.", cmdZCard),
		row("zcount", 4, rf, 1, 1, 1, "Members within a score range.", cmdZCount),
		row("zlexcount", 4, rf, 1, 1, 1, "Members within a lexicographical range.", cmdZCount),
		row("zrank", 3, rf, 1, 1, 1, "A member's rank, lowest score first.", cmdZRank),
		row("zrevrank", 3, rf, 1, 1, 1, "A member's rank, highest score first.", cmdZRank),
		row("zrange", -4, r, 1, 1, 1, "Members by rank, score (BYSCORE) or lex (BYLEX); REV, LIMIT, WITHSCORES.", cmdZRange),
		row("zrangestore", -5, w, 1, 2, 1, "Stores a ZRANGE.", cmdZRange),
		row("zrevrange", -4, r, 1, 1, 1, "Members by rank, highest first.", cmdZRange),
		row("zrangebyscore", -4, r, 1, 1, 1, "Members by score.", cmdZRange),
		row("zrevrangebyscore", -4, r, 1, 1, 1, "Members by score, highest first.", cmdZRange),
		row("zrangebylex", -4, r, 1, 1, 1, "Members by lex range.", cmdZRange),
		row("zrevrangebylex", -4, r, 1, 1, 1, "Members by lex range, highest first.", cmdZRange),
		row("zremrangebyrank", 4, w, 1, 1, 1, "Removes members by rank.", cmdZRemRange),
		row("zremrangebyscore", 4, w, 1, 1, 1, "Removes members by score.", cmdZRemRange),
		row("zremrangebylex", 4, w, 1, 1, 1, "Removes members by lex range.", cmdZRemRange),
		row("zpopmin", -2, wf, 1, 1, 1, "Removes and returns the lowest members.", cmdZPop),
		row("zpopmax", -2, wf, 1, 1, 1, "Removes and returns the highest members.", cmdZPop),
		row("zmpop", -4, w, 0, 0, 0, "Pops from the first non-empty sorted set; MIN|MAX, COUNT.", cmdZMPop),
		row("zunion", -3, r, 0, 0, 0, "Union; WEIGHTS, AGGREGATE, WITHSCORES.", cmdZSetOp),
		row("zinter", -3, r, 0, 0, 0, "Intersection; WEIGHTS, AGGREGATE, WITHSCORES.", cmdZSetOp),
		row("zdiff", -3, r, 0, 0, 0, "Difference; WITHSCORES.", cmdZSetOp),
		row("zunionstore", -4, w, 1, 1, 1, "Stores a union.", cmdZSetOp),
		row("zinterstore", -4, w, 1, 1, 1, "Stores an intersection.", cmdZSetOp),
		row("zdiffstore", -4, w, 1, 1, 1, "Stores a difference.", cmdZSetOp),
		row("zintercard", -3, r, 0, 0, 0, "Size of an intersection; LIMIT.", cmdZSetOp),
		row("zrandmember", -2, r, 1, 1, 1, "Random members; COUNT, WITHSCORES.", cmdZRandMember),
		row("zscan", -3, r, 1, 1, 1, "Iterates over members and scores (one page: cursor 0).", cmdZScan),
	}
}

// parseScore parses a score as Redis's getDoubleFromObject: a float, inf
// included, never NaN.
func parseScore(b []byte) (float64, bool) {
	s := string(b)
	if s == "" || strings.TrimSpace(s) != s {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeErr(err) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func isRangeErr(err error) bool { return errors.Is(err, strconv.ErrRange) }

func cmdZAdd(c *call) {
	var nx, xx, gt, lt, ch, incr bool
	i := 2
	for ; i < len(c.args); i++ {
		switch strings.ToUpper(string(c.args[i])) {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "GT":
			gt = true
		case "LT":
			lt = true
		case "CH":
			ch = true
		case "INCR":
			incr = true
		default:
			goto pairs
		}
	}
pairs:
	rest := c.args[i:]
	switch {
	case len(rest) == 0 || len(rest)%2 != 0:
		c.fail(errSyntax)
		return
	case nx && xx:
		c.w.error("ERR XX and NX options at the same time are not compatible")
		return
	case (gt && nx) || (lt && nx) || (gt && lt):
		c.w.error("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	case incr && len(rest) > 2:
		c.w.error("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, len(rest)/2)
	for j := range scores {
		var ok bool
		if scores[j], ok = parseScore(rest[2*j]); !ok {
			c.fail(errNotFloat)
			return
		}
	}
	zaddRun(c, c.args[1], rest, scores, zaddFlags{nx, xx, gt, lt, ch, incr})
}

type zaddFlags struct{ nx, xx, gt, lt, ch, incr bool }

func zaddRun(c *call, key []byte, rest [][]byte, scores []float64, f zaddFlags) {
	var added, updated int
	var last float64
	processed := false
	err := c.update(func(tx txn) error {
		added, updated, processed = 0, 0, false
		k := tx.Kind(key)
		if k != kvstore.KindNone && k != kvstore.KindZSet {
			return kvstore.ErrWrongType
		}
		if f == (zaddFlags{}) || f == (zaddFlags{ch: true}) {
			// Without conditions: one change of the collection, no read
			// of each score first (the same counts, member after member).
			members := make([]kvstore.ZMember, len(scores))
			for j, score := range scores {
				members[j] = kvstore.ZMember{Member: rest[2*j+1], Score: score}
			}
			var err error
			if added, updated, err = tx.ZAddChanged(key, members...); err != nil {
				return err
			}
		} else {
			for j, score := range scores {
				m := rest[2*j+1]
				cur, exists, err := tx.ZScore(key, m)
				if err != nil {
					return err
				}
				switch {
				case exists && f.nx, !exists && f.xx:
					continue
				case !exists:
					if _, err := tx.ZAdd(key, kvstore.ZMember{Member: m, Score: score}); err != nil {
						return err
					}
					added++
					processed, last = true, score
					continue
				}
				n := score
				if f.incr {
					n = cur + score
					if math.IsNaN(n) {
						return cmdError("ERR resulting score is not a number (NaN)")
					}
				}
				if (f.gt && n <= cur) || (f.lt && n >= cur) {
					continue
				}
				processed, last = true, n
				if n != cur {
					if _, err := tx.ZAdd(key, kvstore.ZMember{Member: m, Score: n}); err != nil {
						return err
					}
					updated++
				}
			}
		}
		if added > 0 {
			if k == kvstore.KindNone {
				notify(tx, notifyNew, "new", key) // (after the adds, where Redis has it before: the same update)
			}
			markReady(tx, key)
		}
		if added+updated > 0 {
			event := "zadd"
			if f.incr {
				event = "zincr"
			}
			notify(tx, notifyZSet, event, key)
		}
		return nil
	})
	switch {
	case err != nil:
		c.fail(err)
	case f.incr && processed:
		c.w.double(last)
	case f.incr:
		c.w.null()
	case f.ch:
		c.w.integer(int64(added + updated))
	default:
		c.w.integer(int64(added))
	}
}

func cmdZIncrBy(c *call) {
	d, ok := parseScore(c.args[2])
	if !ok {
		c.fail(errNotFloat)
		return
	}
	zaddRun(c, c.args[1], [][]byte{c.args[2], c.args[3]}, []float64{d}, zaddFlags{incr: true})
}

func cmdZRem(c *call) {
	updateCount(c, func(tx txn) (int, error) {
		n, err := tx.ZRem(c.args[1], c.args[2:]...)
		return notifyRemoved(tx, notifyZSet, "zrem", c.args[1], n, err)
	})
}

// cmdZScore answers ZSCORE and ZMSCORE.
func cmdZScore(c *call) {
	members := c.args[2:]
	scores := make([]float64, len(members))
	found := make([]bool, len(members))
	err := c.read(func(tx txn) error {
		for i, m := range members {
			var err error
			if scores[i], found[i], err = tx.ZScore(c.args[1], m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	if c.cmd.name == "zscore" {
		if found[0] {
			c.w.double(scores[0])
		} else {
			c.w.null()
		}
		return
	}
	c.w.array(len(members))
	for i := range members {
		if found[i] {
			c.w.double(scores[i])
		} else {
			c.w.null()
		}
	}
}

func cmdZCard(c *call) {
	updateCount(c, func(tx txn) (int, error) { return tx.ZCard(c.args[1]) })
}

// zmembers reads a whole sorted set, lowest first (nil when missing).
func zmembers(tx txn, key []byte) ([]kvstore.ZMember, error) { return tx.ZRange(key, 0, -1) }

// scoreRange is a ZRANGEBYSCORE range.
type scoreRange struct {
	min, max             float64
	minExcl, maxExcl     bool
	lexMin, lexMax       []byte // lex ranges: nil with lexInf* for - and +
	lexMinInf, lexMaxInf bool
}

func parseScoreBound(b []byte) (f float64, excl, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		excl, b = true, b[1:]
	}
	f, ok = parseScore(b)
	return f, excl, ok
}

func (c *call) scoreRangeArgs(min, max []byte) (scoreRange, bool) {
	var r scoreRange
	var ok1, ok2 bool
	r.min, r.minExcl, ok1 = parseScoreBound(min)
	r.max, r.maxExcl, ok2 = parseScoreBound(max)
	if !ok1 || !ok2 {
		c.w.error("ERR min or max is not a float")
		return r, false
	}
	return r, true
}

func parseLexBound(b []byte) (v []byte, excl, inf, ok bool) {
	switch {
	case len(b) == 1 && (b[0] == '-' || b[0] == '+'):
		return nil, false, true, true
	case len(b) > 0 && b[0] == '(':
		return b[1:], true, false, true
	case len(b) > 0 && b[0] == '[':
		return b[1:], false, false, true
	}
	return nil, false, false, false
}

func (c *call) lexRangeArgs(min, max []byte) (scoreRange, bool) {
	var r scoreRange
	var ok1, ok2 bool
	r.lexMin, r.minExcl, r.lexMinInf, ok1 = parseLexBound(min)
	r.lexMax, r.maxExcl, r.lexMaxInf, ok2 = parseLexBound(max)
	if !ok1 || !ok2 {
		c.w.error("ERR min or max not valid string range item")
		return r, false
	}
	// "+" as a minimum or "-" as a maximum matches nothing.
	if r.lexMinInf && min[0] == '+' || r.lexMaxInf && max[0] == '-' {
		r.lexMinInf, r.lexMin, r.minExcl = false, nil, true
		r.lexMaxInf, r.lexMax, r.maxExcl = false, nil, true
	}
	return r, true
}

func (r scoreRange) inScore(s float64) bool {
	lo := s > r.min || (!r.minExcl && s == r.min)
	hi := s < r.max || (!r.maxExcl && s == r.max)
	return lo && hi
}

// cmdZCount answers ZCOUNT and ZLEXCOUNT.
func cmdZCount(c *call) {
	lex := c.cmd.name == "zlexcount"
	var r scoreRange
	var ok bool
	if lex {
		r, ok = c.lexRangeArgs(c.args[2], c.args[3])
	} else {
		r, ok = c.scoreRangeArgs(c.args[2], c.args[3])
	}
	if !ok {
		return
	}
	var lo, hi int
	err := c.read(func(tx txn) (err error) {
		lo, hi, err = r.ranks(tx, c.args[1], lex)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(int64(hi - lo))
}

// ranks is the ranks [lo, hi) of the members of the sorted set at key in
// r (a lex range when lex): two seeks, O(log² n) on a big sorted set,
// whatever the number of members in between.
func (r scoreRange) ranks(tx txn, key []byte, lex bool) (lo, hi int, err error) {
	belowMin := func(z kvstore.ZMember) bool {
		if lex {
			c := bytes.Compare(z.Member, r.lexMin)
			return !r.lexMinInf && (c < 0 || c == 0 && r.minExcl)
		}
		return z.Score < r.min || r.minExcl && z.Score == r.min
	}
	upToMax := func(z kvstore.ZMember) bool {
		if lex {
			c := bytes.Compare(z.Member, r.lexMax)
			return r.lexMaxInf || c < 0 || c == 0 && !r.maxExcl
		}
		return z.Score < r.max || !r.maxExcl && z.Score == r.max
	}
	if lo, err = tx.ZRankWhere(key, belowMin); err != nil {
		return 0, 0, err
	}
	if hi, err = tx.ZRankWhere(key, upToMax); err != nil {
		return 0, 0, err
	}
	return lo, max(lo, hi), nil
}

// selectRanks is the members of a score or lex range in reply order (after
// OFFSET, up to LIMIT), found by the ranks of its
// bounds: O(log² n + m) on a big sorted set, m the members LIMIT leaves.
func (s zrangeSpec) selectRanks(tx txn, key []byte) ([]kvstore.ZMember, error) {
	lo, hi, err := s.r.ranks(tx, key, s.by == "lex")
	if err != nil || s.offset < 0 {
		return nil, err
	}
	n := int64(hi - lo)
	if s.offset >= n {
		return nil, nil
	}
	take := n - s.offset
	if s.limit >= 0 {
		take = min(take, s.limit)
	}
	if take == 0 {
		return nil, nil
	}
	start := int64(lo) + s.offset
	if s.rev {
		start = int64(hi) - s.offset - take
	}
	out, err := tx.ZRangeRank(key, int(start), int(start+take-1), false)
	if s.rev {
		slices.Reverse(out)
	}
	return out, err
}

func cmdZRank(c *call) {
	var rank int
	var found bool
	err := c.read(func(tx txn) (err error) {
		rank, found, err = tx.ZRank(c.args[1], c.args[2], c.cmd.name == "zrevrank")
		return err
	})
	switch {
	case err != nil:
		c.fail(err)
	case !found:
		c.w.null()
	default:
		c.w.integer(int64(rank))
	}
}

// zrangeSpec is a parsed ZRANGE (any of its forms).
type zrangeSpec struct {
	by            string // "rank", "score", "lex"
	rev           bool
	withScores    bool
	offset, limit int64 // limit -1: none
	start, stop   int64 // rank
	r             scoreRange
}

// parseZRange parses ZRANGE and its older forms; args start at the key
// (the source key for ZRANGESTORE).
func (c *call) parseZRange(name string, args [][]byte, store bool) (zrangeSpec, bool) {
	s := zrangeSpec{by: "rank", limit: -1}
	min, max := args[1], args[2]
	dir := ""
	switch name {
	case "zrevrange":
		dir = "rev"
	case "zrangebyscore":
		s.by = "score"
	case "zrevrangebyscore":
		s.by, dir = "score", "rev"
	case "zrangebylex":
		s.by = "lex"
	case "zrevrangebylex":
		s.by, dir = "lex", "rev"
	}
	auto := name == "zrange" || name == "zrangestore"
	for j := 3; j < len(args); j++ {
		opt := strings.ToUpper(string(args[j]))
		left := len(args) - j - 1
		switch {
		case !store && opt == "WITHSCORES":
			s.withScores = true
		case opt == "LIMIT" && left >= 2:
			var ok bool
			if s.offset, ok = c.intArg(args[j+1]); !ok {
				return s, false
			}
			if s.limit, ok = c.intArg(args[j+2]); !ok {
				return s, false
			}
			j += 2
		case auto && dir == "" && opt == "REV":
			dir = "rev"
		case auto && s.by == "rank" && opt == "BYLEX":
			s.by = "lex"
		case auto && s.by == "rank" && opt == "BYSCORE":
			s.by = "score"
		default:
			c.fail(errSyntax)
			return s, false
		}
	}
	s.rev = dir == "rev"
	if s.limit != -1 && s.by == "rank" {
		c.w.error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return s, false
	}
	if s.withScores && s.by == "lex" {
		c.w.error("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return s, false
	}
	if s.rev && s.by != "rank" {
		min, max = max, min // ZRANGE ... REV takes max min
	}
	var ok bool
	switch s.by {
	case "rank":
		if s.start, ok = c.intArg(min); !ok {
			return s, false
		}
		if s.stop, ok = c.intArg(max); !ok {
			return s, false
		}
	case "score":
		if s.r, ok = c.scoreRangeArgs(min, max); !ok {
			return s, false
		}
	case "lex":
		if s.r, ok = c.lexRangeArgs(min, max); !ok {
			return s, false
		}
	}
	return s, true
}

// selectScores is the members of a score range in reply order (after
// OFFSET, up to LIMIT), read from the range's
// start (its end when rev) until past it or the LIMIT.
func (s zrangeSpec) selectScores(tx txn, key []byte) ([]kvstore.ZMember, error) {
	if s.offset < 0 {
		_, err := tx.ZCard(key) // WRONGTYPE still
		return nil, err
	}
	from := s.r.min
	if s.rev {
		from = s.r.max
	}
	var out []kvstore.ZMember
	skip := s.offset
	err := tx.ZWalk(key, from, s.rev, func(z kvstore.ZMember) bool {
		if !s.r.inScore(z.Score) {
			past := !s.rev && z.Score > s.r.max || s.rev && z.Score < s.r.min
			return !past // an excluded bound's members come first
		}
		if skip > 0 {
			skip--
			return true
		}
		if s.limit >= 0 && int64(len(out)) >= s.limit {
			return false
		}
		out = append(out, z)
		return true
	})
	return out, err
}

func (w *replyWriter) zmembers(items []kvstore.ZMember, withScores bool) {
	w.zmemberSeq(len(items), slices.Values(items), withScores)
}

// zmemberSeq writes n members from members (and their scores, as pairs:
// RESP3 nests each member and its score, RESP2 keeps them flat).
func (w *replyWriter) zmemberSeq(n int, members iter.Seq[kvstore.ZMember], withScores bool) {
	if withScores {
		w.pairsLen(n)
	} else {
		w.array(n)
	}
	for z := range members {
		if withScores {
			w.pair()
		}
		w.bulk(z.Member)
		if withScores {
			w.double(z.Score)
		}
	}
}

// cmdZRange answers ZRANGE, ZRANGESTORE, ZREVRANGE, ZRANGEBYSCORE,
// ZREVRANGEBYSCORE, ZRANGEBYLEX and ZREVRANGEBYLEX.
func cmdZRange(c *call) {
	store := c.cmd.name == "zrangestore"
	args := c.args[1:]
	if store {
		args = c.args[2:]
	}
	s, ok := c.parseZRange(c.cmd.name, args, store)
	if !ok {
		return
	}
	if s.by == "rank" && !store {
		// The members go straight from the set into the reply, uncopied
		// (as LRANGE's elements).
		err := c.read(func(tx txn) error {
			n, members, err := tx.ZRangeRankSeq(args[0], clampInt(s.start), clampInt(s.stop), s.rev)
			if err == nil {
				c.w.zmemberSeq(n, members, s.withScores)
			}
			return err
		})
		if err != nil {
			c.fail(err)
		}
		return
	}
	var out []kvstore.ZMember
	err := c.read(func(tx txn) error {
		var err error
		switch s.by {
		case "rank": // O(log n + m): only the ranks asked for are read
			out, err = tx.ZRangeRank(args[0], clampInt(s.start), clampInt(s.stop), s.rev)
		case "score": // from the range's start, to its end or the LIMIT
			out, err = s.selectScores(tx, args[0])
		default: // the ranks of the range's bounds, then what LIMIT leaves
			out, err = s.selectRanks(tx, args[0])
		}
		if err != nil {
			return err
		}
		if !store {
			return nil
		}
		return readyAfter(tx, c.args[1], storeZSet(tx, c.args[1], out, "zrangestore"))
	})
	switch {
	case err != nil:
		c.fail(err)
	case store:
		c.w.integer(int64(len(out)))
	default:
		c.w.zmembers(out, s.withScores)
	}
}

// storeZSet replaces dst (any kind) with a sorted set of members; none
// deletes it.
// event is the keyspace event of a store (zrangestore, zunionstore...).
func storeZSet(tx txn, dst []byte, members []kvstore.ZMember, event string) error {
	existed, err := tx.Delete(dst)
	if err != nil {
		return err
	}
	if len(members) == 0 {
		if existed {
			notify(tx, notifyGeneric, "del", dst)
		}
		return nil
	}
	if !existed {
		notify(tx, notifyNew, "new", dst)
	}
	if _, err = tx.ZAdd(dst, members...); err == nil {
		notify(tx, notifyZSet, event, dst)
	}
	return err
}

func cmdZRemRange(c *call) {
	var s zrangeSpec
	var ok bool
	switch c.cmd.name {
	case "zremrangebyrank":
		s.by = "rank"
		if s.start, ok = c.intArg(c.args[2]); !ok {
			return
		}
		if s.stop, ok = c.intArg(c.args[3]); !ok {
			return
		}
	case "zremrangebyscore":
		s.by, s.limit = "score", -1
		if s.r, ok = c.scoreRangeArgs(c.args[2], c.args[3]); !ok {
			return
		}
	default:
		s.by, s.limit = "lex", -1
		if s.r, ok = c.lexRangeArgs(c.args[2], c.args[3]); !ok {
			return
		}
	}
	var n int
	err := c.update(func(tx txn) error {
		var sel []kvstore.ZMember
		var err error
		if s.by == "rank" {
			sel, err = tx.ZRangeRank(c.args[1], clampInt(s.start), clampInt(s.stop), false)
		} else {
			sel, err = s.selectRanks(tx, c.args[1])
		}
		if err != nil {
			return err
		}
		n = len(sel)
		if n == 0 {
			return nil
		}
		names := make([][]byte, n)
		for i, z := range sel {
			names[i] = z.Member
		}
		_, err = tx.ZRem(c.args[1], names...)
		_, err = notifyRemoved(tx, notifyZSet, c.cmd.name, c.args[1], n, err)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(int64(n))
}

// zpopIn pops up to count of the lowest (or highest) members.
func zpopIn(tx txn, key []byte, count int64, highest bool) ([]kvstore.ZMember, error) {
	if _, err := tx.ZCard(key); err != nil || count <= 0 {
		return nil, err // WRONGTYPE comes before a count of 0, as in Redis
	}
	// Only the count members popped are read: O(count log n) on a big one.
	out, err := tx.ZRangeRank(key, 0, clampInt(count-1), highest)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	n := len(out)
	names := make([][]byte, n)
	for i, z := range out {
		names[i] = z.Member
	}
	_, err = tx.ZRem(key, names...)
	event := "zpopmin"
	if highest {
		event = "zpopmax"
	}
	_, err = notifyRemoved(tx, notifyZSet, event, key, n, err)
	return out, err
}

func cmdZPop(c *call) {
	if len(c.args) > 3 {
		c.fail(errSyntax)
		return
	}
	count := int64(1)
	if len(c.args) == 3 {
		var ok bool
		if count, ok = c.rangeArg(c.args[2], 0, ""); !ok {
			return
		}
	}
	var out []kvstore.ZMember
	err := c.update(func(tx txn) (err error) {
		out, err = zpopIn(tx, c.args[1], count, c.cmd.name == "zpopmax")
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	if len(c.args) == 3 {
		c.w.zmembers(out, true)
		return
	}
	// Without COUNT Redis 7.0 answers one flat pair in RESP3 too.
	c.w.array(2 * len(out))
	for _, z := range out {
		c.w.bulk(z.Member)
		c.w.double(z.Score)
	}
}

// zEnd parses MIN or MAX (true: MAX).
func zEnd(b []byte) (highest, ok bool) {
	switch strings.ToUpper(string(b)) {
	case "MIN":
		return false, true
	case "MAX":
		return true, true
	}
	return false, false
}

// zmpopIn pops from the first non-empty sorted set of m.keys (m.left: MIN).
func zmpopIn(tx txn, m mpopArgs) ([]byte, []kvstore.ZMember, error) {
	for _, k := range m.keys {
		switch tx.Kind(k) {
		case kvstore.KindNone:
			continue
		case kvstore.KindZSet:
		default:
			if m.skipWrong {
				continue
			}
			return nil, nil, kvstore.ErrWrongType
		}
		out, err := zpopIn(tx, k, m.count, !m.left)
		return k, out, err
	}
	return nil, nil, nil
}

// writeKeyAndZMembers answers ZMPOP: nil, or [key, [[member, score]...]].
func writeKeyAndZMembers(w *replyWriter, key []byte, items []kvstore.ZMember) {
	if key == nil {
		w.nullArray()
		return
	}
	w.array(2)
	w.bulk(key)
	w.array(len(items))
	for _, z := range items {
		w.array(2)
		w.bulk(z.Member)
		w.double(z.Score)
	}
}

func zminEnd(b []byte) (bool, bool) {
	highest, ok := zEnd(b)
	return !highest, ok
}

func cmdZMPop(c *call) {
	m, ok := c.parseMPop(c.args[1:], zminEnd)
	if !ok {
		return
	}
	var key []byte
	var out []kvstore.ZMember
	err := c.update(func(tx txn) (err error) {
		key, out, err = zmpopIn(tx, m)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	writeKeyAndZMembers(c.w, key, out)
}

// cmdZSetOp answers ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD.
func cmdZSetOp(c *call) {
	name := c.cmd.name
	store := strings.HasSuffix(name, "store")
	card := name == "zintercard"
	op := strings.TrimSuffix(strings.TrimPrefix(name, "z"), "store")
	if card {
		op = "inter"
	}
	numIdx := 1
	if store {
		numIdx = 2
	}
	numkeys, ok := parseStrictInt(c.args[numIdx])
	if !ok {
		c.fail(errNotInteger)
		return
	}
	if numkeys < 1 {
		c.w.error("ERR at least 1 input key is needed for '" + name + "' command")
		return
	}
	if numkeys > int64(len(c.args)-numIdx-1) {
		if card {
			c.w.error("ERR Number of keys can't be greater than number of args")
		} else {
			c.fail(errSyntax)
		}
		return
	}
	keys := c.args[numIdx+1 : numIdx+1+int(numkeys)]
	weights := make([]float64, len(keys))
	for i := range weights {
		weights[i] = 1
	}
	aggregate, withScores, limit := "sum", false, int64(0)
	for j := numIdx + 1 + int(numkeys); j < len(c.args); {
		remaining := len(c.args) - j
		opt := strings.ToUpper(string(c.args[j]))
		switch {
		case op != "diff" && !card && remaining >= len(keys)+1 && opt == "WEIGHTS":
			for i := range keys {
				w, ok := parseScore(c.args[j+1+i])
				if !ok {
					c.w.error("ERR weight value is not a float")
					return
				}
				weights[i] = w
			}
			j += 1 + len(keys)
		case op != "diff" && !card && remaining >= 2 && opt == "AGGREGATE":
			switch a := strings.ToLower(string(c.args[j+1])); a {
			case "sum", "min", "max":
				aggregate = a
			default:
				c.fail(errSyntax)
				return
			}
			j += 2
		case remaining >= 1 && !store && !card && opt == "WITHSCORES":
			withScores = true
			j++
		case card && remaining >= 2 && opt == "LIMIT":
			if limit, ok = c.rangeArg(c.args[j+1], 0, "LIMIT can't be negative"); !ok {
				return
			}
			j += 2
		default:
			c.fail(errSyntax)
			return
		}
	}
	var out []kvstore.ZMember
	err := c.update(func(tx txn) error {
		inputs := make([][]kvstore.ZMember, len(keys))
		for i, k := range keys {
			var err error
			if inputs[i], err = zsetOrSet(tx, k); err != nil {
				return err
			}
		}
		out = combineZSets(op, inputs, weights, aggregate)
		if store {
			return readyAfter(tx, c.args[1], storeZSet(tx, c.args[1], out, c.cmd.name))
		}
		return nil
	})
	switch {
	case err != nil:
		c.fail(err)
	case card:
		n := int64(len(out))
		if limit > 0 {
			n = min(n, limit)
		}
		c.w.integer(n)
	case store:
		c.w.integer(int64(len(out)))
	default:
		c.w.zmembers(out, withScores)
	}
}

// zsetOrSet reads a sorted set, or a set as one whose scores are all 1 (as
// Redis's ZUNIONSTORE does).
func zsetOrSet(tx txn, key []byte) ([]kvstore.ZMember, error) {
	switch tx.Kind(key) {
	case kvstore.KindNone:
		return nil, nil
	case kvstore.KindZSet:
		return zmembers(tx, key)
	case kvstore.KindSet:
		ms, err := tx.SMembers(key)
		out := make([]kvstore.ZMember, len(ms))
		for i, m := range ms {
			out[i] = kvstore.ZMember{Member: m, Score: 1}
		}
		return out, err
	}
	return nil, kvstore.ErrWrongType
}

// combineZSets is Redis's zunionInterDiffGenericCommand: weighted scores
// aggregated, a NaN product or sum counted as 0, sorted by score then member.
func combineZSets(op string, inputs [][]kvstore.ZMember, weights []float64, aggregate string) []kvstore.ZMember {
	weighted := func(s, w float64) float64 {
		v := s * w
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	agg := func(a, b float64) float64 {
		switch aggregate {
		case "min":
			return min(a, b)
		case "max":
			return max(a, b)
		}
		v := a + b
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	index := make([]map[string]float64, len(inputs))
	for i, in := range inputs {
		index[i] = make(map[string]float64, len(in))
		for _, z := range in {
			index[i][string(z.Member)] = z.Score
		}
	}
	result := map[string]float64{}
	var order [][]byte
	switch op {
	case "union":
		for i, in := range inputs {
			for _, z := range in {
				v := weighted(z.Score, weights[i])
				if cur, ok := result[string(z.Member)]; ok {
					result[string(z.Member)] = agg(cur, v)
				} else {
					result[string(z.Member)] = v
					order = append(order, z.Member)
				}
			}
		}
	case "inter":
		for _, z := range inputs[0] {
			v := weighted(z.Score, weights[0])
			in := true
			for i := 1; i < len(inputs); i++ {
				s, ok := index[i][string(z.Member)]
				if !ok {
					in = false
					break
				}
				v = agg(v, weighted(s, weights[i]))
			}
			if in {
				result[string(z.Member)] = v
				order = append(order, z.Member)
			}
		}
	case "diff":
		for _, z := range inputs[0] {
			in := false
			for i := 1; i < len(inputs); i++ {
				if _, ok := index[i][string(z.Member)]; ok {
					in = true
					break
				}
			}
			if !in {
				result[string(z.Member)] = z.Score
				order = append(order, z.Member)
			}
		}
	}
	out := make([]kvstore.ZMember, len(order))
	for i, m := range order {
		out[i] = kvstore.ZMember{Member: m, Score: result[string(m)]}
	}
	slices.SortFunc(out, func(a, b kvstore.ZMember) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		}
		return bytes.Compare(a.Member, b.Member)
	})
	return out
}

func cmdZRandMember(c *call) {
	withScores, hasCount := false, len(c.args) >= 3
	var count int64 = 1
	if hasCount {
		switch {
		case len(c.args) == 4 && strings.EqualFold(string(c.args[3]), "withscores"):
			withScores = true
		case len(c.args) > 3:
			c.fail(errSyntax)
			return
		}
		var ok bool
		if count, ok = c.randCountArg(c.args[2]); !ok {
			return
		}
	}
	var sel []kvstore.ZMember
	err := c.read(func(tx txn) error {
		n, err := tx.ZCard(c.args[1])
		if err != nil || n == 0 {
			return err
		}
		picks := []int{rand.IntN(n)}
		if hasCount {
			picks = randomPicks(n, count)
		}
		sel, err = tx.ZMembersAt(c.args[1], picks)
		return err
	})
	switch {
	case err != nil:
		c.fail(err)
	case !hasCount && len(sel) == 0:
		c.w.null()
	case !hasCount:
		c.w.bulk(sel[0].Member)
	default:
		c.w.zmembers(sel, withScores)
	}
}

func cmdZScan(c *call) {
	cursor, pattern, count, ok := c.scanArgs(c.args[2:], nil)
	if !ok {
		return
	}
	var page []kvstore.ZMember
	var next uint64
	err := c.read(func(tx txn) (err error) {
		page, next, err = tx.ZScan(c.args[1], cursor, count)
		return err
	})
	if err != nil {
		c.fail(err)
		return
	}
	items := make([][]byte, 0, 2*len(page))
	for _, z := range page {
		items = append(items, z.Member, appendDouble(nil, z.Score))
	}
	c.scanReply(items, 2, pattern, next)
}
