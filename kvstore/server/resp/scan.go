package resp

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/devkit-go/devkit/kvstore"
)

// Redis clients parse SCAN cursors as unsigned integers, while the engine
// pages by key. The cursor table maps the numbers we hand out to the key a
// scan stopped after; the oldest entries are forgotten first, and a
// forgotten cursor is an error rather than a silent restart.

type cursorTable struct {
	mu    sync.Mutex
	next  uint64
	after map[uint64][]byte
	order []uint64 // ring of live cursors, oldest at head
	head  int
	max   int
}

func newCursorTable(max int) *cursorTable {
	return &cursorTable{after: make(map[uint64][]byte, max), order: make([]uint64, 0, max), max: max}
}

// put remembers key and returns its cursor (never 0).
func (t *cursorTable) put(key []byte) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	id := t.next
	if len(t.order) < t.max {
		t.order = append(t.order, id)
	} else {
		delete(t.after, t.order[t.head])
		t.order[t.head] = id
		t.head = (t.head + 1) % t.max
	}
	t.after[id] = key
	return id
}

// get returns the key of a cursor.
func (t *cursorTable) get(id uint64) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.after[id]
	return k, ok
}

// scanPattern is what a MATCH pattern selects: keys with a prefix, or one
// exact key.
type scanPattern struct {
	prefix []byte
	exact  bool
}

// parseMatch accepts the patterns the engine can answer by prefix: "*",
// "prefix*" and literal keys, with backslash escapes for glob characters.
func parseMatch(p []byte) (scanPattern, error) {
	var lit []byte
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 < len(p) {
				i++
			}
			lit = append(lit, p[i])
		case '*':
			if i == len(p)-1 {
				return scanPattern{prefix: lit}, nil
			}
			return scanPattern{}, errBadPattern(p)
		case '?', '[':
			return scanPattern{}, errBadPattern(p)
		default:
			lit = append(lit, c)
		}
	}
	return scanPattern{prefix: lit, exact: true}, nil
}

func errBadPattern(p []byte) error {
	return fmt.Errorf("ERR MATCH supports only prefix patterns such as 'user:*' (a single trailing '*'); got '%s'", printable(p))
}

// scan answers SCAN cursor [MATCH pattern] [COUNT n] [TYPE string].
func (s *Server) scan(w *replyWriter, args [][]byte) bool {
	if len(args) < 2 {
		w.error("ERR wrong number of arguments for 'scan' command")
		return true
	}
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		w.error("ERR invalid cursor")
		return true
	}
	pat := scanPattern{}
	count := 10
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			w.error("ERR syntax error")
			return true
		}
		switch strings.ToUpper(string(args[i])) {
		case "MATCH":
			if pat, err = parseMatch(args[i+1]); err != nil {
				w.error(err.Error())
				return true
			}
		case "COUNT":
			n, ok := parseInt(args[i+1])
			if !ok || n < 1 {
				w.error("ERR value is not an integer or out of range")
				return true
			}
			count = int(min(n, int64(s.opts.MaxScanCount)))
		case "TYPE":
			if !strings.EqualFold(string(args[i+1]), "string") {
				// Every key holds a string: another type matches nothing.
				w.array(2)
				w.bulkString("0")
				w.array(0)
				return false
			}
		default:
			w.error("ERR syntax error")
			return true
		}
	}
	var after []byte
	if cursor != 0 {
		var ok bool
		if after, ok = s.cursors.get(cursor); !ok {
			w.error("ERR invalid cursor: it was never issued or has expired (restart the scan from 0)")
			return true
		}
	}
	if pat.exact {
		// A literal pattern names one key.
		found, err := s.store.Has(pat.prefix)
		if err != nil {
			return engineError(w, err)
		}
		w.array(2)
		w.bulkString("0")
		if found && cursor == 0 {
			w.array(1)
			w.bulk(pat.prefix)
		} else {
			w.array(0)
		}
		return false
	}
	page, err := s.store.Scan(kvstore.ScanOptions{Prefix: pat.prefix, After: after, Limit: count})
	if err != nil {
		return engineError(w, err)
	}
	next := uint64(0)
	if page.Next != nil {
		next = s.cursors.put(page.Next)
	}
	w.array(2)
	w.bulkString(strconv.FormatUint(next, 10))
	w.array(len(page.Entries))
	for _, e := range page.Entries {
		w.bulk(e.Key)
	}
	return false
}
