package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func newTestReader(b []byte) *commandReader {
	return &commandReader{
		br:         bufio.NewReaderSize(bytes.NewReader(b), 16<<10),
		maxBulk:    1 << 20,
		maxArgs:    1024,
		maxInline:  4 << 10,
		maxRequest: 4 << 20,
	}
}

// FuzzReadCommand feeds arbitrary bytes to the command reader: it must
// never panic, and when hasWholeCommand says a command is buffered, reading
// it must not need more bytes than those.
func FuzzReadCommand(f *testing.F) {
	for _, seed := range []string{
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n",
		"PING\r\n",
		"set a \"b\\x41\\n\" 'c''d'\r\n",
		"*1\r\n$-1\r\n",
		"*-1\r\n",
		"*2\r\n$3\r\nGET\r\n$100\r\nshort\r\n",
		"*99999999999999999999\r\n",
		"*1\r\n+OK\r\n",
		"\r\n\n",
		"\"unterminated\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := newTestReader(in)
		for range 64 {
			// Fill the buffer as a network read would, then ask.
			r.br.Peek(1)
			whole := r.hasWholeCommand()
			_, err := r.readCommand()
			if whole && (errors.Is(err, io.ErrUnexpectedEOF) || (errors.Is(err, io.EOF) && r.br.Buffered() > 0)) {
				t.Fatalf("hasWholeCommand was true but reading needed more bytes: %v", err)
			}
			if err != nil {
				return
			}
		}
	})
}

func TestReadCommand_ArrayInlineAndEmpty(t *testing.T) {
	r := newTestReader([]byte("*2\r\n$4\r\nECHO\r\n$5\r\nhi\r\nx\r\n\r\nset k \"a b\"\n*0\r\n"))
	args, err := r.readCommand()
	if err != nil || len(args) != 2 || string(args[1]) != "hi\r\nx" {
		t.Fatalf("%q %v", args, err)
	}
	if args, err = r.readCommand(); err != nil || len(args) != 0 {
		t.Fatalf("blank line: %q %v", args, err)
	}
	if args, err = r.readCommand(); err != nil || len(args) != 3 || string(args[2]) != "a b" {
		t.Fatalf("inline: %q %v", args, err)
	}
	if args, err = r.readCommand(); err != nil || len(args) != 0 {
		t.Fatalf("*0: %q %v", args, err)
	}
	if _, err = r.readCommand(); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
}
