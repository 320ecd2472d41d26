package kvstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

func b(s string) []byte { return []byte(s) }

// dumpAll is every key's kind, value (decoded) and expiry, for comparing
// a store with its reopened self.
func dumpAll(t *testing.T, db *DB) string {
	t.Helper()
	page, err := db.Scan(ScanOptions{Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, e := range page.Entries {
		fmt.Fprintf(&out, "%s %s ttl=%v: ", e.Key, e.Kind, !e.ExpiresAt.IsZero())
		if e.Kind == KindString {
			fmt.Fprintf(&out, "%q\n", e.Value)
			continue
		}
		c, err := decodeColl(e.Kind, e.Value)
		if err != nil {
			t.Fatalf("%s: %v", e.Key, err)
		}
		fmt.Fprintf(&out, "%q %v\n", c.elems, c.zs)
	}
	return out.String()
}

func TestCollections_TypedAPIAnswersAsRedis(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	defer db.Close()
	if n, err := db.HSet(b("h"), b("f1"), b("v1"), b("f2"), b("v2")); n != 2 || err != nil {
		t.Fatalf("HSet = %d, %v", n, err)
	}
	if n, _ := db.HSet(b("h"), b("f1"), b("x")); n != 0 {
		t.Fatalf("HSet of an existing field added %d", n)
	}
	if v, err := db.HGet(b("h"), b("f1")); string(v) != "x" || err != nil {
		t.Fatalf("HGet = %q, %v", v, err)
	}
	if _, err := db.HGet(b("h"), b("nope")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("HGet of a missing field: %v", err)
	}
	if _, err := db.Get(b("h")); !errors.Is(err, ErrWrongType) {
		t.Fatalf("Get of a hash: %v, want ErrWrongType", err)
	}
	if _, err := db.LPush(b("h"), b("x")); !errors.Is(err, ErrWrongType) {
		t.Fatalf("LPush onto a hash: %v, want ErrWrongType", err)
	}
	if k, _ := db.Kind(b("h")); k != KindHash {
		t.Fatalf("Kind = %v", k)
	}
	if n, _ := db.HDel(b("h"), b("f1"), b("f2"), b("f3")); n != 2 {
		t.Fatalf("HDel = %d", n)
	}
	if k, _ := db.Kind(b("h")); k != KindNone {
		t.Fatalf("a hash without fields still exists: %v", k)
	}

	if n, _ := db.LPush(b("l"), b("a"), b("b")); n != 2 {
		t.Fatalf("LPush = %d", n)
	}
	db.RPush(b("l"), b("c"))
	if got, _ := db.LRange(b("l"), 0, -1); fmt.Sprintf("%s", got) != "[b a c]" {
		t.Fatalf("LRange = %s", got)
	}
	if got, _ := db.RPop(b("l"), 2); fmt.Sprintf("%s", got) != "[c a]" {
		t.Fatalf("RPop 2 = %s", got)
	}

	db.SAdd(b("s"), b("x"), b("y"), b("x"))
	got, _ := db.SMembers(b("s"))
	slices.SortFunc(got, bytes.Compare)
	if fmt.Sprintf("%s", got) != "[x y]" {
		t.Fatalf("SMembers = %s", got)
	}

	db.ZAdd(b("z"), ZMember{b("b"), 2}, ZMember{b("a"), 2}, ZMember{b("c"), 1})
	zs, _ := db.ZRange(b("z"), 0, -1)
	var zsText []string
	for _, z := range zs {
		zsText = append(zsText, fmt.Sprintf("%s=%g", z.Member, z.Score))
	}
	if fmt.Sprint(zsText) != "[c=1 a=2 b=2]" {
		t.Fatalf("ZRange = %v", zs)
	}
	err := db.Update(func(tx *Tx) error {
		seq, err := tx.ZAll(b("z"))
		if err != nil {
			return err
		}
		var names []string
		for z := range seq {
			names = append(names, string(z.Member))
		}
		if fmt.Sprint(names) != "[c a b]" {
			return fmt.Errorf("ZAll = %v", names)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCollections_StringsAndCollectionsShareOneUpdate(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	defer db.Close()
	err := db.Update(func(tx *Tx) error {
		if err := tx.Set(b("counter"), b("1")); err != nil {
			return err
		}
		if _, err := tx.RPush(b("queue"), b("job1"), b("job2")); err != nil {
			return err
		}
		if _, err := tx.HSet(b("user"), b("name"), b("ann")); err != nil {
			return err
		}
		// The transaction reads its own writes.
		if v, err := tx.HGet(b("user"), b("name")); err != nil || string(v) != "ann" {
			return fmt.Errorf("HGet in the same tx = %q, %w", v, err)
		}
		out, err := tx.LPop(b("queue"), 1)
		if err != nil || len(out) != 1 || string(out[0]) != "job1" {
			return fmt.Errorf("LPop in the same tx = %q, %w", out, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := db.LRange(b("queue"), 0, -1); fmt.Sprintf("%s", got) != "[job2]" {
		t.Fatalf("queue = %s", got)
	}
}

// A write to one field of a large hash logs that field, not the hash.
func TestCollections_AChangeLogsARecordTheSizeOfTheChange(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	defer db.Close()
	for i := range 1000 {
		if _, err := db.HSet(b("big"), fmt.Appendf(nil, "field-%04d", i), bytes.Repeat(b("v"), 100)); err != nil {
			t.Fatal(err)
		}
	}
	before := db.Stats().LogBytes
	if _, err := db.HSet(b("big"), b("field-0500"), b("new")); err != nil {
		t.Fatal(err)
	}
	if grew := db.Stats().LogBytes - before; grew > 100 {
		t.Fatalf("one HSET on a 1000-field hash logged %d bytes", grew)
	}
	before = db.Stats().LogBytes
	err := db.Update(func(tx *Tx) error {
		_, err := tx.Expire(b("big"), time.Now().Add(time.Hour))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if grew := db.Stats().LogBytes - before; grew > 100 {
		t.Fatalf("EXPIRE of a 1000-field hash logged %d bytes", grew)
	}
}

// randomCollectionOps changes collections at random, as a model would.
func randomCollectionOps(t *testing.T, db *DB, r *rand.Rand, n int) {
	t.Helper()
	key := func() []byte { return fmt.Appendf(nil, "k%d", r.IntN(12)) }
	val := func() []byte { return fmt.Appendf(nil, "v%d", r.IntN(20)) }
	for range n {
		err := db.Update(func(tx *Tx) error {
			k := key()
			var err error
			switch r.IntN(16) {
			case 0:
				_, err = tx.HSet(k, val(), val())
			case 1:
				_, err = tx.HDel(k, val(), val())
			case 2:
				_, err = tx.LPush(k, val(), val())
			case 3:
				_, err = tx.RPush(k, val())
			case 4:
				_, err = tx.LPop(k, r.IntN(3)+1)
			case 5:
				_, err = tx.LRem(k, r.IntN(5)-2, val())
			case 6:
				err = tx.LTrim(k, r.IntN(4), r.IntN(8)-3)
			case 7:
				_, err = tx.LInsert(k, r.IntN(2) == 0, val(), val())
			case 8:
				if err = tx.LSet(k, r.IntN(4)-2, val()); errors.Is(err, ErrOutOfRange) || errors.Is(err, ErrNotFound) {
					err = nil
				}
			case 9:
				_, err = tx.SAdd(k, val(), val())
			case 10:
				_, err = tx.SRem(k, val())
			case 11:
				_, err = tx.ZAdd(k, ZMember{val(), float64(r.IntN(5))})
			case 12:
				_, err = tx.ZRem(k, val())
			case 13:
				_, err = tx.Expire(k, time.Now().Add(time.Hour))
			case 14:
				_, err = tx.Persist(k)
			case 15:
				if v, derr := tx.Dump(k); derr == nil {
					err = tx.Restore(key(), v)
				}
			}
			if errors.Is(err, ErrWrongType) {
				return nil
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCollections_RecoverFromTheLogAndFromSnapshots(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	r := rand.New(rand.NewPCG(1, 2))
	randomCollectionOps(t, db, r, 3000)
	want := dumpAll(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, Options{})
	if got := dumpAll(t, db); got != want {
		t.Fatalf("after replaying the log:\n%s\nwant:\n%s", got, want)
	}
	if _, err := db.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	randomCollectionOps(t, db, r, 1000)
	want = dumpAll(t, db)
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	if got := dumpAll(t, db); got != want {
		t.Fatalf("after a snapshot and the log:\n%s\nwant:\n%s", got, want)
	}
	if db.Recovery().Snapshot == "" {
		t.Fatal("no snapshot used")
	}
}

func TestCollections_ADeltaOnAKeyThatExpiredSinceIsDroppedAtReplay(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	clock := func() time.Time { return now }
	db := openT(t, dir, Options{clock: clock})
	db.HSet(b("h"), b("a"), b("1"))
	db.Update(func(tx *Tx) error { _, err := tx.Expire(b("h"), now.Add(time.Minute)); return err })
	db.HSet(b("h"), b("b"), b("2")) // a delta on the hash with its TTL
	db.Close()
	now = now.Add(2 * time.Minute)
	db = openT(t, dir, Options{clock: clock})
	defer db.Close()
	if k, _ := db.Kind(b("h")); k != KindNone {
		t.Fatalf("the expired hash came back as a %s", k)
	}
}

func TestWAL_CollectionOpsRoundTrip(t *testing.T) {
	ops := []wal.Op{
		{Type: wal.TypeDelta, Key: b("h"), Value: []byte{1, 0, opHSet, 1, 'f', 1, 'v'}},
		{Type: wal.TypeExpire, Key: b("h"), ExpireAt: 42},
		{Type: wal.TypeTyped, Key: b("z"), Value: []byte{4, 0}, ExpireAt: 7},
	}
	rec := wal.AppendBatchRecord(nil, 1, ops, func(int, int, int, int, int) {})
	r, _, err := wal.DecodeRecord(rec, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var got []wal.Op
	if err := wal.ForEachOp(r.Batch, func(op wal.Op) { got = append(got, op) }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(ops) {
		t.Fatalf("got %v, want %v", got, ops)
	}
}

func TestCollections_LargeCollectionsWrittenOneElementAtATimeRecoverFromTheLogAndFromSnapshots(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	var model [][]byte // the list, as a Redis list would hold it
	write := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			e := fmt.Appendf(nil, "e%d", i)
			var err error
			switch i % 5 {
			case 0, 1:
				_, err = db.LPush(b("list"), e)
				model = append([][]byte{e}, model...)
			case 2, 3:
				_, err = db.RPush(b("list"), e, b("x"))
				model = append(model, e, b("x"))
			default:
				_, err = db.LPop(b("list"), 1)
				model = model[1:]
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.HSet(b("hash"), fmt.Appendf(nil, "f%d", i%700), e); err != nil {
				t.Fatal(err)
			}
			if _, err := db.SAdd(b("set"), e); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ZAdd(b("zset"), ZMember{Member: fmt.Appendf(nil, "m%d", i%900), Score: float64(i % 37)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		got, err := db.LRange(b("list"), 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, model, bytes.Equal) {
			t.Fatalf("%s: the list has %d elements, want %d (%q... want %q...)", when, len(got), len(model), got[:3], model[:3])
		}
	}
	write(0, 1500)
	check("live")
	want := dumpAll(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, Options{})
	check("after replaying the log")
	if got := dumpAll(t, db); got != want {
		t.Fatal("after replaying the log the store differs")
	}
	if _, err := db.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	write(1500, 2500)
	want = dumpAll(t, db)
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	check("after a snapshot and the log")
	if got := dumpAll(t, db); got != want {
		t.Fatal("after a snapshot and the log the store differs")
	}
	if db.Recovery().Snapshot == "" {
		t.Fatal("no snapshot used")
	}
}

// TestLRangeSeq_YieldsWhatLRangeCopies: the uncopied range (what LRANGE
// replies from) gives the elements LRange gives, packed and big, for
// ranges inside, across and past either end, and nothing for a missing key.
func TestLRangeSeq_YieldsWhatLRangeCopies(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	for _, size := range []int{5, 1000} { // packed; big (past bigAt)
		key := b(fmt.Sprintf("l%d", size))
		vals := make([][]byte, size)
		for i := range vals {
			vals[i] = b(fmt.Sprintf("e%d", i))
		}
		if _, err := db.RPush(key, vals...); err != nil {
			t.Fatal(err)
		}
		for _, r := range [][2]int{{0, -1}, {0, 99}, {1, 3}, {-3, -1}, {size - 2, size + 5}, {4, 2}, {size, size + 1}, {-size - 10, 0}} {
			want, err := db.LRange(key, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			err = db.View(func(tx *Tx) error {
				n, elems, err := tx.LRangeSeq(key, r[0], r[1])
				if err != nil {
					return err
				}
				var got [][]byte
				for e := range elems {
					got = append(got, clone(e))
				}
				if n != len(want) || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
					t.Errorf("size %d, range %v: LRangeSeq %d %q, LRange %q", size, r, n, got, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	err := db.View(func(tx *Tx) error {
		n, elems, err := tx.LRangeSeq(b("missing"), 0, -1)
		for range elems {
			n++
		}
		if n != 0 || err != nil {
			t.Errorf("missing key: %d elements, %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestZRangeRankSeq_YieldsWhatZRangeRankCopies: the uncopied ranks (what
// ZRANGE and ZREVRANGE reply from) give the members ZRangeRank gives, in
// its order, packed and big, forward and reverse.
func TestZRangeRankSeq_YieldsWhatZRangeRankCopies(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	for _, size := range []int{5, 1000} { // packed; big (past bigAt)
		key := b(fmt.Sprintf("z%d", size))
		members := make([]ZMember, size)
		for i := range members {
			members[i] = ZMember{Member: b(fmt.Sprintf("m%d", i)), Score: float64(i % 7)}
		}
		if _, err := db.ZAdd(key, members...); err != nil {
			t.Fatal(err)
		}
		for _, reverse := range []bool{false, true} {
			for _, r := range [][2]int{{0, -1}, {0, 9}, {1, 3}, {-3, -1}, {size - 2, size + 5}, {4, 2}, {size, size + 1}, {-size - 10, 0}} {
				err := db.View(func(tx *Tx) error {
					want, err := tx.ZRangeRank(key, r[0], r[1], reverse)
					if err != nil {
						return err
					}
					n, seq, err := tx.ZRangeRankSeq(key, r[0], r[1], reverse)
					if err != nil {
						return err
					}
					var got []ZMember
					for z := range seq {
						got = append(got, ZMember{Member: clone(z.Member), Score: z.Score})
					}
					if n != len(want) || fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("size %d, range %v, reverse %v: ZRangeRankSeq %d %v, ZRangeRank %v", size, r, reverse, n, got, want)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestHGetAllSeqAndSMembersSeq_YieldWhatTheCopiesHold: the uncopied
// sequences (what HGETALL, HKEYS, HVALS and SMEMBERS reply from) give what
// HGetAll and SMembers copy, in their order, packed and big.
func TestHGetAllSeqAndSMembersSeq_YieldWhatTheCopiesHold(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	collect := func(seq func(func([]byte) bool)) [][]byte {
		var got [][]byte
		for e := range seq {
			got = append(got, clone(e))
		}
		return got
	}
	for _, size := range []int{5, 1000} { // packed; big (past bigAt)
		hkey, skey := b(fmt.Sprintf("h%d", size)), b(fmt.Sprintf("s%d", size))
		for i := range size {
			if _, err := db.HSet(hkey, b(fmt.Sprintf("f%d", i)), b(fmt.Sprintf("v%d", i))); err != nil {
				t.Fatal(err)
			}
			if _, err := db.SAdd(skey, b(fmt.Sprintf("m%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		err := db.View(func(tx *Tx) error {
			want, err := tx.HGetAll(hkey)
			if err != nil {
				return err
			}
			fields, all, err := tx.HGetAllSeq(hkey)
			if err != nil {
				return err
			}
			if got := collect(all); fields != size || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
				t.Errorf("hash of %d: HGetAllSeq %d fields %q, HGetAll %q", size, fields, got, want)
			}
			want, err = tx.SMembers(skey)
			if err != nil {
				return err
			}
			n, members, err := tx.SMembersSeq(skey)
			if err != nil {
				return err
			}
			if got := collect(members); n != size || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
				t.Errorf("set of %d: SMembersSeq %d %q, SMembers %q", size, n, got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	err := db.View(func(tx *Tx) error {
		fields, all, err := tx.HGetAllSeq(b("missing"))
		n, members, err2 := tx.SMembersSeq(b("missing"))
		if fields != 0 || n != 0 || len(collect(all)) != 0 || len(collect(members)) != 0 || err != nil || err2 != nil {
			t.Errorf("missing keys: %d fields, %d members, %v, %v", fields, n, err, err2)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
