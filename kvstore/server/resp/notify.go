package resp

// Keyspace notifications, as Redis has them (notify-keyspace-events):
// each write publishes __keyspace@0__:<key> <event> and/or
// __keyevent@0__:<event> <key> through the server's pub/sub, for the
// classes the flags enable. Off by default.
//
// Invariants:
//   - a notification is published only for a write that happened: the
//     events of an atomic update (a command, EXEC's queued commands, a
//     script, the blocked clients a push served) are collected in the
//     update and published, in the order the writes were made, once it has
//     its place in the log; an update that fails publishes nothing;
//   - with notifications off, a write pays an atomic load per event it
//     could publish, nothing more.

import (
	"strings"
	"sync"

	"github.com/devkit-go/devkit/kvstore"
)

// notifyClass is a class of events: Redis's NOTIFY_* bits.
type notifyClass uint32

const (
	notifyKeyspace notifyClass = 1 << iota // K
	notifyKeyevent                         // E
	notifyGeneric                          // g
	notifyString                           // $
	notifyList                             // l
	notifySet                              // s
	notifyHash                             // h
	notifyZSet                             // z
	notifyExpired                          // x
	notifyEvicted                          // e
	notifyStream                           // t
	notifyKeyMiss                          // m
	notifyLoaded                           // (modules only)
	notifyModule                           // d
	notifyNew                              // n

	// notifyAll is A: every class but m and n, as in Redis 7.0.
	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZSet |
		notifyExpired | notifyEvicted | notifyStream | notifyModule
)

// notifyLetters are the flag letters in the order Redis prints them.
var notifyLetters = []struct {
	c byte
	f notifyClass
}{
	{'g', notifyGeneric}, {'$', notifyString}, {'l', notifyList}, {'s', notifySet}, {'h', notifyHash},
	{'z', notifyZSet}, {'x', notifyExpired}, {'e', notifyEvicted}, {'t', notifyStream}, {'d', notifyModule},
	{'n', notifyNew},
}

// parseNotifyFlags is Redis's keyspaceEventsStringToFlags: false for a
// letter it does not know.
func parseNotifyFlags(s string) (notifyClass, bool) {
	var f notifyClass
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 'A':
			f |= notifyAll
		case 'K':
			f |= notifyKeyspace
		case 'E':
			f |= notifyKeyevent
		case 'm':
			f |= notifyKeyMiss
		default:
			known := false
			for _, l := range notifyLetters {
				if l.c == c {
					f, known = f|l.f, true
				}
			}
			if !known {
				return 0, false
			}
		}
	}
	return f, true
}

// notifyFlagsString is Redis's keyspaceEventsFlagsToString (CONFIG GET).
func notifyFlagsString(f notifyClass) string {
	var b strings.Builder
	if f&notifyAll == notifyAll {
		b.WriteByte('A')
	} else {
		for _, l := range notifyLetters {
			if f&l.f != 0 {
				b.WriteByte(l.c)
			}
		}
	}
	for _, l := range []struct {
		c byte
		f notifyClass
	}{{'K', notifyKeyspace}, {'E', notifyKeyevent}, {'m', notifyKeyMiss}} {
		if f&l.f != 0 {
			b.WriteByte(l.c)
		}
	}
	return b.String()
}

// keyNote is one event of an update, published once the update is logged.
type keyNote struct {
	class notifyClass
	event string
	key   []byte
}

// notifying reports whether events of class are published now.
func (s *Server) notifying(class notifyClass) bool {
	f := notifyClass(s.notifyFlags.Load())
	return f&class != 0 && f&(notifyKeyspace|notifyKeyevent) != 0
}

// notify records event on key, of class, in tx's update (published when
// the update is logged); a no-op when the class is off.
func notify(tx txn, class notifyClass, event string, key []byte) {
	ut, ok := tx.(*updateTx)
	if !ok || ut.s == nil || !ut.s.notifying(class) {
		return
	}
	ut.notes = append(ut.notes, keyNote{class: class, event: event, key: append([]byte(nil), key...)})
}

// notifyGone records a "del" when the command left key missing (a
// collection whose last element it removed), as Redis does after the
// command's own event.
func notifyGone(tx txn, key []byte) {
	ut, ok := tx.(*updateTx)
	if !ok || ut.s == nil || !ut.s.notifying(notifyGeneric) {
		return
	}
	if tx.Kind(key) == kvstore.KindNone {
		notify(tx, notifyGeneric, "del", key)
	}
}

// notifyNewKey records a "new" when key does not exist yet (call it before
// the write that creates it).
func notifyNewKey(tx txn, key []byte) {
	ut, ok := tx.(*updateTx)
	if !ok || ut.s == nil || !ut.s.notifying(notifyNew) {
		return
	}
	if tx.Kind(key) == kvstore.KindNone {
		notify(tx, notifyNew, "new", key)
	}
}

// publishNotes publishes the events of an update that was logged.
func (s *Server) publishNotes(notes []keyNote) {
	if len(notes) == 0 {
		return
	}
	f := notifyClass(s.notifyFlags.Load())
	var ch []byte
	for _, n := range notes {
		if f&n.class == 0 {
			continue // turned off since
		}
		if f&notifyKeyspace != 0 {
			ch = append(append(ch[:0], "__keyspace@0__:"...), n.key...)
			s.pubsub.publish(psChannel, ch, []byte(n.event))
		}
		if f&notifyKeyevent != 0 {
			ch = append(append(ch[:0], "__keyevent@0__:"...), n.event...)
			s.pubsub.publish(psChannel, ch, n.key)
		}
	}
}

// notifyExpired publishes "expired" for keys the store's expiry deleted.
func (s *Server) notifyExpired(keys []string) {
	if !s.notifying(notifyExpired) {
		return
	}
	notes := make([]keyNote, len(keys))
	for i, k := range keys {
		notes[i] = keyNote{class: notifyExpired, event: "expired", key: []byte(k)}
	}
	s.publishNotes(notes)
}

// expiryWatcher is a store that tells which keys its expiry deleted
// (kvstore.DB.OnExpired).
type expiryWatcher interface {
	OnExpired(fn func(keys []string)) (remove func())
}

// notifyConfig is the CONFIG SET/GET of notify-keyspace-events.
type notifyConfig struct {
	once   sync.Once
	remove func() // the store's expiry callback, registered at the first CONFIG SET
}

// configSetNotify handles CONFIG SET notify-keyspace-events flags; false
// when the pairs name other settings.
func (s *Server) configSetNotify(c *call) bool {
	if len(c.args) != 4 || !strings.EqualFold(string(c.args[2]), "notify-keyspace-events") {
		return false
	}
	f, ok := parseNotifyFlags(string(c.args[3]))
	if !ok {
		c.w.error("ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
		return true
	}
	if f != 0 {
		s.notifyCfg.once.Do(func() {
			if w, ok := s.store.(expiryWatcher); ok {
				s.notifyCfg.remove = w.OnExpired(s.notifyExpired)
			}
		})
	}
	s.notifyFlags.Store(uint32(f))
	c.w.ok()
	return true
}

// notifyCount records event on key when a command changed n > 0 elements
// without error, and passes n and err on.
func notifyCount(tx txn, class notifyClass, event string, key []byte, n int, err error) (int, error) {
	if err == nil && n > 0 {
		notify(tx, class, event, key)
	}
	return n, err
}

// notifyRemoved is notifyCount for a removal: a "del" follows when the
// collection is left empty (gone).
func notifyRemoved(tx txn, class notifyClass, event string, key []byte, n int, err error) (int, error) {
	if err == nil && n > 0 {
		notifyRemoval(tx, class, event, key)
	}
	return n, err
}

// notifyRemoval records event on key, then a "del" if key is gone.
func notifyRemoval(tx txn, class notifyClass, event string, key []byte) {
	notify(tx, class, event, key)
	notifyGone(tx, key)
}
