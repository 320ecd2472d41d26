package resp

// DUMP and RESTORE in Redis's own serialization: an RDB object (its type
// byte and value), the RDB version as 2 little-endian bytes, and a CRC64
// (Jones polynomial, as Redis computes it) of all that, little-endian. A
// payload is decoded only after its version and checksum are verified, and
// no length read from it is trusted beyond the bytes that are there.
// Collections are written in RDB's plain encodings (list, set, hash,
// zset-2), which Redis 7.0 reads; of Redis's payloads, those plain
// encodings and strings are read — its packed ones (listpack, intset,
// quicklist) are refused with a precise error.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/devkit-go/devkit/kvstore"
)

const (
	// rdbVersion is the RDB version Redis 7.0 writes (and the newest it reads).
	rdbVersion    = 10
	rdbTypeString = 0
	rdbTypeList   = 1 // a plain list of strings (Redis 7.0 still reads it)
	rdbTypeSet    = 2
	rdbTypeHash   = 4
	rdbTypeZSet2  = 5 // members with binary float64 scores
	// rdbTypeMax is the highest RDB object type Redis 7.0 knows.
	rdbTypeMax = 19
)

// crcJones is Redis's CRC64 table (Jones polynomial, reflected).
var crcJones = crc64.MakeTable(0x95ac9329ac4bc9b5)

// redisCRC64 is Redis's crc64(0, p): no initial or final inversion.
func redisCRC64(p []byte) uint64 { return ^crc64.Update(^uint64(0), crcJones, p) }

var (
	errDumpPayload   = cmdError("ERR DUMP payload version or checksum are wrong")
	errBadDataFormat = cmdError("ERR Bad data format")
	errBusyKey       = cmdError("BUSYKEY Target key name already exists.")
	errDumpEncoding  = cmdError("ERR RESTORE reads strings and the plain RDB encodings of collections only (not listpack, intset or quicklist)")
)

// dumpValue is Redis 7.0's DUMP payload of a value read in tx.
func dumpValue(tx txn, key []byte, kind kvstore.Kind, str []byte) ([]byte, error) {
	var out []byte
	var items [][]byte
	var err error
	switch kind {
	case kvstore.KindString:
		return sealDump(appendRDBString(append(out, rdbTypeString), str)), nil
	case kvstore.KindZSet:
		ms, err := tx.ZRange(key, 0, -1)
		if err != nil {
			return nil, err
		}
		out = appendRDBLen(append(out, rdbTypeZSet2), uint64(len(ms)))
		for _, m := range ms {
			out = binary.LittleEndian.AppendUint64(appendRDBString(out, m.Member), math.Float64bits(m.Score))
		}
		return sealDump(out), nil
	case kvstore.KindHash:
		items, err = tx.HGetAll(key)
		out = appendRDBLen(append(out, rdbTypeHash), uint64(len(items)/2))
	case kvstore.KindList:
		items, err = tx.LRange(key, 0, -1)
		out = appendRDBLen(append(out, rdbTypeList), uint64(len(items)))
	case kvstore.KindSet:
		items, err = tx.SMembers(key)
		out = appendRDBLen(append(out, rdbTypeSet), uint64(len(items)))
	default:
		err = fmt.Errorf("DUMP: unknown kind %d", kind)
	}
	for _, it := range items {
		out = appendRDBString(out, it)
	}
	if err != nil {
		return nil, err
	}
	return sealDump(out), nil
}

// sealDump appends the RDB version and the CRC64 to an RDB object.
func sealDump(out []byte) []byte {
	out = binary.LittleEndian.AppendUint16(out, rdbVersion)
	return binary.LittleEndian.AppendUint64(out, redisCRC64(out))
}

// appendRDBString encodes a string as Redis's rdbSaveRawString does, but
// never compressed: as a 32-bit-or-smaller integer when it is one in
// canonical form and at most 11 bytes, else its length and bytes. (Redis
// LZF-compresses strings over 20 bytes when that saves space; it reads
// uncompressed ones alike.)
func appendRDBString(out, v []byte) []byte {
	if len(v) <= 11 {
		if n, ok := parseStrictInt(v); ok {
			switch {
			case n >= -1<<7 && n < 1<<7:
				return append(out, 0xC0, byte(n))
			case n >= -1<<15 && n < 1<<15:
				return binary.LittleEndian.AppendUint16(append(out, 0xC1), uint16(n))
			case n >= -1<<31 && n < 1<<31:
				return binary.LittleEndian.AppendUint32(append(out, 0xC2), uint32(n))
			}
		}
	}
	return append(appendRDBLen(out, uint64(len(v))), v...)
}

// appendRDBLen is Redis's rdbSaveLen.
func appendRDBLen(out []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(out, byte(n))
	case n < 1<<14:
		return append(out, 0x40|byte(n>>8), byte(n))
	case n <= 1<<32-1:
		return binary.BigEndian.AppendUint32(append(out, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(out, 0x81), n)
}

// verifyDumpPayload checks the version and checksum and returns the RDB
// object before the footer.
func verifyDumpPayload(p []byte) ([]byte, error) {
	if len(p) < 10 {
		return nil, errDumpPayload
	}
	body, footer := p[:len(p)-10], p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > rdbVersion ||
		binary.LittleEndian.Uint64(footer[2:]) != redisCRC64(p[:len(p)-8]) {
		return nil, errDumpPayload
	}
	return body, nil
}

// rdbReader reads an RDB object; every read is bounds-checked.
type rdbReader struct {
	p        []byte
	maxValue int // longest string it will build
}

func (r *rdbReader) take(n uint64) ([]byte, error) {
	if n > uint64(len(r.p)) {
		return nil, errBadDataFormat
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b, nil
}

// length is Redis's rdbLoadLenByRef: a length, or (encoded) the kind of a
// special string encoding.
func (r *rdbReader) length() (n uint64, encoded bool, err error) {
	b, err := r.take(1)
	if err != nil {
		return 0, false, err
	}
	switch b0 := b[0]; {
	case b0>>6 == 0:
		return uint64(b0 & 0x3F), false, nil
	case b0>>6 == 1:
		b1, err := r.take(1)
		if err != nil {
			return 0, false, err
		}
		return uint64(b0&0x3F)<<8 | uint64(b1[0]), false, nil
	case b0 == 0x80:
		b4, err := r.take(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(b4)), false, nil
	case b0 == 0x81:
		b8, err := r.take(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(b8), false, nil
	case b0>>6 == 3:
		return uint64(b0 & 0x3F), true, nil
	}
	return 0, false, errBadDataFormat
}

// str is Redis's rdbGenericLoadStringObject.
func (r *rdbReader) str() ([]byte, error) {
	n, encoded, err := r.length()
	switch {
	case err != nil:
		return nil, err
	case !encoded:
		b, err := r.take(n)
		return append([]byte(nil), b...), err
	}
	switch n {
	case 0, 1, 2: // INT8, INT16, INT32, little-endian
		b, err := r.take(1 << n)
		if err != nil {
			return nil, err
		}
		var v int64
		switch n {
		case 0:
			v = int64(int8(b[0]))
		case 1:
			v = int64(int16(binary.LittleEndian.Uint16(b)))
		default:
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		}
		return strconv.AppendInt(nil, v, 10), nil
	case 3:
		return r.lzf()
	}
	return nil, errBadDataFormat
}

// lzf reads an LZF-compressed string: its compressed and its plain length,
// then the data (liblzf's format).
func (r *rdbReader) lzf() ([]byte, error) {
	clen, enc1, err := r.length()
	if err != nil || enc1 {
		return nil, errBadDataFormat
	}
	ulen, enc2, err := r.length()
	if err != nil || enc2 || ulen > uint64(r.maxValue) {
		return nil, errBadDataFormat
	}
	in, err := r.take(clen)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, ulen)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a literal run of ctrl+1 bytes
			n := ctrl + 1
			if i+n > len(in) || len(out)+n > int(ulen) {
				return nil, errBadDataFormat
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		n := ctrl >> 5 // a back reference of n+2 bytes
		if n == 7 {
			if i >= len(in) {
				return nil, errBadDataFormat
			}
			n += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, errBadDataFormat
		}
		ref := len(out) - (ctrl&0x1f)<<8 - int(in[i]) - 1
		i++
		if ref < 0 || len(out)+n+2 > int(ulen) {
			return nil, errBadDataFormat
		}
		for k := range n + 2 { // byte by byte: the run may overlap itself
			out = append(out, out[ref+k])
		}
	}
	if len(out) != int(ulen) {
		return nil, errBadDataFormat
	}
	return out, nil
}

// rdbValue is a decoded payload: a string, or a collection's items (hash:
// field, value pairs) or members.
type rdbValue struct {
	kind  kvstore.Kind
	str   []byte
	items [][]byte
	zset  []kvstore.ZMember
}

// decodeDump decodes a verified payload's object. Its strings together may
// hold at most maxValue bytes (checked as they are read).
func decodeDump(body []byte, maxValue int) (rdbValue, error) {
	if len(body) == 0 {
		return rdbValue{}, errBadDataFormat
	}
	r := &rdbReader{p: body[1:], maxValue: maxValue}
	var v rdbValue
	var err error
	switch t := body[0]; t {
	case rdbTypeString:
		v.kind = kvstore.KindString
		v.str, err = r.str()
		return v, err
	case rdbTypeList, rdbTypeSet, rdbTypeHash, rdbTypeZSet2:
		v.kind = map[byte]kvstore.Kind{rdbTypeList: kvstore.KindList, rdbTypeSet: kvstore.KindSet,
			rdbTypeHash: kvstore.KindHash, rdbTypeZSet2: kvstore.KindZSet}[t]
	default:
		if t > rdbTypeMax {
			return v, errBadDataFormat
		}
		return v, errDumpEncoding
	}
	n, enc, err := r.length()
	if err != nil || enc || n == 0 || n > uint64(len(r.p)) { // an empty collection is no key
		return v, errBadDataFormat
	}
	seen := make(map[string]bool, n)
	total := 0
	for range n {
		item, err := r.str()
		if err != nil {
			return v, err
		}
		if total += len(item); total > maxValue {
			return v, errBadDataFormat
		}
		switch v.kind {
		case kvstore.KindZSet:
			b, err := r.take(8)
			if err != nil {
				return v, err
			}
			score := math.Float64frombits(binary.LittleEndian.Uint64(b))
			if math.IsNaN(score) || seen[string(item)] {
				return v, errBadDataFormat
			}
			v.zset = append(v.zset, kvstore.ZMember{Member: item, Score: score})
		case kvstore.KindHash:
			value, err := r.str()
			if err != nil {
				return v, err
			}
			if seen[string(item)] {
				return v, errBadDataFormat
			}
			v.items = append(v.items, item, value)
		case kvstore.KindSet:
			if seen[string(item)] {
				return v, errBadDataFormat
			}
			v.items = append(v.items, item)
		default:
			v.items = append(v.items, item)
		}
		seen[string(item)] = v.kind != kvstore.KindList
	}
	return v, nil
}

// restoreValue writes v under key, replacing what it holds.
func restoreValue(tx txn, key []byte, v rdbValue, at time.Time) error {
	if v.kind == kvstore.KindString {
		return tx.SetWithTTL(key, v.str, at) // replaces a value of any kind
	}
	if _, err := tx.Delete(key); err != nil {
		return err
	}
	var err error
	switch v.kind {
	case kvstore.KindHash:
		_, err = tx.HSet(key, v.items...)
	case kvstore.KindList:
		_, err = tx.RPush(key, v.items...)
	case kvstore.KindSet:
		_, err = tx.SAdd(key, v.items...)
	case kvstore.KindZSet:
		_, err = tx.ZAdd(key, v.zset...)
	}
	if err != nil || at.IsZero() {
		return err
	}
	_, err = tx.Expire(key, at)
	return err
}

// cmdDump answers DUMP key: nil for a missing key.
func cmdDump(c *call) {
	var payload []byte
	err := c.update(func(tx txn) error {
		kind := tx.Kind(c.args[1])
		if kind == kvstore.KindNone {
			return kvstore.ErrNotFound
		}
		var str []byte
		if kind == kvstore.KindString {
			var err error
			if str, err = tx.Get(c.args[1]); err != nil {
				return err
			}
		}
		var err error
		payload, err = dumpValue(tx, c.args[1], kind, str)
		return err
	})
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		c.w.null()
	case err != nil:
		c.fail(err)
	default:
		c.w.bulk(payload)
	}
}

// restoreOptions are RESTORE's options.
type restoreOptions struct {
	replace, absTTL bool
}

// parseRestoreOptions parses [REPLACE] [ABSTTL] [IDLETIME s | FREQ f] with
// Redis 7.0's errors; IDLETIME and FREQ are checked and ignored (no access
// times or frequencies are kept).
func (c *call) parseRestoreOptions(args [][]byte) (restoreOptions, bool) {
	var o restoreOptions
	idle, freq := false, false
	for j := 0; j < len(args); j++ {
		more := len(args) - j - 1
		switch opt := strings.ToUpper(string(args[j])); {
		case opt == "REPLACE":
			o.replace = true
		case opt == "ABSTTL":
			o.absTTL = true
		case opt == "IDLETIME" && more >= 1 && !freq:
			n, ok := parseStrictInt(args[j+1])
			switch {
			case !ok:
				c.fail(errNotInteger)
				return o, false
			case n < 0:
				c.w.error("ERR Invalid IDLETIME value, must be >= 0")
				return o, false
			}
			idle = true
			j++
		case opt == "FREQ" && more >= 1 && !idle:
			n, ok := parseStrictInt(args[j+1])
			switch {
			case !ok:
				c.fail(errNotInteger)
				return o, false
			case n < 0 || n > 255:
				c.w.error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return o, false
			}
			freq = true
			j++
		default:
			c.fail(errSyntax)
			return o, false
		}
	}
	return o, true
}

// cmdRestore answers RESTORE key ttl payload [options], checking in Redis
// 7.0's order: options, an existing key (BUSYKEY unless REPLACE), the TTL,
// the payload's version and checksum, then its contents. A TTL already in
// the past leaves no key (REPLACE still removes the old one).
func cmdRestore(c *call) {
	key := c.args[1]
	o, ok := c.parseRestoreOptions(c.args[4:])
	if !ok {
		return
	}
	err := c.update(func(tx txn) error {
		if !o.replace && tx.Kind(key) != kvstore.KindNone {
			return errBusyKey
		}
		ttl, ok := parseStrictInt(c.args[2])
		switch {
		case !ok:
			return errNotInteger
		case ttl < 0:
			return cmdError("ERR Invalid TTL value, must be >= 0")
		}
		body, err := verifyDumpPayload(c.args[3])
		if err != nil {
			return err
		}
		v, err := decodeDump(body, c.s.limits.MaxValueSize)
		if err != nil {
			return err
		}
		if len(v.str) > c.s.limits.MaxValueSize {
			return fmt.Errorf("%w: %d bytes, the limit is %d", kvstore.ErrValueTooLarge, len(v.str), c.s.limits.MaxValueSize)
		}
		var at time.Time
		if ttl > 0 {
			if !o.absTTL {
				ttl += tx.Now().UnixMilli()
			}
			at = time.UnixMilli(ttl)
			if !at.After(tx.Now()) {
				existed, err := tx.Delete(key)
				if err == nil && existed {
					notify(tx, notifyGeneric, "del", key)
				}
				return err
			}
		}
		notify(tx, notifyNew, "new", key)                                         // Redis adds the key after deleting what REPLACE replaces
		if err := readyAfter(tx, key, restoreValue(tx, key, v, at)); err != nil { // a client may be blocked on the key (BLPOP, BZPOPMIN)
			return err
		}
		notify(tx, notifyGeneric, "restore", key)
		return nil
	})
	if err != nil {
		c.fail(err)
		return
	}
	c.w.ok()
}
