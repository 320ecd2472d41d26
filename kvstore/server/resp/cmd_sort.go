package resp

// SORT and SORT_RO, with Redis 7.0's semantics (sort.c): BY (a constant
// pattern means no sorting), LIMIT, GET (# for the element, key->field for
// a hash field), ASC/DESC, ALPHA and STORE. The whole command runs inside
// one atomic update, so the elements, the BY and GET keys it reads and the
// list it stores are one consistent state.

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/devkit-go/devkit/kvstore"
)

// sortArgs are SORT's parsed options.
type sortArgs struct {
	desc, alpha, dontSort bool
	fromScript            bool // a script's call: a set is sorted even BY a constant
	limitStart, limitN    int64
	by, store             []byte
	gets                  [][]byte
}

// parseSort parses the options after the key as Redis does, answering the
// first error; readonly (SORT_RO) has no STORE.
func (c *call) parseSort(readonly bool) (sortArgs, bool) {
	a := sortArgs{limitN: -1, fromScript: c.fromScript}
	args := c.args
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "asc":
			a.desc = false
		case opt == "desc":
			a.desc = true
		case opt == "alpha":
			a.alpha = true
		case opt == "limit" && left >= 2:
			start, ok1 := parseStrictInt(args[j+1])
			n, ok2 := parseStrictInt(args[j+2])
			if !ok1 || !ok2 {
				c.fail(errNotInteger)
				return a, false
			}
			a.limitStart, a.limitN = start, n
			j += 2
		case opt == "store" && left >= 1 && !readonly:
			a.store = args[j+1]
			j++
		case opt == "by" && left >= 1:
			a.by = args[j+1]
			a.dontSort = !bytes.Contains(a.by, []byte("*"))
			j++
		case opt == "get" && left >= 1:
			a.gets = append(a.gets, args[j+1])
			j++
		default:
			c.fail(errSyntax)
			return a, false
		}
	}
	return a, true
}

// sortItem is one element with what it sorts by.
type sortItem struct {
	v     []byte
	score float64
	cmp   []byte // ALPHA with BY: the BY value (nil: missing)
}

func cmdSort(c *call) { sortCommand(c, false) }

func cmdSortRO(c *call) { sortCommand(c, true) }

func sortCommand(c *call, readonly bool) {
	a, ok := c.parseSort(readonly)
	if !ok {
		return
	}
	key := c.args[1]
	var out [][]byte
	var null []bool                    // GET found nothing: nil in the reply
	err := c.read(func(tx txn) error { // SORT_RO: a read
		out, null = out[:0], null[:0]
		items, start, end, err := sortedItems(tx, key, &a)
		if err != nil {
			return err
		}
		for _, it := range items[start : end+1] {
			if len(a.gets) == 0 {
				out, null = append(out, it.v), append(null, false)
				continue
			}
			for _, pat := range a.gets {
				v, found := lookupByPattern(tx, pat, it.v)
				out, null = append(out, v), append(null, !found)
			}
		}
		if a.store == nil {
			return nil
		}
		return storeSorted(tx, a.store, out)
	})
	switch {
	case err != nil:
		c.fail(err)
	case a.store != nil:
		c.w.integer(int64(len(out)))
	default:
		c.w.array(len(out))
		for i, v := range out {
			c.w.bulkOrNull(v, !null[i])
		}
	}
}

// errSortScore is Redis's answer when a value to sort by is not a number.
const errSortScore = cmdError("ERR One or more scores can't be converted into double")

// sortedItems loads key's elements and sorts them as a says; start and end
// bound the range to answer (end < start: none).
func sortedItems(tx txn, key []byte, a *sortArgs) (items []sortItem, start, end int, err error) {
	kind := tx.Kind(key)
	switch kind {
	case kvstore.KindNone, kvstore.KindList, kvstore.KindSet, kvstore.KindZSet:
	default:
		return nil, 0, -1, kvstore.ErrWrongType
	}
	// A set in no order is sorted when it is stored or answered to a
	// script, so that neither depends on the set's layout (as Redis does).
	if a.dontSort && kind == kvstore.KindSet && (a.store != nil || a.fromScript) {
		a.dontSort, a.alpha, a.by = false, true, nil
	}
	var elems [][]byte
	switch kind {
	case kvstore.KindList:
		elems, err = tx.LRange(key, 0, -1)
	case kvstore.KindSet:
		elems, err = tx.SMembers(key)
	case kvstore.KindZSet:
		var zs []kvstore.ZMember
		zs, err = tx.ZRange(key, 0, -1)
		for _, z := range zs {
			elems = append(elems, z.Member)
		}
	}
	if err != nil {
		return nil, 0, -1, err
	}
	n := int64(len(elems))
	s := min(max(a.limitStart, 0), n)
	count := min(max(a.limitN, -1), n)
	e := n - 1
	if count >= 0 {
		e = s + count - 1
	}
	if s >= n {
		s, e = n-1, n-2
	}
	e = min(e, n-1)
	if e < s { // nothing to answer (Redis still checks the scores below)
		s, e = 0, -1
	}
	items = make([]sortItem, len(elems))
	for i, v := range elems {
		items[i].v = v
	}
	if a.dontSort {
		// Lists and sorted sets keep their order, reversed by DESC.
		if a.desc && kind != kvstore.KindSet {
			slices.Reverse(items)
		}
		return items, int(s), int(e), nil
	}
	badScore := false
	for i := range items {
		by := items[i].v
		if a.by != nil {
			v, found := lookupByPattern(tx, a.by, items[i].v)
			if !found {
				continue
			}
			by = v
		}
		if a.alpha {
			if a.by != nil {
				items[i].cmp = by
			}
			continue
		}
		f, ok := parseSortScore(by)
		badScore = badScore || !ok
		items[i].score = f
	}
	if badScore {
		return nil, 0, -1, errSortScore
	}
	slices.SortStableFunc(items, func(x, y sortItem) int {
		cmp := compareSortItems(x, y, a.alpha, a.by != nil)
		if a.desc {
			return -cmp
		}
		return cmp
	})
	return items, int(s), int(e), nil
}

// compareSortItems is Redis's sortCompare.
func compareSortItems(x, y sortItem, alpha, byPattern bool) int {
	switch {
	case !alpha:
		switch {
		case x.score > y.score:
			return 1
		case x.score < y.score:
			return -1
		}
		return bytes.Compare(x.v, y.v) // equal scores: the elements decide
	case byPattern:
		switch {
		case x.cmp == nil && y.cmp == nil:
			return 0
		case x.cmp == nil:
			return -1
		case y.cmp == nil:
			return 1
		}
		return bytes.Compare(x.cmp, y.cmp)
	}
	return bytes.Compare(x.v, y.v)
}

// parseSortScore reads a value as strtod does for SORT: leading spaces
// allowed, nothing after the number, no NaN, no overflow; an empty value
// is 0.
func parseSortScore(b []byte) (float64, bool) {
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	if s == "" {
		return 0, true
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && !math.IsNaN(f) && !strings.Contains(s, "_")
}

// lookupByPattern is Redis's lookupKeyByPattern: "#" is the element
// itself; otherwise the first '*' of pat is replaced by the element and
// the key read as a string, or with "->field" after the '*' as a hash
// field. found is false for a missing key or field, a key of another
// kind, or a pattern without '*'.
func lookupByPattern(tx txn, pat, elem []byte) ([]byte, bool) {
	if string(pat) == "#" {
		return elem, true
	}
	star := bytes.IndexByte(pat, '*')
	if star < 0 {
		return nil, false
	}
	var field []byte
	rest := pat[star+1:]
	if f := bytes.Index(rest, []byte("->")); f >= 0 && f+2 < len(rest) {
		field, rest = rest[f+2:], rest[:f]
	}
	key := make([]byte, 0, len(pat)+len(elem))
	key = append(append(append(key, pat[:star]...), elem...), rest...)
	if field != nil {
		if tx.Kind(key) != kvstore.KindHash {
			return nil, false
		}
		v, found, err := hget(tx, key, field)
		return v, err == nil && found
	}
	if tx.Kind(key) != kvstore.KindString {
		return nil, false
	}
	v, err := tx.Get(key)
	return v, err == nil
}

// storeSorted replaces dst with a list of items (GET's missing values are
// empty), or deletes it when there are none, with Redis's events.
func storeSorted(tx txn, dst []byte, items [][]byte) error {
	existed, err := tx.Delete(dst)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		if existed {
			notify(tx, notifyGeneric, "del", dst)
		}
		return nil
	}
	if !existed {
		notify(tx, notifyNew, "new", dst)
	}
	for i, v := range items {
		if v == nil {
			items[i] = []byte{}
		}
	}
	if _, err := tx.RPush(dst, items...); err != nil {
		return err
	}
	notify(tx, notifyList, "sortstore", dst)
	markReady(tx, dst) // a client may wait on the list (BLPOP)
	return nil
}

// sortStoreKey is the key of SORT's last STORE option (Redis's
// sortGetKeys: LIMIT, GET and BY skip their arguments), or "".
func sortStoreKey(args [][]byte) string {
	store := ""
	for i := 2; i < len(args); i++ {
		switch strings.ToLower(string(args[i])) {
		case "limit":
			i += 2
		case "get", "by":
			i++
		case "store":
			if i+1 < len(args) {
				store = string(args[i+1])
			}
		}
	}
	return store
}
