// Package wal is the engine's write-ahead log: segment files of framed,
// checksummed records.
//
// Invariant: a record's length is checked against the record-size bound and
// against the bytes left in the segment before anything is allocated for it,
// and a record is believed only when its CRC-32C matches.
//
// Record layout (little endian):
//
//	crc32c  u32  over every byte after it: length, type, seq and payload
//	length  u32  payload length
//	type    u8   TypeSet, TypeDelete, TypeBatch, TypeSetTTL or TypeFlush
//	seq     u64  sequence number, consecutive across the whole log
//	payload      set, delete: uvarint(len(key)) key value
//	             set with TTL: uvarint(len(key)) key expireAt(u64 unix nanos) value
//	             flush: empty
//	             batch: uvarint(count), then count × op, where op is
//	               set, delete, delta: type u8, uvarint(len key), key, uvarint(len value), value
//	               set with TTL, typed, expire: type u8, uvarint(len key), key, expireAt u64, uvarint(len value), value
//
// The ops of types 6..8 carry collections (kvstore's kind.go) and appear in
// batch records only: a typed op sets a whole value of any kind (its value
// is the kind byte, then the packed value), a delta op changes part of a
// collection (its value is the change: the engine's delta encoding), an
// expire op changes a key's expiry alone (no value; expireAt 0: none).
//
// The end of a segment's records: the end of the file, or zero bytes up to
// it (the zero tail of a preallocated segment, see Writer). No record is all
// zeros — type 0 does not exist, sequence numbers start at 1, and the
// checksum of a zero header does not match — so at a record boundary, zeros
// to the end of the file are the clean end of the log, never a record and
// never damage; anything else there that does not decode is a torn or
// damaged record, as before preallocation.
//
// Types 4 and 5 (and TTL ops in batches) were added after the first format,
// and batch op types 6..8 after them; logs written before hold only the
// older types and decode unchanged.
package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// RecordHeaderSize is the fixed part of every record.
const RecordHeaderSize = 4 + 4 + 1 + 8

// RecordType says what a record does.
type RecordType uint8

// Record types.
const (
	TypeSet    RecordType = 1
	TypeDelete RecordType = 2
	// TypeBatch carries several sets and deletes under one checksum, so a
	// crash keeps all of them or none.
	TypeBatch RecordType = 3
	// TypeSetTTL is a set whose key expires at an absolute time.
	TypeSetTTL RecordType = 4
	// TypeFlush removes every key.
	TypeFlush RecordType = 5
	// TypeTyped (batch op) sets a whole value of any kind, with an expiry.
	TypeTyped RecordType = 6
	// TypeDelta (batch op) changes part of a collection.
	TypeDelta RecordType = 7
	// TypeExpire (batch op) sets a key's expiry and nothing else.
	TypeExpire RecordType = 8
)

// HasExpiry reports whether an op of type t carries the expiry field.
func HasExpiry(t RecordType) bool { return t == TypeSetTTL || t == TypeTyped || t == TypeExpire }

// validOp reports whether t is a type a batch op may have.
func validOp(t RecordType) bool {
	return t == TypeSet || t == TypeDelete || t == TypeSetTTL || t == TypeTyped || t == TypeDelta || t == TypeExpire
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one logged mutation. Key and Value alias the decoded buffer.
// A batch record has neither; Batch holds its encoded operations (read them
// with ForEachOp).
type Record struct {
	Type     RecordType
	Seq      uint64
	Key      []byte
	Value    []byte
	ExpireAt int64 // TypeSetTTL: unix nanoseconds
	Batch    []byte
}

// Op is one operation of a batch record: TypeSet, TypeSetTTL or TypeDelete.
type Op struct {
	Type     RecordType
	Key      []byte
	Value    []byte
	ExpireAt int64 // TypeSetTTL: unix nanoseconds
}

// ttlSize is the size of the expiry field of a TypeSetTTL record or op.
const ttlSize = 8

// ErrTruncated reports a record that runs past the end of the data: a torn
// write, or a length field that lies.
var ErrTruncated = errors.New("wal: record truncated")

// ErrBadRecord reports a record that fails its checksum or its framing rules.
var ErrBadRecord = errors.New("wal: bad record")

// EncodedSize is the number of bytes AppendRecord adds for a set or delete
// of key and value; a TypeSetTTL record takes ttlSize more.
func EncodedSize(key, value []byte) int {
	return RecordHeaderSize + uvarintLen(uint64(len(key))) + len(key) + len(value)
}

// MaxPayload is the largest payload a record with these key and value
// bounds can carry: the decoder's bound on a length field.
func MaxPayload(maxKey, maxValue int) int {
	return binary.MaxVarintLen64 + maxKey + ttlSize + maxValue
}

// AppendRecord appends the encoding of r (not a batch) to dst.
func AppendRecord(dst []byte, r Record) []byte {
	start := len(dst)
	payload := 0
	if r.Type != TypeFlush {
		payload = uvarintLen(uint64(len(r.Key))) + len(r.Key) + len(r.Value)
	}
	if r.Type == TypeSetTTL {
		payload += ttlSize
	}
	dst = append(dst, make([]byte, RecordHeaderSize)...)
	h := dst[start:]
	binary.LittleEndian.PutUint32(h[4:8], uint32(payload))
	h[8] = byte(r.Type)
	binary.LittleEndian.PutUint64(h[9:17], r.Seq)
	if r.Type != TypeFlush {
		dst = binary.AppendUvarint(dst, uint64(len(r.Key)))
		dst = append(dst, r.Key...)
		if r.Type == TypeSetTTL {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(r.ExpireAt))
		}
		dst = append(dst, r.Value...)
	}
	binary.LittleEndian.PutUint32(dst[start:start+4], crc32.Checksum(dst[start+4:], castagnoli))
	return dst
}

// DecodeRecord decodes the record at the start of b. maxPayload bounds the
// length field. It returns the record and its encoded size. Errors wrap
// ErrTruncated or ErrBadRecord.
func DecodeRecord(b []byte, maxPayload int) (Record, int, error) {
	if len(b) < RecordHeaderSize {
		return Record{}, 0, fmt.Errorf("%w: %d header bytes of %d", ErrTruncated, len(b), RecordHeaderSize)
	}
	n := binary.LittleEndian.Uint32(b[4:8])
	if uint64(n) > uint64(maxPayload) {
		return Record{}, 0, fmt.Errorf("%w: length %d exceeds the record bound %d", ErrBadRecord, n, maxPayload)
	}
	total := RecordHeaderSize + int(n)
	if total > len(b) {
		return Record{}, 0, fmt.Errorf("%w: length %d but only %d bytes left", ErrTruncated, n, len(b)-RecordHeaderSize)
	}
	if crc32.Checksum(b[4:total], castagnoli) != binary.LittleEndian.Uint32(b[0:4]) {
		return Record{}, 0, fmt.Errorf("%w: checksum mismatch", ErrBadRecord)
	}
	r := Record{Type: RecordType(b[8]), Seq: binary.LittleEndian.Uint64(b[9:17])}
	payload := b[RecordHeaderSize:total]
	if r.Type == TypeBatch {
		if err := ForEachOp(payload, func(Op) {}); err != nil {
			return Record{}, 0, err
		}
		r.Batch = payload
		return r, total, nil
	}
	if r.Type == TypeFlush {
		if len(payload) != 0 {
			return Record{}, 0, fmt.Errorf("%w: flush record carries a payload", ErrBadRecord)
		}
		return r, total, nil
	}
	if r.Type != TypeSet && r.Type != TypeDelete && r.Type != TypeSetTTL {
		return Record{}, 0, fmt.Errorf("%w: unknown type %d", ErrBadRecord, r.Type)
	}
	klen, m := binary.Uvarint(payload)
	if m <= 0 || klen > uint64(len(payload)-m) {
		return Record{}, 0, fmt.Errorf("%w: key length does not fit the payload", ErrBadRecord)
	}
	r.Key = payload[m : m+int(klen)]
	rest := payload[m+int(klen):]
	if r.Type == TypeSetTTL {
		if len(rest) < ttlSize {
			return Record{}, 0, fmt.Errorf("%w: expiry does not fit the payload", ErrBadRecord)
		}
		r.ExpireAt = int64(binary.LittleEndian.Uint64(rest))
		rest = rest[ttlSize:]
	}
	r.Value = rest
	if r.Type == TypeDelete && len(r.Value) != 0 {
		return Record{}, 0, fmt.Errorf("%w: delete record carries a value", ErrBadRecord)
	}
	return r, total, nil
}

// BatchPayloadSize is the payload size of a batch record holding ops.
func BatchPayloadSize(ops []Op) int {
	n := uvarintLen(uint64(len(ops)))
	for _, op := range ops {
		n += 1 + uvarintLen(uint64(len(op.Key))) + len(op.Key) + uvarintLen(uint64(len(op.Value))) + len(op.Value)
		if HasExpiry(op.Type) {
			n += ttlSize
		}
	}
	return n
}

// AppendBatchRecord appends one batch record holding ops to dst. at is
// called for each op with the offsets of its key and value in the result.
func AppendBatchRecord(dst []byte, seq uint64, ops []Op, at func(i, keyOff, keyLen, valOff, valLen int)) []byte {
	payload := BatchPayloadSize(ops)
	dst = slices.Grow(dst, RecordHeaderSize+payload)
	start := len(dst)
	dst = append(dst, make([]byte, RecordHeaderSize)...)
	h := dst[start:]
	binary.LittleEndian.PutUint32(h[4:8], uint32(payload))
	h[8] = byte(TypeBatch)
	binary.LittleEndian.PutUint64(h[9:17], seq)
	dst = binary.AppendUvarint(dst, uint64(len(ops)))
	for i, op := range ops {
		dst = append(dst, byte(op.Type))
		dst = binary.AppendUvarint(dst, uint64(len(op.Key)))
		keyOff := len(dst)
		dst = append(dst, op.Key...)
		if HasExpiry(op.Type) {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(op.ExpireAt))
		}
		dst = binary.AppendUvarint(dst, uint64(len(op.Value)))
		valOff := len(dst)
		dst = append(dst, op.Value...)
		at(i, keyOff, len(op.Key), valOff, len(op.Value))
	}
	binary.LittleEndian.PutUint32(dst[start:start+4], crc32.Checksum(dst[start+4:], castagnoli))
	return dst
}

// ForEachOp checks a batch payload and calls fn for each operation, in
// order. Every length is checked against the bytes left before it is used.
func ForEachOp(payload []byte, fn func(Op)) error {
	count, n := binary.Uvarint(payload)
	if n <= 0 || count > uint64(len(payload)) {
		return fmt.Errorf("%w: batch count does not fit the payload", ErrBadRecord)
	}
	p := payload[n:]
	for i := uint64(0); i < count; i++ {
		if len(p) < 1 {
			return fmt.Errorf("%w: batch op %d truncated", ErrBadRecord, i)
		}
		op := Op{Type: RecordType(p[0])}
		if !validOp(op.Type) {
			return fmt.Errorf("%w: batch op %d has type %d", ErrBadRecord, i, op.Type)
		}
		p = p[1:]
		var ok bool
		if op.Key, p, ok = lengthPrefixed(p); !ok || len(op.Key) == 0 {
			return fmt.Errorf("%w: batch op %d key does not fit", ErrBadRecord, i)
		}
		if HasExpiry(op.Type) {
			if len(p) < ttlSize {
				return fmt.Errorf("%w: batch op %d expiry does not fit", ErrBadRecord, i)
			}
			op.ExpireAt = int64(binary.LittleEndian.Uint64(p))
			p = p[ttlSize:]
		}
		if op.Value, p, ok = lengthPrefixed(p); !ok || ((op.Type == TypeDelete || op.Type == TypeExpire) && len(op.Value) != 0) ||
			((op.Type == TypeTyped || op.Type == TypeDelta) && len(op.Value) == 0) {
			return fmt.Errorf("%w: batch op %d value does not fit", ErrBadRecord, i)
		}
		fn(op)
	}
	if len(p) != 0 {
		return fmt.Errorf("%w: %d bytes after the last batch op", ErrBadRecord, len(p))
	}
	return nil
}

func lengthPrefixed(p []byte) (field, rest []byte, ok bool) {
	l, n := binary.Uvarint(p)
	if n <= 0 || l > uint64(len(p)-n) {
		return nil, nil, false
	}
	end := n + int(l)
	return p[n:end:end], p[end:], true
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
