package resp_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// quietConn is a connection whose round trips allocate nothing on the
// client's side, so that the process's allocations are the server's.
type quietConn struct {
	t    *testing.T
	conn net.Conn
	buf  []byte
}

func dialQuiet(t *testing.T) *quietConn {
	conn, err := net.Dial("tcp", start(t, servertest.OpenDB(t), resp.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &quietConn{t: t, conn: conn, buf: make([]byte, 64<<10)}
}

// roundTrip sends req and fails unless the reply is want.
func (c *quietConn) roundTrip(req, want []byte) {
	if _, err := c.conn.Write(req); err != nil {
		c.t.Fatal(err)
	}
	if _, err := io.ReadFull(c.conn, c.buf[:len(want)]); err != nil {
		c.t.Fatal(err)
	}
	if !bytes.Equal(c.buf[:len(want)], want) {
		c.t.Fatalf("reply %q, want %q", c.buf[:len(want)], want)
	}
}

// reply sends req and returns its reply of n bytes (valid until the next
// round trip).
func (c *quietConn) reply(req []byte, n int) []byte {
	if _, err := c.conn.Write(req); err != nil {
		c.t.Fatal(err)
	}
	if _, err := io.ReadFull(c.conn, c.buf[:n]); err != nil {
		c.t.Fatal(err)
	}
	return c.buf[:n]
}

// allocsPerCommand is the process's allocations per round trip of req,
// whose reply is want.
func (c *quietConn) allocsPerCommand(req, want []byte) uint64 {
	c.roundTrip(req, want) // warm up (buffers grow to the reply once)
	return c.allocsPerReply(req, len(want))
}

// allocsPerReply is the process's allocations per round trip of req, whose
// reply is n bytes.
func (c *quietConn) allocsPerReply(req []byte, n int) uint64 {
	const runs = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		c.reply(req, n)
	}
	runtime.ReadMemStats(&after)
	return (after.Mallocs - before.Mallocs) / runs
}

// command is a RESP request of args.
func command(args ...string) []byte {
	req := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		req = fmt.Appendf(req, "$%d\r\n%s\r\n", len(a), a)
	}
	return req
}

// TestLRange_RepliesWithoutCopyingElements: LRANGE writes each element of
// the list straight into its reply, packed or big, instead of copying each
// first (redis-benchmark's LRANGE_100 row paid an allocation per element).
func TestLRange_RepliesWithoutCopyingElements(t *testing.T) {
	c := dialQuiet(t)
	packedAndBig(t, 100, 1000, func(t *testing.T, tc sizeCase) {
		key := "list-" + tc.name
		push := []string{"RPUSH", key}
		for i := range tc.size {
			push = append(push, fmt.Sprintf("e%04d", i))
		}
		c.roundTrip(command(push...), fmt.Appendf(nil, ":%d\r\n", tc.size))
		want := []byte("*100\r\n")
		for i := range 100 {
			want = fmt.Appendf(want, "$5\r\ne%04d\r\n", i)
		}
		// Before: 100 and more (one copy per element).
		if per := c.allocsPerCommand(command("LRANGE", key, "0", "99"), want); per > 20 {
			t.Errorf("LRANGE of 100 elements of a %s list: %d allocations per command, want at most 20", tc.name, per)
		}
	})
}

// TestZRange_RepliesWithoutCopyingMembers: ZRANGE and ZREVRANGE by rank,
// WITHSCORES, write each member and its score straight into the reply,
// packed or big, instead of copying each member and formatting each score
// into a new slice first.
func TestZRange_RepliesWithoutCopyingMembers(t *testing.T) {
	c := dialQuiet(t)
	packedAndBig(t, 100, 1000, func(t *testing.T, tc sizeCase) {
		key := "zset-" + tc.name
		add := []string{"ZADD", key}
		for i := range tc.size {
			add = append(add, fmt.Sprintf("%d.5", i), fmt.Sprintf("m%04d", i))
		}
		c.roundTrip(command(add...), fmt.Appendf(nil, ":%d\r\n", tc.size))
		for _, rev := range []bool{false, true} {
			name, want := "ZRANGE", []byte("*200\r\n")
			for i := range 100 {
				r := i
				if rev {
					r = tc.size - 1 - i
				}
				want = fmt.Appendf(want, "$5\r\nm%04d\r\n$%d\r\n%d.5\r\n", r, len(fmt.Sprintf("%d.5", r)), r)
			}
			if rev {
				name = "ZREVRANGE"
			}
			// Before: 200 and more (a copy of each member, a slice for each score).
			if per := c.allocsPerCommand(command(name, key, "0", "99", "WITHSCORES"), want); per > 20 {
				t.Errorf("%s of 100 members of a %s sorted set: %d allocations per command, want at most 20", name, tc.name, per)
			}
		}
	})
}

// TestWholeCollectionReads_ReplyWithoutCopying: HGETALL, HKEYS, HVALS and
// SMEMBERS write each field, value or member straight into the reply,
// packed or big, instead of copying each first. A big collection's order
// is its own (a hash of each member), so the reply is checked as the set
// of its bulk strings.
func TestWholeCollectionReads_ReplyWithoutCopying(t *testing.T) {
	c := dialQuiet(t)
	packedAndBig(t, 50, 500, func(t *testing.T, tc sizeCase) {
		hkey, skey := "hash-"+tc.name, "set-"+tc.name
		hset, sadd := []string{"HSET", hkey}, []string{"SADD", skey}
		var fields, values []string
		for i := range tc.size {
			fields, values = append(fields, fmt.Sprintf("f%04d", i)), append(values, fmt.Sprintf("v%04d", i))
			hset = append(hset, fields[i], values[i])
			sadd = append(sadd, fmt.Sprintf("m%04d", i))
		}
		count := fmt.Appendf(nil, ":%d\r\n", tc.size)
		c.roundTrip(command(hset...), count)
		c.roundTrip(command(sadd...), count)
		for _, read := range []struct {
			args []string
			want []string
		}{
			{[]string{"HGETALL", hkey}, append(slices.Clone(fields), values...)},
			{[]string{"HKEYS", hkey}, fields},
			{[]string{"HVALS", hkey}, values},
			{[]string{"SMEMBERS", skey}, sadd[2:]},
		} {
			// Every string is 5 bytes: the reply's length is known.
			n := len(fmt.Sprintf("*%d\r\n", len(read.want))) + len(read.want)*len("$5\r\nxxxxx\r\n")
			req := command(read.args...)
			got := strings.Split(string(c.reply(req, n)), "\r\n")
			var bulks []string
			for i := 2; i < len(got); i += 2 {
				bulks = append(bulks, got[i])
			}
			slices.Sort(bulks)
			want := slices.Sorted(slices.Values(read.want))
			if !slices.Equal(bulks, want) {
				t.Fatalf("%s: %q, want %q", read.args[0], bulks, want)
			}
			// Before: one allocation per string and more.
			if per := c.allocsPerReply(req, n); per > 20 {
				t.Errorf("%s of a %s collection of %d: %d allocations per command, want at most 20", read.args[0], tc.name, tc.size, per)
			}
		}
	})
}

// sizeCase is a collection's size and its encoding's name.
type sizeCase struct {
	name string
	size int
}

// packedAndBig runs f as a subtest for a packed collection of small
// elements and a big one (past bigAt) of big.
func packedAndBig(t *testing.T, small, big int, f func(t *testing.T, tc sizeCase)) {
	for _, tc := range []sizeCase{{"packed", small}, {"big", big}} {
		t.Run(tc.name, func(t *testing.T) { f(t, tc) })
	}
}
