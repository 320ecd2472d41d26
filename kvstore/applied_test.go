package kvstore

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// OnApplied tells of every changed key once its change is visible: plain
// writes, a transaction's keys, deletes, collection writes, the expiry's
// deletes, and a flush (flushed, every key). The callback reads each key
// back and must see the change already.
func TestOnApplied_TellsEveryChangedKeyOnceVisible(t *testing.T) {
	for _, memoryOnly := range []bool{false, true} {
		var db *DB
		if memoryOnly {
			db = openMemoryOnlyT(t, Options{ExpirySweepInterval: time.Millisecond})
		} else {
			db = openT(t, t.TempDir(), Options{ExpirySweepInterval: time.Millisecond})
		}
		var mu sync.Mutex
		var told []string
		flushes := 0
		remove := db.OnApplied(func(keys [][]byte, flushed bool) {
			mu.Lock()
			defer mu.Unlock()
			if flushed {
				flushes++
			}
			for _, k := range keys {
				v, err := db.Get(k)
				told = append(told, string(k)+"="+string(v)+errText(err))
			}
		})
		db.Set(b("a"), b("1"))
		db.Update(func(tx *Tx) error {
			tx.Set(b("b"), b("2"))
			tx.Set(b("c"), b("3"))
			return nil
		})
		db.Delete(b("a"))
		db.HSet(b("h"), b("f"), b("v"))
		db.SetWithTTL(b("short"), b("x"), time.Now().Add(20*time.Millisecond))
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			gone := slices.Contains(told, "short=<missing>")
			mu.Unlock()
			if gone || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		db.FlushAll()
		remove()
		db.Set(b("after"), b("remove"))
		mu.Lock()
		want := []string{"a=1", "b=2", "c=3", "a=<missing>", "h=<wrongtype>", "short=x", "short=<missing>"}
		if !slices.Equal(told, want) || flushes != 1 {
			t.Errorf("memoryOnly=%v: told %q, %d flushes; want %q and 1", memoryOnly, told, flushes, want)
		}
		mu.Unlock()
		db.Close()
	}
}

func errText(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotFound):
		return "<missing>"
	case errors.Is(err, ErrWrongType):
		return "<wrongtype>"
	}
	return "<" + err.Error() + ">"
}
