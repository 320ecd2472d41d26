package resp

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/devkit-go/devkit/kvstore"
)

// cmdDel deletes the keys in one update — one engine batch — and counts
// only the keys it removed: a key another client deleted first is not counted.
func cmdDel(c *call) {
	var n int64
	err := c.update(func(tx txn) error {
		n = 0
		for _, key := range c.args[1:] {
			existed, err := tx.Delete(key)
			if err != nil {
				return err
			}
			if existed {
				n++
				notify(tx, notifyGeneric, "del", key)
			}
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(n)
}

func cmdExists(c *call) {
	var n int64
	for _, key := range c.args[1:] {
		_, _, err := c.expiry(key)
		switch {
		case err == nil:
			n++
		case !errors.Is(err, kvstore.ErrNotFound):
			c.fail(err)
			return
		}
	}
	c.w.integer(n)
}

// expiry reads a key of any kind: ErrNotFound when it is missing.
func (c *call) expiry(key []byte) (time.Time, bool, error) {
	if c.tx != nil {
		return c.tx.Expiry(key)
	}
	return c.s.store.Expiry(key)
}

// kind is the kind of value key holds (KindNone: missing).
func (c *call) kind(key []byte) (kvstore.Kind, error) {
	if c.tx != nil {
		return c.tx.Kind(key), nil
	}
	return c.s.store.Kind(key)
}

func cmdType(c *call) {
	k, err := c.kind(c.args[1])
	if err != nil {
		c.fail(err)
		return
	}
	c.w.simple(k.String())
}

// cmdRename moves a value (and its expiry) to another key in one update:
// RENAME, and RENAMENX, which answers 0 and moves nothing when the new
// name exists (or is the old one).
func cmdRename(c *call) {
	from, to := c.args[1], c.args[2]
	nx := c.cmd.name == "renamenx"
	moved := false
	err := c.update(func(tx txn) error {
		moved = false
		if tx.Kind(from) == kvstore.KindNone {
			return errNoSuchKey
		}
		if string(from) == string(to) {
			return nil
		}
		if nx && tx.Kind(to) != kvstore.KindNone {
			return nil // it exists, nothing moves
		}
		moved = true
		if err := readyAfter(tx, to, renameInTx(tx, from, to)); err != nil { // a list or sorted set may have arrived
			return err
		}
		notify(tx, notifyNew, "new", to) // Redis adds the new name after deleting what it held
		notify(tx, notifyGeneric, "rename_from", from)
		notify(tx, notifyGeneric, "rename_to", to)
		return nil
	})
	switch {
	case err != nil:
		c.fail(err)
	case nx:
		c.w.integer(boolInt64(moved))
	default:
		c.w.ok()
	}
}

// cmdCopy answers COPY source destination [DB 0] [REPLACE]: 1 when the value
// and its expiry were copied, 0 when the source is missing or the
// destination exists without REPLACE. Only database 0 exists.
func cmdCopy(c *call) {
	from, to := c.args[1], c.args[2]
	replace := false
	for i := 3; i < len(c.args); i++ {
		switch opt := strings.ToUpper(string(c.args[i])); {
		case opt == "REPLACE":
			replace = true
		case opt == "DB" && i+1 < len(c.args):
			i++
			n, ok := parseStrictInt(c.args[i])
			if !ok || n != int64(int32(n)) {
				c.fail(errNotInteger)
				return
			}
			if n != 0 {
				c.fail(cmdError("ERR DB index is out of range"))
				return
			}
		default:
			c.fail(errSyntax)
			return
		}
	}
	if string(from) == string(to) {
		c.fail(cmdError("ERR source and destination objects are the same"))
		return
	}
	copied := false
	err := c.update(func(tx txn) error {
		copied = false
		if tx.Kind(from) == kvstore.KindNone {
			return nil
		}
		if !replace && tx.Kind(to) != kvstore.KindNone {
			return nil
		}
		copied = true
		notify(tx, notifyNew, "new", to) // Redis adds the copy after deleting what it replaces
		if err := readyAfter(tx, to, tx.CopyValue(from, to)); err != nil {
			return err
		}
		notify(tx, notifyGeneric, "copy_to", to)
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.integer(boolInt64(copied))
}

// cmdRandomKey answers a key at a random place of the scan order (the
// first live key from a random hash on, wrapping once), or nil.
func cmdRandomKey(c *call) {
	var buf [8]byte
	if _, err := rand.Read(buf[:]); err != nil {
		c.fail(err)
		return
	}
	cursor := binary.LittleEndian.Uint64(buf[:])
	for range 2 * maxRandomKeyTries {
		keys, next, err := c.s.store.ScanCursor(cursor, 1)
		if err != nil {
			c.fail(err)
			return
		}
		if len(keys) > 0 {
			c.w.bulk(keys[0])
			return
		}
		if next == 0 {
			if cursor == 0 {
				break // an empty keyspace
			}
			cursor = 0 // wrap around
			continue
		}
		cursor = next // an expired key: the next one
	}
	c.w.null()
}

// maxRandomKeyTries bounds the expired keys RANDOMKEY steps over.
const maxRandomKeyTries = 100

// renameInTx writes from's value (with its expiry) under to and deletes
// from: a big collection's tree moves without being copied.
func renameInTx(tx txn, from, to []byte) error {
	if err := tx.CopyValue(from, to); err != nil {
		return err
	}
	_, err := tx.Delete(from)
	return err
}

func cmdDBSize(c *call) { c.w.integer(int64(c.s.store.Len())) }

// keysPage is how many keys KEYS and a filtered SCAN read per engine call.
const keysPage = 1000

// cmdKeys returns every key matching a glob pattern. Like Redis's it is
// O(N) over the keys under the pattern's literal prefix.
func cmdKeys(c *call) {
	pat := c.args[1]
	prefix, exact := literalPrefix(pat)
	if exact {
		if ok, _ := c.s.store.Has(prefix); ok {
			c.w.array(1)
			c.w.bulk(prefix)
		} else {
			c.w.array(0)
		}
		return
	}
	var keys [][]byte
	var after []byte
	for {
		page, err := c.s.store.Scan(kvstore.ScanOptions{Prefix: prefix, After: after, Limit: keysPage})
		if err != nil {
			c.fail(err)
			return
		}
		for _, e := range page.Entries {
			if globMatch(pat, e.Key) {
				keys = append(keys, e.Key)
			}
		}
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	c.w.array(len(keys))
	for _, k := range keys {
		c.w.bulk(k)
	}
}

// cmdFlush deletes every key, when the server allows it.
func cmdFlush(c *call) {
	if !c.s.opts.AllowFlush {
		c.w.error(fmt.Sprintf("ERR %s is disabled: start devkit kv serve with --allow-flush to allow it", strings.ToUpper(c.cmd.name)))
		return
	}
	if len(c.args) > 2 || (len(c.args) == 2 && !strings.EqualFold(string(c.args[1]), "ASYNC") && !strings.EqualFold(string(c.args[1]), "SYNC")) {
		c.fail(errSyntax)
		return
	}
	// One record: after a crash every key is gone or none is.
	if err := c.s.store.FlushAll(); err != nil {
		c.fail(err)
		return
	}
	c.w.ok()
}

// cmdScan answers SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]. COUNT
// is the number of keys examined, as in Redis, so a page filtered by MATCH
// may hold fewer keys (even none) while the cursor goes on.
func cmdScan(c *call) {
	w := c.w
	onlyType := ""
	cursor, pattern, count, ok := c.scanArgs(c.args[1:], &onlyType)
	if !ok {
		return
	}
	// The cursor is a place in the engine's scan order (a key's hash), so
	// it needs no table and stays valid across connections and restarts.
	keys, next, err := c.s.store.ScanCursor(cursor, count)
	if err != nil {
		c.fail(err)
		return
	}
	n := 0
	for _, k := range keys {
		if (pattern == nil || globMatch(pattern, k)) && (onlyType == "" || c.kindIs(k, onlyType)) {
			keys[n] = k
			n++
		}
	}
	w.array(2)
	w.bulkString(strconv.FormatUint(next, 10))
	w.array(n)
	for _, k := range keys[:n] {
		w.bulk(k)
	}
}

// cmdObject answers OBJECT ENCODING, REFCOUNT, FREQ and IDLETIME for a
// string as far as they mean anything here. The engine keeps bytes only,
// so ENCODING is read from the value by Redis's rule for a string it sets
// (int for a canonical 64-bit integer, embstr up to 44 bytes, raw beyond);
// Redis also says raw for a short string changed in place by APPEND,
// SETRANGE or SETBIT. No access times or frequencies are kept: IDLETIME is
// 0, and FREQ is Redis's error for a policy other than LFU (there is no
// eviction).
func cmdObject(c *call) {
	w := c.w
	sub := strings.ToUpper(string(c.args[1]))
	switch sub {
	case "ENCODING", "REFCOUNT", "FREQ", "IDLETIME":
	default:
		unknownSubcommand(w, c.args[1], "OBJECT")
		return
	}
	if len(c.args) != 3 {
		wrongArgs(w, "object|"+strings.ToLower(sub))
		return
	}
	kind, err := c.kind(c.args[2])
	switch {
	case err != nil:
		c.fail(err)
		return
	case kind == kvstore.KindNone:
		w.null()
		return
	case kind != kvstore.KindString:
		objectOfCollection(c, sub, kind)
		return
	}
	v, err := c.get(c.args[2])
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		w.null()
		return
	case err != nil:
		c.fail(err)
		return
	}
	n, isInt := parseStrictInt(v)
	switch sub {
	case "ENCODING":
		switch {
		case isInt:
			w.bulkString("int")
		case len(v) <= 44:
			w.bulkString("embstr")
		default:
			w.bulkString("raw")
		}
	case "REFCOUNT":
		if isInt && n >= 0 && n < 10000 {
			w.integer(math.MaxInt32) // Redis's shared integers
		} else {
			w.integer(1)
		}
	case "FREQ":
		w.error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	case "IDLETIME":
		w.integer(0)
	}
}
