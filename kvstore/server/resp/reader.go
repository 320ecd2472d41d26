package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ProtocolError is a request that breaks RESP framing. The connection cannot
// be resynchronised after one, so it is answered and then closed, as Redis does.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

// commandReader reads commands — RESP arrays of bulk strings, or inline
// commands (words on a line) as typed into telnet — within size limits.
// The returned arguments are valid until the next read.
type commandReader struct {
	br         *bufio.Reader
	maxBulk    int
	maxArgs    int
	maxInline  int
	maxRequest int // bound on the bytes of all arguments of one command
	// preAuth: the connection has not authenticated (--requirepass), so
	// Redis's tighter bounds hold (preAuthMaxArgs, preAuthMaxBulk): a client
	// without the password cannot make the server hold large requests.
	preAuth bool

	buf  []byte   // the bytes of every argument of the current command
	ends []int    // where each argument ends in buf
	args [][]byte // slices of buf
	line []byte   // an inline line longer than the bufio buffer
}

// readCommand returns the next command's arguments; an empty command (a
// blank line, *0) yields none.
func (r *commandReader) readCommand() ([][]byte, error) {
	// One large command must not pin its memory for the connection's life.
	if cap(r.buf) > keepBufBytes {
		r.buf = nil
	}
	if cap(r.line) > keepBufBytes {
		r.line = nil
	}
	line, err := r.readLine(r.maxInline)
	if err != nil {
		return nil, err
	}
	if len(line) > 0 && line[0] == '*' {
		return r.readArray(line[1:])
	}
	return r.inline(line)
}

// readLine returns the next line without its CRLF (or bare LF).
func (r *commandReader) readLine(max int) ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		r.line = append(r.line[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(r.line) > max {
				return nil, &ProtocolError{Msg: "too big inline request"}
			}
			line, err = r.br.ReadSlice('\n')
			r.line = append(r.line, line...)
		}
		line = r.line
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(line) > max+2 {
		return nil, &ProtocolError{Msg: "too big inline request"}
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func (r *commandReader) readArray(count []byte) ([][]byte, error) {
	n, ok := parseInt(count)
	if err := r.checkCount(n, ok); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	r.buf, r.ends = r.buf[:0], r.ends[:0]
	for range n {
		hdr, err := r.readLine(64)
		if err != nil {
			var pe *ProtocolError
			if errors.As(err, &pe) {
				return nil, &ProtocolError{Msg: "invalid bulk length"}
			}
			return nil, err
		}
		if len(hdr) == 0 || hdr[0] != '$' {
			got := "nothing"
			if len(hdr) > 0 {
				got = fmt.Sprintf("'%c'", hdr[0])
			}
			return nil, &ProtocolError{Msg: "expected '$', got " + got}
		}
		size, ok := parseInt(hdr[1:])
		if err := r.checkBulk(size, ok); err != nil {
			return nil, err
		}
		if len(r.buf)+int(size) > r.maxRequest {
			return nil, &ProtocolError{Msg: "request too large"}
		}
		// Memory follows the bytes that arrive, not the length announced:
		// a client that declares large bulks and sends nothing costs little.
		for remaining := int(size) + 2; remaining > 0; {
			chunk := min(remaining, readChunk)
			start := len(r.buf)
			r.buf = grow(r.buf, chunk)
			if _, err := io.ReadFull(r.br, r.buf[start:]); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return nil, err
			}
			remaining -= chunk
		}
		if !bytes.HasSuffix(r.buf, []byte("\r\n")) {
			return nil, &ProtocolError{Msg: "bulk string not followed by CRLF"}
		}
		r.buf = r.buf[:len(r.buf)-2]
		r.ends = append(r.ends, len(r.buf))
	}
	return r.split(), nil
}

// Redis's bounds on a request before AUTH (processMultibulkBuffer).
const (
	preAuthMaxArgs = 10
	preAuthMaxBulk = 16384
)

// checkCount checks a multibulk length against the limits in force.
func (r *commandReader) checkCount(n int64, ok bool) error {
	switch {
	case !ok || n > int64(r.maxArgs):
		return &ProtocolError{Msg: "invalid multibulk length"}
	case r.preAuth && n > preAuthMaxArgs:
		return &ProtocolError{Msg: "unauthenticated multibulk length"}
	}
	return nil
}

// checkBulk checks a bulk length against the limits in force.
func (r *commandReader) checkBulk(size int64, ok bool) error {
	switch {
	case !ok || size < 0 || size > int64(r.maxBulk):
		return &ProtocolError{Msg: "invalid bulk length"}
	case r.preAuth && size > preAuthMaxBulk:
		return &ProtocolError{Msg: "unauthenticated bulk length"}
	}
	return nil
}

const (
	// readChunk is how much of a bulk string is read (and allocated) at a time.
	readChunk = 64 << 10
	// keepBufBytes is the largest argument buffer a connection keeps between commands.
	keepBufBytes = 1 << 20
)

// grow extends b by n bytes, reallocating when needed.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), max(2*cap(b), len(b)+n))
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// split cuts buf into the arguments recorded in ends.
func (r *commandReader) split() [][]byte {
	r.args = r.args[:0]
	start := 0
	for _, end := range r.ends {
		r.args = append(r.args, r.buf[start:end:end])
		start = end
	}
	return r.args
}

// inline splits a line into words; double or single quotes group words,
// and double-quoted words take \n, \r, \t, \" and \xHH escapes, as in redis-cli.
func (r *commandReader) inline(line []byte) ([][]byte, error) {
	r.buf, r.ends = r.buf[:0], r.ends[:0]
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		if len(r.ends) == r.maxArgs {
			return nil, &ProtocolError{Msg: "invalid multibulk length"}
		}
		switch q := line[i]; q {
		case '"', '\'':
			i++
			closed := false
			for i < len(line) {
				c := line[i]
				i++
				if c == q {
					closed = true
					break
				}
				if c == '\\' && q == '"' && i < len(line) {
					c, i = unescape(line, i)
				} else if c == '\\' && q == '\'' && i < len(line) && line[i] == '\'' {
					c, i = '\'', i+1
				}
				r.buf = append(r.buf, c)
			}
			if !closed || (i < len(line) && line[i] != ' ' && line[i] != '\t') {
				return nil, &ProtocolError{Msg: "unbalanced quotes in request"}
			}
		default:
			for i < len(line) && line[i] != ' ' && line[i] != '\t' {
				r.buf = append(r.buf, line[i])
				i++
			}
		}
		r.ends = append(r.ends, len(r.buf))
	}
	return r.split(), nil
}

// unescape decodes the escape after a backslash at line[i-1].
func unescape(line []byte, i int) (byte, int) {
	switch c := line[i]; c {
	case 'n':
		return '\n', i + 1
	case 'r':
		return '\r', i + 1
	case 't':
		return '\t', i + 1
	case 'b':
		return '\b', i + 1
	case 'a':
		return '\a', i + 1
	case 'x':
		if i+2 < len(line) {
			if h, ok := hexByte(line[i+1], line[i+2]); ok {
				return h, i + 3
			}
		}
		return c, i + 1
	default:
		return c, i + 1
	}
}

func hexByte(a, b byte) (byte, bool) {
	hi, ok1 := hexDigit(a)
	lo, ok2 := hexDigit(b)
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// parseInt parses a decimal integer with an optional minus sign.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// hasWholeCommand reports whether the bytes already buffered hold at least
// one complete command, so that reading it will not wait for the network.
func (r *commandReader) hasWholeCommand() bool {
	buf, _ := r.br.Peek(r.br.Buffered())
	line, rest, ok := bytes.Cut(buf, []byte("\n"))
	if !ok {
		return false
	}
	if len(line) == 0 || line[0] != '*' {
		return true // an inline command: one line
	}
	n, ok := parseInt(bytes.TrimSuffix(line[1:], []byte("\r")))
	if !ok {
		return true // malformed: reading it fails at once
	}
	for range max(n, 0) {
		hdr, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			return false
		}
		size, ok := parseInt(bytes.TrimSuffix(bytes.TrimPrefix(hdr, []byte("$")), []byte("\r")))
		if !ok || size < 0 {
			return true // malformed: reading it fails at once
		}
		if int64(len(after)) < size+2 {
			return false
		}
		rest = after[size+2:]
	}
	return true
}
