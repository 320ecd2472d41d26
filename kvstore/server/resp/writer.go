package resp

import (
	"strconv"
	"strings"
)

// replyWriter appends replies to a buffer that the connection writes out in
// one call per burst of commands. errs counts the error replies written,
// which is how a command reports that it failed (for metrics).
//
// It speaks RESP2 unless resp3 is set (the connection's HELLO 3, or a
// script's redis.setresp(3) for its redis.call replies): then null, the
// aggregate types (map, set, push), double, boolean and verbatim strings
// are written as RESP3 has them, and as Redis 7.0 writes them to a RESP2
// client otherwise (a map as a flat array of 2n, a set as an array, a
// double as a bulk string, a boolean as 1 or 0, a verbatim string as a bulk
// string).
type replyWriter struct {
	buf  []byte
	errs int
	// stats, when set, counts each error reply written (INFO errorstats):
	// set on the writers whose bytes reach a client.
	stats *errorStats
	resp3 bool
}

// crlfToSpace keeps a text on one line of a reply (CR and LF become spaces).
var crlfToSpace = strings.NewReplacer("\r", " ", "\n", " ")

func (w *replyWriter) simple(s string) {
	w.buf = append(w.buf, '+')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// ok is the +OK reply, the most frequent one.
func (w *replyWriter) ok() { w.buf = append(w.buf, "+OK\r\n"...) }

// error writes an error reply; msg starts with its code (ERR, WRONGTYPE...).
// CR and LF would break the framing, so they become spaces.
func (w *replyWriter) error(msg string) { w.errorOnce(msg, false) }

// errorOnce is error for a reply that may have been counted in errorstats
// already, where it was made (counted: a script passing on its
// redis.call's error): Redis counts each error once.
func (w *replyWriter) errorOnce(msg string, counted bool) {
	if w.stats != nil && !counted {
		w.stats.record(msg)
	}
	w.errs++
	w.buf = append(w.buf, '-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		w.buf = append(w.buf, c)
	}
	w.buf = append(w.buf, '\r', '\n')
}

func (w *replyWriter) header(kind byte, n int64) {
	w.buf = append(w.buf, kind)
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, '\r', '\n')
}

func (w *replyWriter) integer(n int64) { w.header(':', n) }

func (w *replyWriter) bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.buf = append(w.buf, b...)
	w.buf = append(w.buf, '\r', '\n')
}

func (w *replyWriter) bulkString(s string) {
	w.header('$', int64(len(s)))
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// null is a missing value: RESP2's null bulk string, RESP3's null.
func (w *replyWriter) null() {
	if w.resp3 {
		w.buf = append(w.buf, "_\r\n"...)
		return
	}
	w.buf = append(w.buf, "$-1\r\n"...)
}

// nullArray is RESP2's null array (a timed-out blocking pop, an aborted
// EXEC); RESP3 has one null.
func (w *replyWriter) nullArray() {
	if w.resp3 {
		w.buf = append(w.buf, "_\r\n"...)
		return
	}
	w.buf = append(w.buf, "*-1\r\n"...)
}

func (w *replyWriter) array(n int) { w.header('*', int64(n)) }

// mapLen starts a map of n pairs (RESP2: an array of 2n).
func (w *replyWriter) mapLen(n int) {
	if w.resp3 {
		w.header('%', int64(n))
		return
	}
	w.header('*', 2*int64(n))
}

// setLen starts a set of n members (RESP2: an array).
func (w *replyWriter) setLen(n int) {
	if w.resp3 {
		w.header('~', int64(n))
		return
	}
	w.header('*', int64(n))
}

// pushLen starts an out-of-band message of n elements (a published
// message; RESP2: an array).
func (w *replyWriter) pushLen(n int) {
	if w.resp3 {
		w.header('>', int64(n))
		return
	}
	w.header('*', int64(n))
}

// pairsLen starts n pairs as Redis 7.0 sends a command's pairs (ZRANGE
// WITHSCORES, HRANDFIELD WITHVALUES...): RESP3 an array of n two-element
// arrays, each begun by pair; RESP2 one flat array of 2n.
func (w *replyWriter) pairsLen(n int) {
	if w.resp3 {
		w.header('*', int64(n))
		return
	}
	w.header('*', 2*int64(n))
}

// pair begins one pair of pairsLen (RESP2: nothing).
func (w *replyWriter) pair() {
	if w.resp3 {
		w.buf = append(w.buf, "*2\r\n"...)
	}
}

// boolean is RESP3's boolean (RESP2: the integer 1 or 0).
func (w *replyWriter) boolean(b bool) {
	switch {
	case w.resp3 && b:
		w.buf = append(w.buf, "#t\r\n"...)
	case w.resp3:
		w.buf = append(w.buf, "#f\r\n"...)
	case b:
		w.buf = append(w.buf, ":1\r\n"...)
	default:
		w.buf = append(w.buf, ":0\r\n"...)
	}
}

// verbatim is a text for a person (INFO, CLIENT LIST): RESP3's verbatim
// string of format "txt", RESP2's bulk string.
func (w *replyWriter) verbatim(s string) { w.verbatimAs("txt", s) }

// verbatimAs is verbatim of a given format (three characters; shorter is
// padded with spaces, as Redis does).
func (w *replyWriter) verbatimAs(format, s string) {
	if !w.resp3 {
		w.bulkString(s)
		return
	}
	w.header('=', int64(len(s))+4)
	for i := range 3 {
		c := byte(' ')
		if i < len(format) {
			c = format[i]
		}
		w.buf = append(w.buf, c)
	}
	w.buf = append(w.buf, ':')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// bulkStrings writes an array of bulk strings.
func (w *replyWriter) bulkStrings(ss ...string) {
	w.array(len(ss))
	for _, s := range ss {
		w.bulkString(s)
	}
}
