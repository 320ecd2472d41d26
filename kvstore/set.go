package kvstore

import "iter"

// Sets: unique members under one key (Redis's SADD family).

// SAdd adds members, creating the set; it returns how many were new.
func (tx *Tx) SAdd(key []byte, members ...[]byte) (int, error) {
	c, err := tx.edit(key, KindSet, true)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range members {
		if c.sadd(m) {
			n++
		}
	}
	return n, tx.save(c)
}

// SRem removes members and returns how many were there; the set goes with
// its last member.
func (tx *Tx) SRem(key []byte, members ...[]byte) (int, error) {
	c, err := tx.edit(key, KindSet, false)
	if err != nil || c == nil {
		return 0, err
	}
	n := 0
	for _, m := range members {
		if c.srem(m) {
			n++
		}
	}
	return n, tx.save(c)
}

// SIsMember reports whether m is a member.
func (tx *Tx) SIsMember(key, m []byte) (bool, error) {
	c, err := tx.read(key, KindSet)
	if err != nil || c == nil {
		return false, err
	}
	return c.has(m), nil
}

// SCard is the number of members (0 for a missing key).
func (tx *Tx) SCard(key []byte) (int, error) {
	c, err := tx.read(key, KindSet)
	if err != nil || c == nil {
		return 0, err
	}
	return c.size(), nil
}

// SMembers returns every member, as copies (nil for a missing key).
func (tx *Tx) SMembers(key []byte) ([][]byte, error) {
	c, err := tx.read(key, KindSet)
	if err != nil || c == nil {
		return nil, err
	}
	return c.all(), nil
}

// SMembersSeq is SMembers without the copies: the number of members and
// the sequence of them. They alias the set: range over them before the
// transaction writes again, and copy what must outlive the transaction.
func (tx *Tx) SMembersSeq(key []byte) (n int, members iter.Seq[[]byte], err error) {
	c, err := tx.read(key, KindSet)
	if err != nil || c == nil {
		return 0, func(func([]byte) bool) {}, err
	}
	return c.size(), c.walkAll, nil
}

// SAll ranges over the members of the set at key as it is now.
func (tx *Tx) SAll(key []byte) (iter.Seq[[]byte], error) {
	all, err := tx.SMembers(key)
	if err != nil {
		return nil, err
	}
	return func(yield func([]byte) bool) {
		for _, m := range all {
			if !yield(m) {
				return
			}
		}
	}, nil
}

// SAdd is Tx.SAdd in a transaction of its own.
func (db *DB) SAdd(key []byte, members ...[]byte) (n int, err error) {
	err = db.Update(func(tx *Tx) error { n, err = tx.SAdd(key, members...); return err })
	return n, err
}

// SRem is Tx.SRem in a transaction of its own.
func (db *DB) SRem(key []byte, members ...[]byte) (n int, err error) {
	err = db.Update(func(tx *Tx) error { n, err = tx.SRem(key, members...); return err })
	return n, err
}

// SMembers is Tx.SMembers in a read-only view of its own (View).
func (db *DB) SMembers(key []byte) (out [][]byte, err error) {
	err = db.View(func(tx *Tx) error { out, err = tx.SMembers(key); return err })
	return out, err
}
