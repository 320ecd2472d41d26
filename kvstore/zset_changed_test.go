package kvstore

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// ZAddChanged counts new members and changed scores member after member
// (a member twice in one call counts as Redis's ZADD CH does), and leaves
// a member given its own score alone: no write, the key's version stays;
// in the packed form and the big one.
func TestZAddChanged_CountsAddedAndChangedAndWritesNothingForAnUnchangedScore(t *testing.T) {
	for _, size := range []int{3, 300} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			db := openT(t, t.TempDir(), Options{})
			defer db.Close()
			for i := range size {
				db.ZAdd(b("z"), ZMember{Member: fmt.Appendf(nil, "m%d", i), Score: float64(i)})
			}
			version := func() (v uint64) {
				db.Update(func(tx *Tx) error { v = tx.Version(b("z")); return nil })
				return v
			}
			zadd := func(ms ...ZMember) (added, changed int) {
				t.Helper()
				err := db.Update(func(tx *Tx) (err error) { added, changed, err = tx.ZAddChanged(b("z"), ms...); return err })
				if err != nil {
					t.Fatal(err)
				}
				return added, changed
			}
			before := version()
			if a, c := zadd(ZMember{Member: b("m1"), Score: 1}, ZMember{Member: b("m0"), Score: math.Copysign(0, -1)}); a != 0 || c != 0 || version() != before {
				t.Fatalf("unchanged scores: added %d changed %d, version %d -> %d; want 0 0 and the same version", a, c, before, version())
			}
			if a, c := zadd(ZMember{Member: b("new"), Score: 7}, ZMember{Member: b("new"), Score: 8}, ZMember{Member: b("m2"), Score: -2}); a != 1 || c != 2 {
				t.Fatalf("added %d changed %d; want 1 2", a, c)
			}
			for m, want := range map[string]float64{"new": 8, "m2": -2, "m1": 1} {
				if got, ok, err := db.ZScore(b("z"), b(m)); !ok || err != nil || got != want {
					t.Fatalf("ZSCORE %s: %v %v %v; want %v", m, got, ok, err, want)
				}
			}
			if _, _, err := zaddErr(db, ZMember{Member: b("x"), Score: math.NaN()}); !errors.Is(err, ErrNaNScore) {
				t.Fatalf("a NaN score: %v; want ErrNaNScore", err)
			}
		})
	}
}

func zaddErr(db *DB, ms ...ZMember) (added, changed int, err error) {
	err = db.Update(func(tx *Tx) (err error) { added, changed, err = tx.ZAddChanged(b("z"), ms...); return err })
	return added, changed, err
}
