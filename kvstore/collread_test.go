package kvstore

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// A copy of a big collection shares its tree copy-on-write: a change to
// either key leaves the other as it was, and both are in the log as they
// were acknowledged, after a restart.
func TestCopyValue_ABigCollectionsCopyIsItsOwnAndSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	for i := range 500 {
		if _, err := db.HSet(b("h"), fmt.Appendf(nil, "f%03d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	expire := time.Now().Add(time.Hour)
	if err := db.Update(func(tx *Tx) error {
		if _, err := tx.Expire(b("h"), expire); err != nil {
			return err
		}
		if err := tx.CopyValue(b("h"), b("copy")); err != nil {
			return err
		}
		if err := tx.CopyValue(b("h"), b("moved")); err != nil {
			return err
		}
		_, err := tx.Delete(b("h"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.HSet(b("copy"), b("f001"), b("changed"), b("new"), b("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.HDel(b("moved"), b("f002")); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if err := db.View(func(tx *Tx) error {
			for _, c := range []struct{ key, field, want string }{
				{"copy", "f001", "changed"}, {"copy", "f002", "v2"}, {"copy", "new", "x"},
				{"moved", "f001", "v1"}, {"moved", "f002", ""}, {"moved", "new", ""},
			} {
				v, err := tx.HGet(b(c.key), b(c.field))
				if string(v) != c.want || (c.want == "") != errors.Is(err, ErrNotFound) {
					t.Errorf("%s: HGET %s %s = %q, %v; want %q", when, c.key, c.field, v, err, c.want)
				}
			}
			for key, want := range map[string]int{"copy": 501, "moved": 499, "h": 0} {
				if n, _ := tx.HLen(b(key)); n != want {
					t.Errorf("%s: HLEN %s = %d, want %d", when, key, n, want)
				}
				if at, ok := tx.ExpiresAt(b(key)); want > 0 && (!ok || at.UnixNano() != expire.UnixNano()) {
					t.Errorf("%s: %s expires at %v (%v), want %v", when, key, at, ok, expire)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	check("live")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, Options{})
	defer db.Close()
	check("after a restart")
	if err := db.Update(func(tx *Tx) error { return tx.CopyValue(b("nokey"), b("x")) }); !errors.Is(err, ErrNotFound) {
		t.Errorf("CopyValue of a missing key: %v, want ErrNotFound", err)
	}
}

// A scan cursor of a big collection is a place in the members' hash order:
// it stays valid across a restart and while the collection turns packed
// and big again, and every member present all along is returned.
func TestHScan_ACursorSurvivesARestartAndConversions(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	fields := func(prefix string, n int) [][]byte {
		var out [][]byte
		for i := range n {
			out = append(out, fmt.Appendf(nil, "%s%04d", prefix, i), b("v"))
		}
		return out
	}
	if _, err := db.HSet(b("h"), fields("keep", 30)...); err != nil {
		t.Fatal(err)
	}
	if _, err := db.HSet(b("h"), fields("tmp", 600)...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	cursor, calls := uint64(0), 0
	for {
		var page [][]byte
		if err := db.View(func(tx *Tx) (err error) {
			page, cursor, err = tx.HScan(b("h"), cursor, 25)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if calls == 0 && (cursor == 0 || len(page) > 2*30) {
			t.Fatalf("the first page of a big hash: %d fields, cursor %d", len(page)/2, cursor)
		}
		for i := 0; i < len(page); i += 2 {
			seen[string(page[i])] = true
		}
		calls++
		if cursor == 0 {
			break
		}
		switch calls {
		case 2:
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openT(t, dir, Options{})
		case 3: // packed
			var tmp [][]byte
			for i, f := range fields("tmp", 600) {
				if i%2 == 0 {
					tmp = append(tmp, f)
				}
			}
			if _, err := db.HDel(b("h"), tmp...); err != nil {
				t.Fatal(err)
			}
		case 4: // big again
			if _, err := db.HSet(b("h"), fields("new", 400)...); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer db.Close()
	for i := range 30 {
		if f := fmt.Sprintf("keep%04d", i); !seen[f] {
			t.Errorf("%s, present all along, was not returned", f)
		}
	}
}
