//go:build unix

package resp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// readPush reads the next reply of each peer and checks both are the same
// bytes (an invalidation message), returning ours.
func samePush(t *testing.T, peers [2]rawPeer, what string) string {
	t.Helper()
	var got [2]string
	for i, p := range peers {
		r, err := readRESP(p.c.r)
		if err != nil {
			t.Fatalf("%s: %s: %v (read %q)", p.name, what, err, r)
		}
		got[i] = r
	}
	if got[0] != got[1] {
		t.Errorf("%s:\n redis: %q\n ours:  %q", what, got[0], got[1])
	}
	return got[1]
}

// Client-side caching as Redis 7.0 does it, judged by a real redis-server
// over raw sockets: a RESP3 client tracking its reads is pushed
// `invalidate` once for each key it read that another client then
// changed (and not again until it reads it again), nothing after
// TRACKING OFF; BCAST with a prefix is told of every key under it; OPTIN
// tracks only the read after CLIENT CACHING YES; a RESP2 client
// redirects to a connection subscribed to __redis__:invalidate; FLUSHALL
// invalidates everything (a null); the option errors, GETREDIR and
// TRACKINGINFO are Redis's. Then: a write that does not come through the
// RESP listener (the engine itself) invalidates too.
func TestRedisDiff_ClientTrackingInvalidatesAsRedis(t *testing.T) {
	db := servertest.OpenDB(t)
	redisAddr, ourAddr := startRedis(t), start(t, db, resp.Options{AllowFlush: true})
	dial := func() [2]rawPeer {
		return [2]rawPeer{{"redis", dialRaw(t, redisAddr)}, {"ours", dialRaw(t, ourAddr)}}
	}
	reader, writer := dial(), dial()
	for _, p := range reader {
		p.c.send("HELLO 3\r\n")
		if _, err := readRESP(p.c.r); err != nil {
			t.Fatal(err)
		}
	}
	sameBytes(t, reader,
		words("CLIENT", "TRACKING", "ON", "PREFIX", "x"), words("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"),
		words("CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"), words("CLIENT", "TRACKING", "ON", "REDIRECT", "987654"),
		words("CLIENT", "TRACKING", "MAYBE"), words("CLIENT", "CACHING", "YES"), words("CLIENT", "GETREDIR"),
		words("CLIENT", "TRACKINGINFO"),
		words("CLIENT", "TRACKING", "ON"), words("CLIENT", "GETREDIR"), words("CLIENT", "TRACKINGINFO"),
		words("CLIENT", "CACHING", "YES"), words("CLIENT", "TRACKING", "ON", "BCAST"),
		words("GET", "k"), words("MGET", "a", "b"), words("HGET", "h", "f"))
	sameBytes(t, writer, words("SET", "k", "1"))
	samePush(t, reader, "invalidation of k")
	sameBytes(t, writer, words("SET", "k", "2"), words("MSET", "a", "1", "b", "1"))
	// k was not read again: only a and b (one message each MSET? Redis: one per key).
	push := samePush(t, reader, "invalidation of a")
	if !strings.Contains(push, "invalidate") {
		t.Errorf("want an invalidation, got %q", push)
	}
	samePush(t, reader, "invalidation of b")
	sameBytes(t, writer, words("HSET", "h", "f", "v"))
	samePush(t, reader, "invalidation of h")
	sameBytes(t, reader, words("GET", "k"), words("FLUSHALL"))
	samePush(t, reader, "FLUSHALL's invalidation")
	sameBytes(t, reader, words("CLIENT", "TRACKING", "OFF"), words("GET", "k"))
	sameBytes(t, writer, words("SET", "k", "3"))
	sameBytes(t, reader, words("PING")) // no invalidation came before its reply

	// BCAST with a prefix.
	sameBytes(t, reader, words("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "user:1"))
	sameBytes(t, reader, words("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "session:"),
		words("CLIENT", "TRACKINGINFO"))
	sameBytes(t, writer, words("SET", "other", "x"), words("SET", "user:7", "x"))
	samePush(t, reader, "BCAST invalidation of user:7")
	sameBytes(t, writer, words("DEL", "session:9"), words("SET", "session:9", "x"))
	samePush(t, reader, "BCAST invalidation of session:9")
	sameBytes(t, reader, words("CLIENT", "TRACKING", "OFF"))

	// OPTIN: only the read after CLIENT CACHING YES is tracked.
	sameBytes(t, reader, words("CLIENT", "TRACKING", "ON", "OPTIN"), words("GET", "a"),
		words("CLIENT", "CACHING", "YES"), words("GET", "b"), words("CLIENT", "TRACKINGINFO"), words("GET", "c"))
	sameBytes(t, writer, words("SET", "a", "1"), words("SET", "c", "1"), words("SET", "b", "1"))
	samePush(t, reader, "OPTIN invalidation of b")
	sameBytes(t, reader, words("CLIENT", "TRACKING", "OFF"))

	// RESP2, redirected to a subscriber of __redis__:invalidate.
	listener, resp2 := dial(), dial()
	var ids [2]string
	for i, p := range listener {
		p.c.send("CLIENT ID\r\n")
		r, err := readRESP(p.c.r)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = strings.TrimSpace(strings.TrimPrefix(r, ":"))
	}
	sameBytes(t, listener, words("SUBSCRIBE", "__redis__:invalidate"))
	for i, p := range resp2 {
		p.c.send(fmt.Sprintf("CLIENT TRACKING ON REDIRECT %s\r\nCLIENT GETREDIR\r\n", ids[i]))
		if r, err := readRESP(p.c.r); err != nil || r != "+OK\r\n" {
			t.Fatalf("%s: TRACKING ON REDIRECT: %q %v", p.name, r, err)
		}
		if r, err := readRESP(p.c.r); err != nil || r != ":"+ids[i]+"\r\n" {
			t.Fatalf("%s: GETREDIR: %q %v", p.name, r, err)
		}
	}
	sameBytes(t, resp2, words("GET", "r"))
	sameBytes(t, writer, words("SET", "r", "1"))
	samePush(t, listener, "redirected invalidation of r")

	// A write from outside the RESP listener: the engine's own.
	ours := reader[1]
	ours.c.send("CLIENT TRACKING ON\r\nGET e\r\n")
	for range 2 {
		if _, err := readRESP(ours.c.r); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Set([]byte("e"), []byte("from the engine")); err != nil {
		t.Fatal(err)
	}
	ours.c.SetDeadline(time.Now().Add(5 * time.Second))
	if r, err := readRESP(ours.c.r); err != nil || r != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\ne\r\n" {
		t.Errorf("after a write by the engine: %q, %v; want the invalidation of e", r, err)
	}
}

// The attack on the tracking table: a client that reads a million
// distinct keys would make the server hold them all. The table holds at
// most tracking-table-max-keys (CONFIG SET, as Redis), and each key it
// drops is invalidated, so no client keeps a value it would not hear of.
func TestClientTracking_TableIsBoundedAndDroppedKeysAreInvalidated(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{})
	c := dialRaw(t, addr)
	c.send("HELLO 3\r\nCONFIG SET tracking-table-max-keys 100\r\nCLIENT TRACKING ON\r\n")
	for range 3 {
		if _, err := readRESP(c.r); err != nil {
			t.Fatal(err)
		}
	}
	const reads = 1000
	var req strings.Builder
	for i := range reads {
		fmt.Fprintf(&req, "GET key:%d\r\n", i)
	}
	c.send(req.String() + "INFO stats\r\n")
	nulls, pushes := 0, 0
	var info string
	for nulls < reads || info == "" {
		r, err := readRESP(c.r)
		if err != nil {
			t.Fatalf("after %d replies and %d pushes: %v", nulls, pushes, err)
		}
		switch {
		case r == "_\r\n":
			nulls++
		case strings.HasPrefix(r, ">2\r\n$10\r\ninvalidate\r\n"):
			pushes++
		case strings.HasPrefix(r, "="):
			info = r
		default:
			t.Fatalf("unexpected %q", r)
		}
	}
	if !strings.Contains(info, "tracking_total_keys:100\r\n") {
		t.Errorf("INFO after %d reads: %s; want tracking_total_keys:100", reads, info)
	}
	// Every key read and then dropped was invalidated (pushes may still
	// be on their way after the INFO reply).
	deadline := time.Now().Add(5 * time.Second)
	c.SetDeadline(deadline)
	for pushes < reads-100 {
		r, err := readRESP(c.r)
		if err != nil || !strings.HasPrefix(r, ">2\r\n$10\r\ninvalidate\r\n") {
			t.Fatalf("after %d invalidations: %q, %v; want %d", pushes, r, err, reads-100)
		}
		pushes++
	}
}
