//go:build unix

package resp_test

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// A reader slower than the server, with replies many times the socket
// buffers, gets every byte in order: each write that finds the socket full
// (EAGAIN) resumes where it stopped once the socket drains, and the other
// connections are served meanwhile. (With the loop's sockets registered
// for readability only, the writer never learns that the socket drained:
// the reply stalls and the reader times out.)
func TestServer_ASlowReaderGetsEveryByteOfRepliesLargerThanTheSocketBuffers(t *testing.T) {
	db := servertest.OpenDB(t)
	value := make([]byte, 256<<10)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	if err := db.Set([]byte("big"), value); err != nil {
		t.Fatal(err)
	}
	addr := start(t, db, resp.Options{})
	// A small receive buffer, set before connecting so that the window
	// is small from the first segment (shrunk later, the kernel drops what
	// is in flight and backs off retransmitting for seconds).
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<10) }); cerr != nil {
			return cerr
		}
		return err
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	slow := &raw{t: t, Conn: conn, r: bufio.NewReader(conn)}
	const gets = 24 // 6 MiB of replies
	slow.send(strings.Repeat("GET big\r\n", gets) + "PING\r\n")
	want := []byte("$" + strconv.Itoa(len(value)) + "\r\n" + string(value) + "\r\n")
	other := dialRaw(t, addr)
	buf := make([]byte, 16<<10)
	var got []byte
	for i := 0; len(got) < gets*len(want); i++ {
		n, err := slow.r.Read(buf[:min(len(buf), gets*len(want)-len(got))])
		if err != nil {
			t.Fatalf("after %d of %d bytes: %v", len(got), gets*len(want), err)
		}
		got = append(got, buf[:n]...)
		if i%64 == 0 {
			// Served while the slow reader's replies wait for room.
			other.send("PING\r\n")
			if l := other.line(); l != "+PONG\r\n" {
				t.Fatalf("the other connection got %q", l)
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	for i := range gets {
		if reply := got[i*len(want) : (i+1)*len(want)]; !bytes.Equal(reply, want) {
			t.Fatalf("reply %d differs from the value (first bytes %q)", i, reply[:min(40, len(reply))])
		}
	}
	if l := slow.line(); l != "+PONG\r\n" {
		t.Fatalf("after the replies: %q", l)
	}
}
