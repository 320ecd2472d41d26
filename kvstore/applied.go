package kvstore

import (
	"slices"
	"sync"
	"sync/atomic"
)

// appliedWatcher is a callback of OnApplied.
type appliedWatcher struct {
	fn func(keys [][]byte, flushed bool)
}

// OnApplied registers fn, called after each group of writes is visible to
// readers, with the keys the group changed (from every writer: any
// transaction, the expiry's deletes) and flushed when it also emptied the
// store (every key then changed). It runs on the goroutine that applied
// the group, before the next group is applied; the keys are valid during
// the call only, and fn must not block. A server's client-side caching
// invalidates on it: a reader that got a value before the call and
// registered for the key first is told of every later change. remove
// unregisters fn.
func (db *DB) OnApplied(fn func(keys [][]byte, flushed bool)) (remove func()) {
	return db.appliedWatchers.add(&db.expiredMu, &appliedWatcher{fn: fn})
}

// watcherList is a list of callbacks that the goroutine calling them
// reads without a lock (load); add and its remove replace the list whole,
// under mu.
type watcherList[T any] struct{ p atomic.Pointer[[]*T] }

// load is the list (nil: none).
func (l *watcherList[T]) load() []*T {
	if p := l.p.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *watcherList[T]) add(mu *sync.Mutex, w *T) (remove func()) {
	mu.Lock()
	defer mu.Unlock()
	l.p.Store(new(append(slices.Clone(l.load()), w)))
	return func() {
		mu.Lock()
		defer mu.Unlock()
		rest := slices.DeleteFunc(slices.Clone(l.load()), func(x *T) bool { return x == w })
		if len(rest) == 0 {
			l.p.Store(nil)
			return
		}
		l.p.Store(&rest)
	}
}

// tellApplied calls the watchers with a group's changed keys.
func (db *DB) tellApplied(ws []*appliedWatcher, muts []mutation) {
	keys := make([][]byte, 0, len(muts))
	flushed := false
	for i := range muts {
		if muts[i].flush {
			flushed = true
			continue
		}
		keys = append(keys, muts[i].key)
	}
	for _, w := range ws {
		w.fn(keys, flushed)
	}
}
