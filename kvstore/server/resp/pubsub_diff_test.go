//go:build unix

package resp_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// step sends a command on one of a script's connections and reads the
// replies (and messages) expected on each connection afterwards.
type step struct {
	conn  int
	cmd   string
	reads [2]int // values to read from connection 0 and 1 after sending
}

// runScript plays steps against addr over two connections and returns
// every value read, in order, as raw RESP.
func runScript(t *testing.T, addr string, steps []step) []string {
	t.Helper()
	var conns [2]net.Conn
	var rs [2]*bufio.Reader
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		conns[i], rs[i] = c, bufio.NewReader(c)
	}
	var out []string
	for _, s := range steps {
		if s.cmd != "" {
			if _, err := io.WriteString(conns[s.conn], s.cmd+"\r\n"); err != nil {
				t.Fatal(err)
			}
		}
		for i, n := range s.reads {
			for range n {
				v, err := readRESP(rs[i])
				if err != nil {
					t.Fatalf("%s: %q: read conn %d: %v", addr, s.cmd, i, err)
				}
				out = append(out, fmt.Sprintf("conn%d %s -> %q", i, s.cmd, v))
			}
		}
	}
	return out
}

// The replies and pushed messages of pub/sub — confirmations, message and
// pmessage frames, PUBLISH's receiver counts, PING in subscribed mode, the
// refusal of other commands there, PUBSUB's introspection — are byte for
// byte redis-server's.
func TestRedisDiff_PubSubRepliesAndMessagesMatchRedis(t *testing.T) {
	redisAddr := startRedis(t)
	ours := start(t, servertest.OpenDB(t), resp.Options{})
	steps := []step{
		{0, "UNSUBSCRIBE", [2]int{1, 0}},
		{0, "PUNSUBSCRIBE", [2]int{1, 0}},
		{0, "UNSUBSCRIBE foo bar", [2]int{2, 0}},
		{1, "PUBSUB NUMSUB chan1 chan2", [2]int{0, 1}},
		{0, "SUBSCRIBE chan1 chan2 chan1", [2]int{3, 0}},
		{0, "PSUBSCRIBE chan* f?o [ab]x", [2]int{3, 0}},
		{1, "PUBLISH chan1 hello", [2]int{2, 1}},
		{1, "PUBLISH foo world", [2]int{1, 1}},
		{1, `PUBLISH bx ""`, [2]int{1, 1}},
		{1, "PUBLISH nobody x", [2]int{0, 1}},
		{1, "SPUBLISH chan1 x", [2]int{0, 1}},
		{1, "PUBSUB NUMSUB chan1 chan2 nope", [2]int{0, 1}},
		{1, "PUBSUB NUMPAT", [2]int{0, 1}},
		{1, "PUBSUB CHANNELS chan[1]", [2]int{0, 1}},
		{1, "PUBSUB SHARDNUMSUB chan1", [2]int{0, 1}},
		{1, "PUBSUB NOPE", [2]int{0, 1}},
		{1, "PUBSUB NUMPAT extra", [2]int{0, 1}},
		{1, "PUBSUB", [2]int{0, 1}},
		{0, "PING", [2]int{1, 0}},
		{0, "PING hi", [2]int{1, 0}},
		{0, "GET k", [2]int{1, 0}},
		{0, "SET k v", [2]int{1, 0}},
		{0, "MULTI", [2]int{1, 0}},
		{0, "CONFIG GET maxmemory", [2]int{1, 0}},
		{0, "PUBLISH chan1 x", [2]int{1, 0}},
		{0, "SUBSCRIBE", [2]int{1, 0}},
		{0, "UNSUBSCRIBE chan1", [2]int{1, 0}},
		{1, "PUBLISH chan1 again", [2]int{1, 1}},
		{0, "PUNSUBSCRIBE chan* f?o", [2]int{2, 0}},
		{0, "UNSUBSCRIBE", [2]int{1, 0}},
		{0, "PING", [2]int{1, 0}},
		{0, "PUNSUBSCRIBE", [2]int{1, 0}},
		{0, "PING", [2]int{1, 0}},
		{0, "GET k", [2]int{1, 0}},
		{0, "SSUBSCRIBE s1 s2", [2]int{2, 0}},
		{1, "SPUBLISH s1 shard", [2]int{1, 1}},
		{1, "PUBLISH s1 plain", [2]int{0, 1}},
		{1, "PUBSUB SHARDCHANNELS s[1]", [2]int{0, 1}},
		{0, "SUNSUBSCRIBE s1 s2", [2]int{2, 0}},
		{0, "MULTI", [2]int{1, 0}},
		{0, "SUBSCRIBE tx", [2]int{1, 0}},
		{0, "EXEC", [2]int{1, 0}},
		{1, "PUBLISH tx after-exec", [2]int{1, 1}},
		{0, "GET k", [2]int{1, 0}},
		{0, "QUIT", [2]int{1, 0}},
	}
	want, got := runScript(t, redisAddr, steps), runScript(t, ours, steps)
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("reply %d:\n redis: %s\n ours:  %s", i, w, g)
		}
	}
}
