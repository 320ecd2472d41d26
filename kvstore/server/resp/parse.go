package resp

import (
	"bytes"
	"fmt"
)

// bufferParser parses commands out of bytes already read (the event loop's
// input buffer) with the limits and error messages of commandReader: a
// header that breaks a limit is refused as soon as it has arrived, before
// the bulk it announces.
//
// Invariant: a command that is not whole yet is resumed where its parse
// stopped (state is kept as offsets from the command's first byte, which
// stay valid when the buffer moves), so a long command arriving in small
// reads costs linear, not quadratic, time.
type bufferParser struct {
	cr *commandReader // limits, and the inline splitter

	// The command in progress (n > 0): its announced argument count, where
	// the next header starts, the argument bytes so far and each argument's
	// offsets, all relative to the command's start.
	n, k  int64
	pos   int
	total int
	offs  []int // start, end pairs
}

// parse returns the length and arguments of the whole command at the
// front of buf; n == 0 and err == nil mean more bytes are needed. The
// arguments point into buf.
func (p *bufferParser) parse(buf []byte) (n int, args [][]byte, err error) {
	r := p.cr
	if p.n == 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			if len(buf) > r.maxInline+2 {
				return 0, nil, &ProtocolError{Msg: "too big inline request"}
			}
			return 0, nil, nil
		}
		if i+1 > r.maxInline+2 {
			return 0, nil, &ProtocolError{Msg: "too big inline request"}
		}
		line := trimCR(buf[:i])
		if len(line) == 0 || line[0] != '*' {
			args, err := r.inline(line)
			return i + 1, args, err
		}
		count, ok := parseInt(line[1:])
		if err := r.checkCount(count, ok); err != nil {
			return 0, nil, err
		}
		if count <= 0 {
			return i + 1, nil, nil
		}
		p.n, p.k, p.pos, p.total, p.offs = count, 0, i+1, 0, p.offs[:0]
	}
	for p.k < p.n {
		rest := buf[p.pos:]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			if len(rest) > 64+2 {
				p.reset()
				return 0, nil, &ProtocolError{Msg: "invalid bulk length"}
			}
			return 0, nil, nil
		}
		hdr := trimCR(rest[:j])
		if j+1 > 64+2 { // as commandReader's readLine(64)
			p.reset()
			return 0, nil, &ProtocolError{Msg: "invalid bulk length"}
		}
		if len(hdr) == 0 || hdr[0] != '$' {
			got := "nothing"
			if len(hdr) > 0 {
				got = fmt.Sprintf("'%c'", hdr[0])
			}
			p.reset()
			return 0, nil, &ProtocolError{Msg: "expected '$', got " + got}
		}
		size, ok := parseInt(hdr[1:])
		if err := r.checkBulk(size, ok); err != nil {
			p.reset()
			return 0, nil, err
		}
		if p.total+int(size) > r.maxRequest {
			p.reset()
			return 0, nil, &ProtocolError{Msg: "request too large"}
		}
		start := p.pos + j + 1
		if len(buf)-start < int(size)+2 {
			return 0, nil, nil // the header is checked again when more arrives
		}
		end := start + int(size)
		if buf[end] != '\r' || buf[end+1] != '\n' {
			p.reset()
			return 0, nil, &ProtocolError{Msg: "bulk string not followed by CRLF"}
		}
		p.offs = append(p.offs, start, end)
		p.total += int(size)
		p.pos = end + 2
		p.k++
	}
	r.args = r.args[:0]
	for i := 0; i < len(p.offs); i += 2 {
		a, b := p.offs[i], p.offs[i+1]
		r.args = append(r.args, buf[a:b:b])
	}
	n = p.pos
	p.reset()
	if cap(p.offs) > 2*maxKeepArgs {
		p.offs = nil
	}
	return n, r.args, nil
}

func (p *bufferParser) reset() { p.n, p.k, p.pos, p.total = 0, 0, 0, 0 }

// maxKeepArgs is the most argument slots a connection keeps between commands.
const maxKeepArgs = 4096

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}
