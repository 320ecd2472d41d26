//go:build unix

package resp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// INFO keyspace says how many keys have a TTL (expires=) and about how long
// they have left (avg_ttl, ms, estimated from a sample as Redis does).
func TestInfo_KeyspaceCountsKeysWithATTL(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	for i := range 100 {
		ttl := time.Duration(0)
		if i%5 < 2 {
			ttl = 100 * time.Second
		}
		if err := c.Set(ctx, fmt.Sprintf("k%d", i), "v", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.HSet(ctx, "h", "f", "v")
	c.Expire(ctx, "h", 50*time.Second)
	info, err := c.Info(ctx, "keyspace").Result()
	if err != nil {
		t.Fatal(err)
	}
	var keys, expires, avg int64
	line := info[strings.Index(info, "db0:"):]
	if _, err := fmt.Sscanf(line, "db0:keys=%d,expires=%d,avg_ttl=%d", &keys, &expires, &avg); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if keys != 101 || expires != 41 || avg <= 90_000 || avg > 100_000 {
		t.Errorf("keys=%d expires=%d avg_ttl=%d, want 101, 41 and between 90 s and 100 s (40 keys at 100 s, one at 50 s)", keys, expires, avg)
	}
}

// CONFIG SET of a setting devkit kv takes from its serve flags answers
// Redis's "CONFIG SET failed (possibly related to argument ...)" (what
// clients and Redis's own tests match), naming the first setting that would
// change; an unknown name is Redis's unknown-option error; inside MULTI the
// failure is that command's error in EXEC's reply, the rest runs.
func TestConfigSet_ReadOnlySettingsFailAsRedisSays(t *testing.T) {
	c := dialRaw(t, start(t, servertest.OpenDB(t), resp.Options{}))
	for _, tc := range []struct{ send, want string }{
		{"CONFIG SET maxmemory bla\r\n", "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - "},
		{"CONFIG SET maxmemory 0 timeout 5\r\n", "-ERR CONFIG SET failed (possibly related to argument 'timeout') - "},
		{"CONFIG SET maxmemory 0\r\n", "+OK\r\n"},
		{"CONFIG SET nosuch 1\r\n", "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n"},
	} {
		c.send(tc.send)
		if got := c.line(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: %q, want %q...", tc.send, got, tc.want)
		}
	}
	c.send("MULTI\r\nSET foo bar\r\nCONFIG SET maxmemory bla\r\nEXEC\r\n")
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n", "+OK\r\n", "-ERR CONFIG SET failed"} {
		if got := c.line(); !strings.HasPrefix(got, want) {
			t.Fatalf("MULTI/EXEC: %q, want %q...", got, want)
		}
	}
}
