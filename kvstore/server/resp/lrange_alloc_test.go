package resp_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// TestLRange_RepliesWithoutCopyingElements: LRANGE writes each element of
// the list straight into its reply, packed or big, instead of copying each
// first (redis-benchmark's LRANGE_100 row paid an allocation per element).
// Measured as the allocations of the whole process per command, through a
// raw connection whose reads allocate nothing.
func TestLRange_RepliesWithoutCopyingElements(t *testing.T) {
	conn, err := net.Dial("tcp", start(t, servertest.OpenDB(t), resp.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	roundTrip := func(req, want []byte, got []byte) {
		if _, err := conn.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(conn, got[:len(want)]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:len(want)], want) {
			t.Fatalf("reply %q, want %q", got[:len(want)], want)
		}
	}
	for _, tc := range []struct {
		name string
		size int // 100: packed; 1000: big (past bigAt)
	}{{"packed", 100}, {"big", 1000}} {
		t.Run(tc.name, func(t *testing.T) {
			key := "list-" + tc.name
			buf := make([]byte, 64<<10)
			var push strings.Builder
			fmt.Fprintf(&push, "*%d\r\n$5\r\nRPUSH\r\n$%d\r\n%s\r\n", tc.size+2, len(key), key)
			for i := range tc.size {
				fmt.Fprintf(&push, "$5\r\ne%04d\r\n", i)
			}
			roundTrip([]byte(push.String()), fmt.Appendf(nil, ":%d\r\n", tc.size), buf)
			req := fmt.Appendf(nil, "*4\r\n$6\r\nLRANGE\r\n$%d\r\n%s\r\n$1\r\n0\r\n$2\r\n99\r\n", len(key), key)
			want := []byte("*100\r\n")
			for i := range 100 {
				want = fmt.Appendf(want, "$5\r\ne%04d\r\n", i)
			}
			roundTrip(req, want, buf) // warm up (buffers grow to the reply once)
			const runs = 200
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range runs {
				roundTrip(req, want, buf)
			}
			runtime.ReadMemStats(&after)
			// Before: 100 and more (one copy per element).
			if per := (after.Mallocs - before.Mallocs) / runs; per > 20 {
				t.Errorf("LRANGE of 100 elements of a %s list: %d allocations per command, want at most 20", tc.name, per)
			}
		})
	}
}
