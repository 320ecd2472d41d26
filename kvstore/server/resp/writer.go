package resp

import (
	"bufio"
	"strconv"
)

// replyWriter writes RESP2 replies into a buffered writer.
type replyWriter struct {
	w       *bufio.Writer
	scratch []byte
}

func (w *replyWriter) simple(s string) {
	w.w.WriteByte('+')
	w.w.WriteString(s)
	w.w.WriteString("\r\n")
}

// error writes an error reply; msg starts with its code (ERR, WRONGTYPE...).
// CR and LF would break the framing, so they become spaces.
func (w *replyWriter) error(msg string) {
	w.w.WriteByte('-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		w.w.WriteByte(c)
	}
	w.w.WriteString("\r\n")
}

func (w *replyWriter) header(kind byte, n int64) {
	w.scratch = append(w.scratch[:0], kind)
	w.scratch = strconv.AppendInt(w.scratch, n, 10)
	w.scratch = append(w.scratch, '\r', '\n')
	w.w.Write(w.scratch)
}

func (w *replyWriter) integer(n int64) { w.header(':', n) }

func (w *replyWriter) bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.w.Write(b)
	w.w.WriteString("\r\n")
}

func (w *replyWriter) bulkString(s string) {
	w.header('$', int64(len(s)))
	w.w.WriteString(s)
	w.w.WriteString("\r\n")
}

func (w *replyWriter) null() { w.w.WriteString("$-1\r\n") }

func (w *replyWriter) array(n int) { w.header('*', int64(n)) }
