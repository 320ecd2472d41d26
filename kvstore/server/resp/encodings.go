package resp

// The encoding settings of Redis's collections (hash-max-listpack-entries
// and the like). devkit kv packs a collection up to its own fixed bounds
// (kvstore's bigAt), so they change nothing in how data is stored; CONFIG SET and GET take and
// report them, and OBJECT ENCODING answers what Redis 7.0 would report for
// the collection's size and element lengths under them (Redis converts
// once and never back, so after a shrink it may still say hashtable where
// this says listpack).

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/devkit-go/devkit/kvstore"
)

// encodingSettings are the settings, by their Redis 7.0 names.
type encodingSettings struct {
	mu   sync.Mutex
	vals map[string]int64
}

var encodingDefaults = map[string]int64{
	"hash-max-listpack-entries": 128, "hash-max-listpack-value": 64,
	"zset-max-listpack-entries": 128, "zset-max-listpack-value": 64,
	"set-max-intset-entries": 512, "list-max-listpack-size": -2, "list-compress-depth": 0,
}

// encodingAliases are the older names Redis 7.0 still takes.
var encodingAliases = map[string]string{
	"hash-max-ziplist-entries": "hash-max-listpack-entries", "hash-max-ziplist-value": "hash-max-listpack-value",
	"zset-max-ziplist-entries": "zset-max-listpack-entries", "zset-max-ziplist-value": "zset-max-listpack-value",
	"list-max-ziplist-size": "list-max-listpack-size",
}

func encodingName(name string) (string, bool) {
	name = strings.ToLower(name)
	if a, ok := encodingAliases[name]; ok {
		name = a
	}
	_, ok := encodingDefaults[name]
	return name, ok
}

func (e *encodingSettings) get(name string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.vals[name]; ok {
		return v
	}
	return encodingDefaults[name]
}

// set takes CONFIG SET's value of an encoding setting; ok false: not one
// of them, or not a number.
func (e *encodingSettings) set(name, value string) (known, ok bool) {
	name, known = encodingName(name)
	if !known {
		return false, false
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return true, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.vals == nil {
		e.vals = map[string]int64{}
	}
	e.vals[name] = n
	return true, true
}

// params are the settings as CONFIG GET reports them (aliases too).
func (e *encodingSettings) params() [][2]string {
	var out [][2]string
	for name := range encodingDefaults {
		out = append(out, [2]string{name, strconv.FormatInt(e.get(name), 10)})
	}
	for alias, name := range encodingAliases {
		out = append(out, [2]string{alias, strconv.FormatInt(e.get(name), 10)})
	}
	return out
}

// configSet answers CONFIG SET of the pairs with Redis's answers: an
// unknown name first, else "CONFIG SET failed" for the first setting that
// would change (devkit kv takes its settings from its serve flags:
// current, read-only here), else OK with the encoding settings taken.
func (s *Server) configSet(c *call, pairs [][]byte, current [][2]string) {
	changed := ""
	for i := 0; i < len(pairs); i += 2 {
		name, value := string(pairs[i]), string(pairs[i+1])
		if _, known := encodingName(name); known || strings.EqualFold(name, "tracking-table-max-keys") {
			continue
		}
		known, same := false, false
		for _, kv := range current {
			if strings.EqualFold(kv[0], name) {
				known, same = true, kv[1] == value
			}
		}
		if !known {
			c.w.error(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", printable(pairs[i])))
			return
		}
		if !same && changed == "" {
			changed = strings.ToLower(name)
		}
	}
	if changed != "" {
		c.w.error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - devkit kv takes this setting from a flag of devkit kv serve; it cannot change while the server runs", printable([]byte(changed))))
		return
	}
	for i := 0; i < len(pairs); i += 2 {
		if strings.EqualFold(string(pairs[i]), "tracking-table-max-keys") {
			n, ok := parseStrictInt(pairs[i+1])
			if !ok || n < 0 {
				c.w.error("ERR Invalid argument '" + printable(pairs[i+1]) + "' for CONFIG SET '" + printable(pairs[i]) + "' - argument couldn't be parsed into an integer")
				return
			}
			c.s.setMaxTrackedKeys(n)
			continue
		}
		if known, ok := s.encodings.set(string(pairs[i]), string(pairs[i+1])); known && !ok {
			c.w.error("ERR Invalid argument '" + printable(pairs[i+1]) + "' for CONFIG SET '" + printable(pairs[i]) + "' - argument couldn't be parsed into an integer")
			return
		}
	}
	c.w.ok()
}

// objectEncoding is what Redis 7.0's OBJECT ENCODING would answer for the
// collection at key (see the file comment).
func objectEncoding(c *call, key []byte, kind kvstore.Kind) string {
	e := &c.s.encodings
	var enc string
	_ = c.update(func(tx txn) error {
		switch kind {
		case kvstore.KindList:
			enc = "quicklist"
		case kvstore.KindHash:
			all, err := tx.HGetAll(key)
			enc = packedOr(len(all)/2, all, e.get("hash-max-listpack-entries"), e.get("hash-max-listpack-value"), "hashtable")
			return err
		case kvstore.KindZSet:
			all, err := tx.ZRange(key, 0, -1)
			members := make([][]byte, len(all))
			for i, z := range all {
				members[i] = z.Member
			}
			enc = packedOr(len(all), members, e.get("zset-max-listpack-entries"), e.get("zset-max-listpack-value"), "skiplist")
			return err
		case kvstore.KindSet:
			all, err := tx.SMembers(key)
			enc = "intset"
			if int64(len(all)) > e.get("set-max-intset-entries") {
				enc = "hashtable"
			}
			for _, m := range all {
				if _, ok := parseStrictInt(m); !ok {
					enc = "hashtable"
				}
			}
			return err
		}
		return nil
	})
	return enc
}

func packedOr(n int, items [][]byte, maxEntries, maxValue int64, big string) string {
	if int64(n) > maxEntries {
		return big
	}
	for _, it := range items {
		if int64(len(it)) > maxValue {
			return big
		}
	}
	return "listpack"
}
