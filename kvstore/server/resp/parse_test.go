package resp

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
)

// readAll is what commandReader makes of in: the non-empty commands, and
// the error that ended them.
func readAll(in []byte) ([][][]byte, error) {
	r := newTestReader(in)
	var cmds [][][]byte
	for {
		args, err := r.readCommand()
		if err != nil {
			return cmds, err
		}
		if len(args) > 0 {
			cmds = append(cmds, cloneArgs(args))
		}
	}
}

func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = bytes.Clone(a)
	}
	return out
}

// parseInChunks is what bufferParser makes of in arriving chunk bytes at a
// time, parsing after every arrival as the event loop does.
func parseInChunks(in []byte, chunk int) ([][][]byte, error) {
	p := bufferParser{cr: newTestReader(nil)}
	var buf []byte
	rpos := 0
	var cmds [][][]byte
	for off := 0; off < len(in); {
		end := min(off+chunk, len(in))
		buf = append(buf, in[off:end]...)
		off = end
		for {
			n, args, err := p.parse(buf[rpos:])
			if err != nil {
				return cmds, err
			}
			if n == 0 {
				break
			}
			rpos += n
			if len(args) > 0 {
				cmds = append(cmds, cloneArgs(args))
			}
		}
		// Move the unparsed rest to the front, as the loop's read does.
		buf = append(buf[:0:0], buf[rpos:]...)
		rpos = 0
	}
	return cmds, nil
}

func equalCmds(a, b [][][]byte) bool {
	return slices.EqualFunc(a, b, func(x, y [][]byte) bool { return slices.EqualFunc(x, y, bytes.Equal) })
}

// FuzzBufferParser_AgreesWithCommandReader: the event loop's parser yields
// the same commands and the same protocol errors as a connection
// goroutine's reader, however the bytes are split into reads.
func FuzzBufferParser_AgreesWithCommandReader(f *testing.F) {
	for _, seed := range []string{
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*1\r\n$4\r\nPING\r\n",
		"PING\r\nset a \"b\\x41\\n\" 'c''d'\r\n",
		"*1\r\n$-1\r\n",
		"*-1\r\n*0\r\n\r\n\n",
		"*2\r\n$3\r\nGET\r\n$100\r\nshort\r\n",
		"*99999999999999999999\r\n",
		"*1\r\n+OK\r\n",
		"*1\r\n$4\r\nPINGxx",
		"*1\r\n$2000000\r\n",
		"*1\r\n$" + string(bytes.Repeat([]byte("1"), 70)) + "\r\n",
		"\"unterminated\r\n",
		string(bytes.Repeat([]byte("A"), 5000)) + "\r\n",
	} {
		f.Add([]byte(seed), uint8(1))
		f.Add([]byte(seed), uint8(7))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		want, werr := readAll(in)
		got, gerr := parseInChunks(in, int(chunk)+1)
		var wpe, gpe *ProtocolError
		switch {
		case errors.As(werr, &wpe):
			if !errors.As(gerr, &gpe) || gpe.Msg != wpe.Msg || !equalCmds(got, want) {
				t.Fatalf("reader: %q then %v; parser: %q then %v", want, werr, got, gerr)
			}
		case errors.Is(werr, io.EOF) || errors.Is(werr, io.ErrUnexpectedEOF):
			// The input ends inside a command (or between two): the parser
			// waits for more, or refuses the unterminated line at once.
			if !equalCmds(got, want) || (gerr != nil && !errors.As(gerr, &gpe)) {
				t.Fatalf("reader: %q then %v; parser: %q then %v", want, werr, got, gerr)
			}
		default:
			t.Fatalf("reader ended with %v", werr)
		}
	})
}
