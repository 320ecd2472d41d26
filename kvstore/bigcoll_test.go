package kvstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	gomaps "maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// collModel is what Redis would hold for each collection key, to check the
// store against through random operations that cross bigAt and smallAt
// both ways.
type collModel struct {
	hash map[string]string
	set  map[string]bool
	zset map[string]float64
	list []string
}

func newCollModel() *collModel {
	return &collModel{hash: map[string]string{}, set: map[string]bool{}, zset: map[string]float64{}}
}

// bigCollOps runs n random operations on the four keys, each growing or
// shrinking its collection by up to a few dozen entries, and checks every
// answer against the model.
func bigCollOps(t *testing.T, db *DB, m *collModel, r *rand.Rand, n int, growPct int) {
	t.Helper()
	member := func() string { return fmt.Sprintf("m%d", r.IntN(400)) }
	grow := func() bool { return r.IntN(100) < growPct }
	for range n {
		count := 1 + r.IntN(40)
		switch r.IntN(4) {
		case 0:
			var args [][]byte
			var fields []string
			if grow() {
				for range count {
					f, v := member(), fmt.Sprint(r.IntN(1000))
					args = append(args, b(f), b(v))
					if _, ok := m.hash[f]; !ok && !slices.Contains(fields, f) {
						fields = append(fields, f)
					}
					m.hash[f] = v
				}
				if got, err := db.HSet(b("h"), args...); err != nil || got != len(fields) {
					t.Fatalf("HSet added %d, %v; want %d", got, err, len(fields))
				}
			} else {
				want := 0
				for range count {
					f := member()
					args = append(args, b(f))
					if _, ok := m.hash[f]; ok {
						delete(m.hash, f)
						want++
					}
				}
				if got, err := db.HDel(b("h"), args...); err != nil || got != want {
					t.Fatalf("HDel removed %d, %v; want %d", got, err, want)
				}
			}
			f := member()
			v, err := db.HGet(b("h"), b(f))
			if want, ok := m.hash[f]; ok != (err == nil) || string(v) != want {
				t.Fatalf("HGet %s = %q, %v; want %q", f, v, err, want)
			}
		case 1:
			var args [][]byte
			want := 0
			for range count {
				args = append(args, b(member()))
			}
			add := grow()
			for _, a := range args {
				if m.set[string(a)] != add {
					want++
					if add {
						m.set[string(a)] = true
					} else {
						delete(m.set, string(a))
					}
				}
			}
			var got int
			var err error
			if add {
				got, err = db.SAdd(b("s"), args...)
			} else {
				got, err = db.SRem(b("s"), args...)
			}
			if err != nil || got != want {
				t.Fatalf("SAdd/SRem(%v) = %d, %v; want %d", add, got, err, want)
			}
		case 2:
			if grow() {
				var zs []ZMember
				for range count {
					mem, score := member(), float64(r.IntN(50))
					zs = append(zs, ZMember{Member: b(mem), Score: score})
					m.zset[mem] = score
				}
				if _, err := db.ZAdd(b("z"), zs...); err != nil {
					t.Fatal(err)
				}
			} else {
				var args [][]byte
				for range count {
					mem := member()
					args = append(args, b(mem))
					delete(m.zset, mem)
				}
				if err := db.Update(func(tx *Tx) error { _, err := tx.ZRem(b("z"), args...); return err }); err != nil {
					t.Fatal(err)
				}
			}
			mem := member()
			want, ok := m.zset[mem]
			var rank int
			var found bool
			err := db.View(func(tx *Tx) (err error) { rank, found, err = tx.ZRank(b("z"), b(mem), false); return err })
			if err != nil || found != ok || ok && rank != zrankOf(m.zset, mem) {
				t.Fatalf("ZRank %s = %d %v %v; want %d %v (score %v)", mem, rank, found, err, zrankOf(m.zset, mem), ok, want)
			}
		case 3:
			listOp(t, db, m, r, count, grow())
		}
	}
	checkModel(t, db, m)
}

func zrankOf(z map[string]float64, mem string) int {
	n := 0
	for k, s := range z {
		if s < z[mem] || s == z[mem] && k < mem {
			n++
		}
	}
	return n
}

func listOp(t *testing.T, db *DB, m *collModel, r *rand.Rand, count int, grow bool) {
	t.Helper()
	elem := func() string { return fmt.Sprintf("e%d", r.IntN(60)) }
	var err error
	op := r.IntN(7)
	if !grow && op < 3 {
		op = 3
	}
	switch op {
	case 0, 1:
		var args [][]byte
		for range count {
			e := elem()
			args = append(args, b(e))
			m.list = append([]string{e}, m.list...)
		}
		_, err = db.LPush(b("l"), args...)
	case 2:
		var args [][]byte
		for range count {
			e := elem()
			args = append(args, b(e))
			m.list = append(m.list, e)
		}
		_, err = db.RPush(b("l"), args...)
	case 3:
		k := min(count, len(m.list))
		var got [][]byte
		if r.IntN(2) == 0 {
			got, err = db.LPop(b("l"), count)
			for i, e := range m.list[:k] {
				if i >= len(got) || string(got[i]) != e {
					t.Fatalf("LPop %d = %q, want %q", count, got, m.list[:k])
				}
			}
			m.list = m.list[k:]
		} else {
			got, err = db.RPop(b("l"), count)
			for i := range k {
				if i >= len(got) || string(got[i]) != m.list[len(m.list)-1-i] {
					t.Fatalf("RPop %d = %q", count, got)
				}
			}
			m.list = m.list[:len(m.list)-k]
		}
	case 4:
		pivot, v, before := elem(), elem(), r.IntN(2) == 0
		err = db.Update(func(tx *Tx) error { _, err := tx.LInsert(b("l"), before, b(pivot), b(v)); return err })
		if i := slices.Index(m.list, pivot); i >= 0 {
			if !before {
				i++
			}
			m.list = slices.Insert(m.list, i, v)
		}
	case 5:
		v, n := elem(), r.IntN(5)-2
		err = db.Update(func(tx *Tx) error { _, err := tx.LRem(b("l"), n, b(v)); return err })
		m.list = lremModel(m.list, n, v)
	case 6:
		if len(m.list) > 0 {
			i, v := r.IntN(len(m.list)), elem()
			if err := db.Update(func(tx *Tx) error { return tx.LSet(b("l"), i, b(v)) }); err != nil {
				t.Fatal(err)
			}
			m.list[i] = v
			var got []byte
			err = db.View(func(tx *Tx) (err error) { got, err = tx.LIndex(b("l"), i); return err })
			if string(got) != v {
				t.Fatalf("LIndex %d = %q, want %q", i, got, v)
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func lremModel(l []string, n int, v string) []string {
	if n < 0 {
		slices.Reverse(l)
		l = lremModel(l, -n, v)
		slices.Reverse(l)
		return l
	}
	out := l[:0:0]
	removed := 0
	for _, e := range l {
		if e == v && (n == 0 || removed < n) {
			removed++
			continue
		}
		out = append(out, e)
	}
	return out
}

// checkModel compares every collection with the model.
func checkModel(t *testing.T, db *DB, m *collModel) {
	t.Helper()
	all, err := func() (all [][]byte, err error) {
		err = db.View(func(tx *Tx) error { all, err = tx.HGetAll(b("h")); return err })
		return all, err
	}()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i := 0; i+1 < len(all); i += 2 {
		got[string(all[i])] = string(all[i+1])
	}
	if !gomaps.Equal(got, m.hash) || len(all) != 2*len(m.hash) {
		t.Fatalf("hash: %d fields, want %d", len(all)/2, len(m.hash))
	}
	members, err := db.SMembers(b("s"))
	if err != nil {
		t.Fatal(err)
	}
	gotSet := slices.Sorted(func(yield func(string) bool) {
		for _, x := range members {
			yield(string(x))
		}
	})
	if want := slices.Sorted(gomaps.Keys(m.set)); !slices.Equal(gotSet, want) {
		t.Fatalf("set: %d members, want %d", len(gotSet), len(want))
	}
	zs, err := db.ZRange(b("z"), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.SortedFunc(gomaps.Keys(m.zset), func(a, c string) int {
		return cmp.Or(cmp.Compare(m.zset[a], m.zset[c]), cmp.Compare(a, c))
	})
	if len(zs) != len(want) {
		t.Fatalf("zset: %d members, want %d", len(zs), len(want))
	}
	for i, z := range zs {
		if string(z.Member) != want[i] || z.Score != m.zset[want[i]] {
			t.Fatalf("zset rank %d: %s %v, want %s %v", i, z.Member, z.Score, want[i], m.zset[want[i]])
		}
	}
	l, err := db.LRange(b("l"), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(l, m.list, func(a []byte, s string) bool { return string(a) == s }) {
		t.Fatalf("list: %d elements, want %d", len(l), len(m.list))
	}
}

func TestBigCollections_MatchAModelAcrossTheThresholdBothWaysAndAfterRecovery(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	m := newCollModel()
	r := rand.New(rand.NewPCG(3, 4))
	sawBig, sawSmallAgain := map[Kind]bool{}, map[Kind]bool{}
	for round := range 60 {
		growPct := 70
		if round/10%2 == 1 {
			growPct = 8
		}
		bigCollOps(t, db, m, r, 20, growPct)
		for _, k := range []string{"h", "s", "z", "l"} {
			e, ok := db.mem.get(nil, b(k))
			switch {
			case ok && e.big != nil:
				sawBig[e.kind] = true
			case ok && sawBig[e.kind]:
				sawSmallAgain[e.kind] = true
			}
		}
		if round%15 == 14 {
			if round == 29 {
				if _, err := db.Snapshot(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openT(t, dir, Options{})
			checkModel(t, db, m)
		}
	}
	db.Close()
	if len(sawBig) != 4 || len(sawSmallAgain) != 4 {
		t.Fatalf("big: %v, packed again: %v; want each kind both ways", sawBig, sawSmallAgain)
	}
}

// A reader of a big collection keeps the version it read: an HGETALL
// running while fields f0, f1, ... are added sees a prefix of them, never
// a torn tree.
func TestBigCollections_AReaderSeesOneVersionWhileWritesGoOn(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	defer db.Close()
	const n = 3000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			if _, err := db.HSet(b("h"), fmt.Appendf(nil, "f%d", i), b("v")); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for seen := 0; seen < n; {
		var all [][]byte
		if err := db.View(func(tx *Tx) (err error) { all, err = tx.HGetAll(b("h")); return err }); err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for i := 0; i < len(all); i += 2 {
			have[string(all[i])] = true
		}
		for i := range len(have) {
			if !have[fmt.Sprintf("f%d", i)] {
				t.Fatalf("a read of %d fields lacks f%d", len(have), i)
			}
		}
		seen = len(have)
	}
	wg.Wait()
}

// A snapshot taken while a big collection changes holds the version it
// froze.
func TestBigCollections_ASnapshotHoldsTheVersionItFroze(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	for i := range 1000 {
		db.RPush(b("l"), fmt.Appendf(nil, "%d", i))
	}
	view, release, err := db.freezeForCheckpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		db.LPop(b("l"), 1)
		db.RPush(b("l"), fmt.Appendf(nil, "x%d", i))
	}
	var got []byte
	view.each(func(key string, value []byte, kind Kind, _ int64) bool {
		if key == "l" {
			got = bytes.Clone(value)
		}
		return true
	})
	release()
	c, err := decodeColl(KindList, got)
	if err != nil || len(c.elems) != 1000 || string(c.elems[0]) != "0" || string(c.elems[999]) != "999" {
		t.Fatalf("the frozen list: %d elements, %v", len(c.elems), err)
	}
	db.Close()
}

// A write to a large collection costs O(log n), not a copy of the whole
// collection: measured as bytes allocated per command on collections of
// 20,000 entries (whose packed encodings are 200-400 KB each), with the
// packed form that each write decoded and re-encoded, every one of them
// allocated more than the collection's size.
func TestBigCollections_AWriteToALargeCollectionAllocatesLittle(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	defer db.Close()
	const n = 20000
	fillBigCollections(db, n)
	const limit = 32 << 10
	for name, op := range map[string]func(i int) error{
		"HSET": func(i int) error { _, err := db.HSet(b("h"), fmt.Appendf(nil, "new:%d", i), b("v")); return err },
		"SADD": func(i int) error { _, err := db.SAdd(b("s"), fmt.Appendf(nil, "new:%d", i)); return err },
		"ZADD": func(i int) error {
			_, err := db.ZAdd(b("z"), ZMember{Member: fmt.Appendf(nil, "new:%d", i), Score: 5})
			return err
		},
		"LPUSH":  func(i int) error { _, err := db.LPush(b("l"), b("x")); return err },
		"RPOP":   func(i int) error { _, err := db.RPop(b("l"), 1); return err },
		"LINDEX": func(i int) error { _, err := db.LRange(b("l"), n/2, n/2); return err },
		"ZRANK": func(i int) error {
			return db.View(func(tx *Tx) error { _, _, err := tx.ZRank(b("z"), b("member:00010000"), false); return err })
		},
	} {
		var before, after runtime.MemStats
		const ops = 200
		runtime.ReadMemStats(&before)
		for i := range ops {
			if err := op(i); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / ops; per > limit {
			t.Errorf("%s on a collection of %d entries allocates %d bytes per command, want at most %d", name, n, per, limit)
		}
	}
}

// The memory statistics count the big collections' trees, and give their
// estimate back when they go: live, and after a replay that changed them
// in place delta after delta.
func TestBigCollections_MemoryStatisticsCountTheTreesAndGiveThemBack(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	for i := range 300 {
		if _, err := db.HSet(b("h"), fmt.Appendf(nil, "f%d", i), b("v")); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		e, _ := db.mem.get(nil, b("h"))
		if e.big == nil {
			t.Fatalf("%s: the hash is not big", when)
		}
		if got, want := db.mem.arena.bigBytes.Load(), e.big.heapEstimate(); got != want {
			t.Fatalf("%s: big collections count %d bytes, want %d", when, got, want)
		}
		if db.Stats().MemoryBytes < e.big.heapEstimate() {
			t.Fatalf("%s: MemoryBytes %d leaves the tree out", when, db.Stats().MemoryBytes)
		}
	}
	check("live")
	db.Close()
	db = openT(t, dir, Options{})
	defer db.Close()
	check("after the replay")
	if err := db.Delete(b("h")); err != nil {
		t.Fatal(err)
	}
	if got := db.mem.arena.bigBytes.Load(); got != 0 {
		t.Fatalf("after the delete big collections count %d bytes", got)
	}
}

// fillBigCollections writes n entries ("member:%08d") into the hash h, the
// set s, the sorted set z and the list l: big collections of every kind.
func fillBigCollections(db *DB, n int) {
	var pairs, members [][]byte
	var zs []ZMember
	for i := range n {
		f := fmt.Appendf(nil, "member:%08d", i)
		pairs = append(pairs, f, b("value-value"))
		members = append(members, f)
		zs = append(zs, ZMember{Member: f, Score: float64(i)})
	}
	db.HSet(b("h"), pairs...)
	db.SAdd(b("s"), members...)
	db.ZAdd(b("z"), zs...)
	db.RPush(b("l"), members...)
}
