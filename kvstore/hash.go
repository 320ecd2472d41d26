package kvstore

import (
	"errors"
	"iter"
)

// Hashes: fields and values under one key (Redis's HSET family). Every
// method reads and writes through the transaction; the DB methods run one
// transaction each.

var errOddPairs = errors.New("kvstore: field and value pairs expected")

// HSet sets fields of the hash at key (pairs: field, value, ...), creating
// it; added is the number of fields that are new.
func (tx *Tx) HSet(key []byte, pairs ...[]byte) (added int, err error) {
	if len(pairs) == 0 || len(pairs)%2 != 0 {
		return 0, errOddPairs
	}
	c, err := tx.edit(key, KindHash, true)
	if err != nil {
		return 0, err
	}
	for i := 0; i < len(pairs); i += 2 {
		if c.hset(pairs[i], pairs[i+1]) {
			added++
		}
	}
	return added, tx.save(c)
}

// HSetNX sets a field only when it does not exist; it reports whether it did.
func (tx *Tx) HSetNX(key, field, value []byte) (bool, error) {
	c, err := tx.edit(key, KindHash, true)
	if err != nil || c.has(field) {
		return false, err
	}
	c.hset(field, value)
	return true, tx.save(c)
}

// HGet returns a copy of a field's value; ErrNotFound when the key or the
// field is missing.
func (tx *Tx) HGet(key, field []byte) ([]byte, error) {
	c, err := tx.read(key, KindHash)
	if err != nil {
		return nil, err
	}
	if c != nil {
		if v, ok := c.hget(field); ok {
			return v, nil
		}
	}
	return nil, ErrNotFound
}

// HDel removes fields and returns how many existed; the hash goes with its
// last field.
func (tx *Tx) HDel(key []byte, fields ...[]byte) (int, error) {
	c, err := tx.edit(key, KindHash, false)
	if err != nil || c == nil {
		return 0, err
	}
	n := 0
	for _, f := range fields {
		if c.hdel(f) {
			n++
		}
	}
	return n, tx.save(c)
}

// HLen is the number of fields (0 for a missing key).
func (tx *Tx) HLen(key []byte) (int, error) {
	c, err := tx.read(key, KindHash)
	if err != nil || c == nil {
		return 0, err
	}
	return c.size(), nil
}

// HGetAll returns every field and value, flattened (field, value, ...), as copies.
func (tx *Tx) HGetAll(key []byte) ([][]byte, error) {
	c, err := tx.read(key, KindHash)
	if err != nil || c == nil {
		return nil, err
	}
	return c.all(), nil
}

// HGetAllSeq is HGetAll without the copies: the number of fields and the
// sequence of fields and values, flattened (field, value, ...). They alias
// the hash: range over them before the transaction writes again, and copy
// what must outlive the transaction.
func (tx *Tx) HGetAllSeq(key []byte) (fields int, all iter.Seq[[]byte], err error) {
	c, err := tx.read(key, KindHash)
	if err != nil || c == nil {
		return 0, func(func([]byte) bool) {}, err
	}
	return c.size(), c.walkAll, nil
}

// HAll ranges over the fields and values of the hash at key as it is now.
func (tx *Tx) HAll(key []byte) (iter.Seq2[[]byte, []byte], error) {
	all, err := tx.HGetAll(key)
	if err != nil {
		return nil, err
	}
	return func(yield func(field, value []byte) bool) {
		for i := 0; i+1 < len(all); i += 2 {
			if !yield(all[i], all[i+1]) {
				return
			}
		}
	}, nil
}

// HSet is Tx.HSet in a transaction of its own.
func (db *DB) HSet(key []byte, pairs ...[]byte) (added int, err error) {
	err = db.Update(func(tx *Tx) error {
		added, err = tx.HSet(key, pairs...)
		return err
	})
	return added, err
}

// HGet is Tx.HGet in a read-only view of its own (View).
func (db *DB) HGet(key, field []byte) (v []byte, err error) {
	err = db.View(func(tx *Tx) error {
		v, err = tx.HGet(key, field)
		return err
	})
	return v, err
}

// HDel is Tx.HDel in a transaction of its own.
func (db *DB) HDel(key []byte, fields ...[]byte) (n int, err error) {
	err = db.Update(func(tx *Tx) error {
		n, err = tx.HDel(key, fields...)
		return err
	})
	return n, err
}

// HAll is Tx.HAll in a read-only view of its own (View): the iterator ranges over
// the hash as it was then.
func (db *DB) HAll(key []byte) (seq iter.Seq2[[]byte, []byte], err error) {
	err = db.View(func(tx *Tx) error {
		seq, err = tx.HAll(key)
		return err
	})
	return seq, err
}
