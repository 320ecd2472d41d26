package resp

import (
	"strconv"
)

// replyWriter appends RESP2 replies to a buffer that the connection writes
// out in one call per burst of commands. errs counts the error replies
// written, which is how a command reports that it failed (for metrics).
type replyWriter struct {
	buf  []byte
	errs int
	// stats, when set, counts each error reply written (INFO errorstats):
	// set on the writers whose bytes reach a client.
	stats *errorStats
}

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

func (w *replyWriter) null() { w.buf = append(w.buf, "$-1\r\n"...) }

func (w *replyWriter) nullArray() { w.buf = append(w.buf, "*-1\r\n"...) }

func (w *replyWriter) array(n int) { w.header('*', int64(n)) }

// bulkStrings writes an array of bulk strings.
func (w *replyWriter) bulkStrings(ss ...string) {
	w.array(len(ss))
	for _, s := range ss {
		w.bulkString(s)
	}
}
