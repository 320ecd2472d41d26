package kvstore

import (
	"fmt"
	"testing"
)

// BenchmarkCollectionWriteAtSize is one write (LPUSH, RPUSH, LPOP, HSET of a new
// field, SADD of a new member, ZADD of a new member) to a collection that
// already holds size elements: ns/op growing with size is the cost of a
// write growing with the collection (so N writes into one key cost N²).
func BenchmarkCollectionWriteAtSize(b *testing.B) {
	writes := []struct {
		name  string
		write func(db *DB, i int) error
	}{
		{"LPush", func(db *DB, i int) error { _, err := db.LPush([]byte("k"), fmt.Appendf(nil, "e%09d", i)); return err }},
		{"RPush", func(db *DB, i int) error { _, err := db.RPush([]byte("k"), fmt.Appendf(nil, "e%09d", i)); return err }},
		{"LPop", func(db *DB, _ int) error { _, err := db.LPop([]byte("k"), 1); return err }},
		{"HSet", func(db *DB, i int) error {
			_, err := db.HSet([]byte("k"), fmt.Appendf(nil, "f%09d", i), []byte("value"))
			return err
		}},
		{"SAdd", func(db *DB, i int) error { _, err := db.SAdd([]byte("k"), fmt.Appendf(nil, "m%09d", i)); return err }},
		{"ZAdd", func(db *DB, i int) error {
			_, err := db.ZAdd([]byte("k"), ZMember{Member: fmt.Appendf(nil, "m%09d", i), Score: float64(i % 1000)})
			return err
		}},
	}
	for _, w := range writes {
		for _, size := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/size=%d", w.name, size), func(b *testing.B) {
				db := benchOpen(b, b.TempDir(), Options{Sync: SyncNone})
				defer db.Close()
				// Fill 1000 elements per command so the fill itself stays cheap.
				for i := 0; i < size; i += 1000 {
					if err := db.Update(func(tx *Tx) error { return fill(tx, w.name, i, 1000) }); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for i := range b.N {
					if err := w.write(db, size+i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// fill adds elements from..from+n to the collection k in one command.
func fill(tx *Tx, kind string, from, n int) error {
	var elems [][]byte
	var zs []ZMember
	for j := from; j < from+n; j++ {
		switch kind {
		case "HSet":
			elems = append(elems, fmt.Appendf(nil, "f%09d", j), []byte("value"))
		case "ZAdd":
			zs = append(zs, ZMember{Member: fmt.Appendf(nil, "m%09d", j), Score: float64(j % 1000)})
		case "SAdd":
			elems = append(elems, fmt.Appendf(nil, "m%09d", j))
		default:
			elems = append(elems, fmt.Appendf(nil, "e%09d", j))
		}
	}
	var err error
	switch kind {
	case "HSet":
		_, err = tx.HSet([]byte("k"), elems...)
	case "ZAdd":
		_, err = tx.ZAdd([]byte("k"), zs...)
	case "SAdd":
		_, err = tx.SAdd([]byte("k"), elems...)
	default:
		_, err = tx.RPush([]byte("k"), elems...)
	}
	return err
}

// BenchmarkCollectionThreshold is the cost of one HSET of a new field and
// one ZADD of a new member to a collection of n entries in each form: the
// packed one (decode, change, encode: what a write did before big
// collections) and the big one (clone, change). Where big gets cheaper is
// where bigAt belongs; B/op is the garbage each write leaves.
func BenchmarkCollectionThreshold(b *testing.B) {
	for _, kind := range []Kind{KindHash, KindZSet} {
		for _, n := range []int{16, 32, 64, 128, 256, 512} {
			c := newColl(kind)
			for i := range n {
				m := fmt.Appendf(nil, "field:%06d", i)
				if kind == KindHash {
					c.hset(m, []byte("value-of-some-length"))
				} else {
					c.zadd(m, float64(i))
				}
			}
			packed, big := c.encode(), c.toBig()
			write := func(c *coll, i int) {
				m := fmt.Appendf(nil, "new:%06d", i)
				if kind == KindHash {
					c.hset(m, []byte("value-of-some-length"))
				} else {
					c.zadd(m, float64(i%n))
				}
			}
			b.Run(fmt.Sprintf("%s/n=%d/packed", kind, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := range b.N {
					c, err := decodeColl(kind, packed)
					if err != nil {
						b.Fatal(err)
					}
					write(c, i)
					_ = c.encode()
				}
			})
			b.Run(fmt.Sprintf("%s/n=%d/big", kind, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := range b.N {
					write(&coll{kind: kind, big: big.clone()}, i)
				}
			})
		}
	}
}
