package resp_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// go-redis's PubSub works unchanged: channel and pattern subscriptions,
// the receiver count, PING on the subscribed connection, introspection,
// and unsubscribing.
func TestGoRedis_PubSubDeliversToChannelsAndPatterns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	sub := c.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the confirmation
		t.Fatal(err)
	}
	if err := sub.PSubscribe(ctx, "alerts.*"); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Publish(ctx, "news", "one").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH news = %d, %v; want 1", n, err)
	}
	if n, err := c.Publish(ctx, "alerts.disk", "two").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH alerts.disk = %d, %v; want 1", n, err)
	}
	if err := sub.Ping(ctx, "still-there"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 3 {
		msg, err := sub.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch m := msg.(type) {
		case *redis.Message:
			got = append(got, fmt.Sprintf("%s|%s|%s", m.Pattern, m.Channel, m.Payload))
		case *redis.Pong:
			got = append(got, "pong:"+m.Payload)
		default:
			t.Fatalf("unexpected %T %v", msg, msg)
		}
	}
	if want := []string{"|news|one", "alerts.*|alerts.disk|two", "pong:still-there"}; !slices.Equal(got, want) {
		t.Fatalf("received %q, want %q", got, want)
	}
	if n, err := c.PubSubNumSub(ctx, "news", "other").Result(); err != nil || n["news"] != 1 || n["other"] != 0 {
		t.Fatalf("NUMSUB = %v, %v", n, err)
	}
	if n, err := c.PubSubNumPat(ctx).Result(); err != nil || n != 1 {
		t.Fatalf("NUMPAT = %d, %v", n, err)
	}
	if ch, err := c.PubSubChannels(ctx, "*").Result(); err != nil || !slices.Equal(ch, []string{"news"}) {
		t.Fatalf("CHANNELS = %v, %v", ch, err)
	}
	if err := sub.Unsubscribe(ctx, "news"); err != nil {
		t.Fatal(err)
	}
	if err := sub.PUnsubscribe(ctx, "alerts.*"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the subscriptions to end", func() bool {
		n, _ := c.Publish(ctx, "news", "three").Result()
		m, _ := c.Publish(ctx, "alerts.x", "four").Result()
		return n == 0 && m == 0
	})
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A subscriber waits for messages, not requests: the idle timeout that
// closes a silent client does not close it (as Redis exempts pub/sub
// clients from timeout).
func TestPubSub_ASubscriberOutlivesTheIdleTimeout(t *testing.T) {
	addr := start(t, servertest.OpenDB(t), resp.Options{IdleTimeout: 200 * time.Millisecond})
	sub := dialRaw(t, addr)
	sub.send("SUBSCRIBE quiet\r\n")
	for range 6 { // *3 subscribe quiet :1
		sub.line()
	}
	time.Sleep(800 * time.Millisecond)
	pub := goRedis(t, addr)
	if n, err := pub.Publish(context.Background(), "quiet", "late").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH after the idle timeout = %d, %v; want the subscriber still there", n, err)
	}
	for _, want := range []string{"*3\r\n", "$7\r\n", "message\r\n", "$5\r\n", "quiet\r\n", "$4\r\n", "late\r\n"} {
		if got := sub.line(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// The attack: a subscriber that never reads while a publisher floods its
// channel. PUBLISH never waits for it (each stays fast), and once the
// messages waiting for it pass the output limit it is disconnected and
// leaves the channel; the server serves others meanwhile.
func TestPubSub_ASubscriberThatNeverReadsIsDroppedAndPublishStaysFast(t *testing.T) {
	ctx := context.Background()
	const hard = 4 << 20
	addr := start(t, servertest.OpenDB(t), resp.Options{PubSubBufferHard: hard, PubSubBufferSoft: -1})
	stuck, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if tc, ok := stuck.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10) // the kernel holds little for it
	}
	if _, err := io.WriteString(stuck, "SUBSCRIBE flood\r\n"); err != nil {
		t.Fatal(err)
	}
	pub := goRedis(t, addr)
	waitFor(t, "the subscription", func() bool {
		n, _ := pub.PubSubNumSub(ctx, "flood").Result()
		return n["flood"] == 1
	})
	payload := strings.Repeat("x", 64<<10)
	var slowest time.Duration
	sent := 0
	for ; sent < 4*hard/len(payload); sent++ { // four times the limit
		t0 := time.Now()
		if err := pub.Publish(ctx, "flood", payload).Err(); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(t0))
	}
	// A PUBLISH that waited for the subscriber's socket would have blocked
	// once the kernel's buffers filled (a few hundred KiB), for good.
	if slowest > 2*time.Second {
		t.Fatalf("the slowest of %d PUBLISHes took %v", sent, slowest)
	}
	waitFor(t, "the stuck subscriber to be dropped", func() bool {
		n, _ := pub.PubSubNumSub(ctx, "flood").Result()
		return n["flood"] == 0
	})
	if n, err := pub.Publish(ctx, "flood", "x").Result(); err != nil || n != 0 {
		t.Fatalf("PUBLISH after the drop = %d, %v; want 0", n, err)
	}
	// Its connection is closed: the publisher is the only client left.
	waitFor(t, "the stuck subscriber's connection to close", func() bool {
		info, _ := pub.Info(ctx, "clients").Result()
		return strings.Contains(info, "connected_clients:1\r\n")
	})
	if err := pub.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d PUBLISHes of %d KiB, slowest %v", sent, len(payload)>>10, slowest)
}

// Many subscribers that subscribe and go away leave nothing behind: no
// channel, pattern, goroutine or memory of theirs.
func TestPubSub_ManySubscribeDisconnectCyclesLeaveNoLeak(t *testing.T) {
	ctx := context.Background()
	addr := start(t, servertest.OpenDB(t), resp.Options{})
	pub := goRedis(t, addr)
	cycle := func(i int) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "SUBSCRIBE ch%d shared\r\nPSUBSCRIBE p%d.* shared.*\r\nSSUBSCRIBE s%d\r\n", i%7, i%5, i)
		buf := make([]byte, 512)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for n := 0; n < 5; { // five confirmations (a word is never split: they are one write)
			k, err := c.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			n += strings.Count(string(buf[:k]), "subscribe\r\n")
		}
		c.Close()
	}
	settled := func() bool {
		ch, _ := pub.PubSubChannels(ctx, "*").Result()
		pat, _ := pub.PubSubNumPat(ctx).Result()
		sh, _ := pub.PubSubShardChannels(ctx, "*").Result()
		return len(ch) == 0 && pat == 0 && len(sh) == 0
	}
	for i := range 50 { // warm up the pools
		cycle(i)
	}
	waitFor(t, "the warm-up subscribers to leave", settled)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	for i := range 1000 {
		cycle(i)
	}
	waitFor(t, "every subscriber to leave every channel", settled)
	waitFor(t, "the connections' goroutines to end", func() bool { return runtime.NumGoroutine() <= goroutines+2 })
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 2<<20 {
		t.Fatalf("the heap grew by %d KiB over 1000 subscribe/disconnect cycles", grew>>10)
	}
	if n, err := pub.Publish(ctx, "shared", "x").Result(); err != nil || n != 0 {
		t.Fatalf("PUBLISH shared = %d, %v; want 0 receivers", n, err)
	}
}
