package kvstore

import "errors"

// Kinds of value.
//
// Invariant: a key holds one kind of value at a time, recorded with it in
// the memtable, the log and snapshots; an operation of one kind on a key
// of another fails with ErrWrongType and changes nothing, and a collection
// that becomes empty is deleted (as in Redis).

// Kind is the kind of value a key holds.
type Kind uint8

// The kinds. KindNone is what Kind reports for a missing key.
const (
	KindString Kind = 0
	KindHash   Kind = 1
	KindList   Kind = 2
	KindSet    Kind = 3
	KindZSet   Kind = 4
	// KindNone is no value (a missing or expired key); never stored.
	KindNone Kind = 0xff
)

// maxKind is the greatest kind a record may hold.
const maxKind = KindZSet

// String is the kind's name as Redis's TYPE reports it.
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindHash:
		return "hash"
	case KindList:
		return "list"
	case KindSet:
		return "set"
	case KindZSet:
		return "zset"
	case KindNone:
		return "none"
	}
	return "unknown"
}

// ErrWrongType is an operation on a key that holds another kind of value.
var ErrWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")

// Kind returns the kind of value key holds, KindNone when it is missing
// or expired. Like Get it never waits for disk I/O.
func (db *DB) Kind(key []byte) (Kind, error) {
	if db.closed.Load() {
		return KindNone, ErrClosed
	}
	e, ok, _ := db.mem.metaIn(key)
	if !ok || e.expired(db.opts.now().UnixNano()) {
		return KindNone, nil
	}
	return e.kind, nil
}

// Kind is DB.Kind as of the transaction.
func (tx *Tx) Kind(key []byte) Kind {
	v := tx.lookup(key)
	if !v.live(tx.now) {
		return KindNone
	}
	return v.kind
}

// ParseKind is the kind named as String names it ("hash", ...); ok false
// for another name.
func ParseKind(name string) (k Kind, ok bool) {
	for _, k := range []Kind{KindString, KindHash, KindList, KindSet, KindZSet} {
		if k.String() == name {
			return k, true
		}
	}
	return KindNone, false
}

// Unpacked is a collection's contents, from its packed encoding (an
// Entry's Value, a Value's Packed).
type Unpacked struct {
	// Items: a hash's fields and values (field, value, ...), a list's
	// elements head first, a set's members.
	Items [][]byte
	// Members: a sorted set's members, lowest score first.
	Members []ZMember
}

// Unpack decodes a collection of kind from its packed encoding.
func Unpack(kind Kind, packed []byte) (Unpacked, error) {
	c, err := decodeColl(kind, packed)
	if err != nil {
		return Unpacked{}, err
	}
	return Unpacked{Items: c.elems, Members: c.zs}, nil // decodeColl's form is packed
}
