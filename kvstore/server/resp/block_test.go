package resp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// bothPaths runs a test against a server on event loops and one with a
// goroutine per connection.
func bothPaths(t *testing.T, run func(t *testing.T, addr string)) {
	for _, goroutines := range []bool{false, true} {
		name := "eventloop"
		if goroutines {
			name = "goroutine"
		}
		t.Run(name, func(t *testing.T) {
			run(t, servertest.Serve(t, resp.NewServer(servertest.OpenDB(t),
				resp.Options{GoroutinePerConn: goroutines, Logger: servertest.Logger(t)})))
		})
	}
}

// waitBlocked waits until n clients are blocked in cmd (CLIENT LIST shows
// their last command; INFO clients counts them, as Redis's test suite
// waits for them).
func waitBlocked(t *testing.T, c *redis.Client, n int, cmd string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		list, err := c.ClientList(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(context.Background(), "clients").Result()
		if err != nil {
			t.Fatal(err)
		}
		if countSubstr(list, "cmd="+cmd+" ") == n && strings.Contains(info, fmt.Sprintf("blocked_clients:%d\r\n", n)) {
			return
		}
	}
	t.Fatalf("%d clients did not block in %s", n, cmd)
}

func countSubstr(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}

func TestBlockingPops_WakeClientsInTheOrderTheyBlocked(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		admin := goRedis(t, addr)
		type result struct {
			i   int
			got []string
			err error
		}
		results := make(chan result, 3)
		for i := range 3 {
			c := goRedis(t, addr)
			go func() {
				got, err := c.BLPop(ctx, 0, "q").Result()
				results <- result{i, got, err}
			}()
			waitBlocked(t, admin, i+1, "blpop")
		}
		if err := admin.RPush(ctx, "q", "a", "b", "c").Err(); err != nil {
			t.Fatal(err)
		}
		want := map[int]string{0: "a", 1: "b", 2: "c"}
		for range 3 {
			r := <-results
			if r.err != nil || len(r.got) != 2 || r.got[0] != "q" || r.got[1] != want[r.i] {
				t.Errorf("client %d got %v, %v; want [q %s]", r.i, r.got, r.err, want[r.i])
			}
		}
		if n, _ := admin.Exists(ctx, "q").Result(); n != 0 {
			t.Fatalf("the list is still there")
		}
	})
}

func TestBlockingPops_TimeOutAndNeverBlockInsideMulti(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		c := goRedis(t, addr)
		start := time.Now()
		if _, err := c.Do(ctx, "blpop", "empty", "0.15").Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("BLPOP on an empty list = %v, want nil", err)
		}
		if d := time.Since(start); d < 140*time.Millisecond || d > 3*time.Second {
			t.Fatalf("BLPOP 0.15 took %v", d)
		}
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.BLPop(ctx, 0, "empty")
			p.BZPopMin(ctx, 0, "emptyz")
			p.RPush(ctx, "full", "x")
			p.BRPopLPush(ctx, "full", "dst", 0)
			return nil
		})
		if !errors.Is(err, redis.Nil) || len(cmds) != 4 || cmds[3].(*redis.StringCmd).Val() != "x" {
			t.Fatalf("MULTI with blocking pops: %v %v", cmds, err)
		}
		if _, err := c.Do(ctx, "blpop", "k", "-1").Result(); err == nil || err.Error() != "ERR timeout is negative" {
			t.Fatalf("negative timeout: %v", err)
		}
		if _, err := c.Do(ctx, "blpop", "k", "x").Result(); err == nil || err.Error() != "ERR timeout is not a float or out of range" {
			t.Fatalf("bad timeout: %v", err)
		}
		c.Set(ctx, "str", "x", 0)
		if _, err := c.BLPop(ctx, 0, "str").Result(); err == nil || err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
			t.Fatalf("BLPOP on a string: %v", err)
		}
	})
}

// A client that disconnects while blocked takes nothing: the element
// pushed next goes to the client still waiting.
func TestBlockingPops_AClientThatLeftTakesNothing(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a blocked goroutine connection sees its client leave by peeking at the socket, which is Unix only (peerclosed_other.go)")
	}
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		admin := goRedis(t, addr)
		gone, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(gone, "*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n")
		waitBlocked(t, admin, 1, "blpop")
		gone.Close()
		time.Sleep(300 * time.Millisecond) // the server notices (a goroutine connection: at its next look)
		stays := goRedis(t, addr)
		got := make(chan []string, 1)
		go func() {
			v, _ := stays.BLPop(ctx, 5*time.Second, "q").Result()
			got <- v
		}()
		waitBlocked(t, admin, 1, "blpop")
		admin.RPush(ctx, "q", "job")
		if v := <-got; len(v) != 2 || v[1] != "job" {
			t.Fatalf("the waiting client got %v", v)
		}
	})
}

func TestBlockingPops_BLMoveBLMPopAndBZPop(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		admin, c := goRedis(t, addr), goRedis(t, addr)
		moved := make(chan string, 1)
		go func() { v, _ := c.BLMove(ctx, "src", "dst", "LEFT", "RIGHT", 5*time.Second).Result(); moved <- v }()
		waitBlocked(t, admin, 1, "blmove")
		admin.RPush(ctx, "src", "1", "2")
		if v := <-moved; v != "1" {
			t.Fatalf("BLMOVE = %q", v)
		}
		if got, _ := admin.LRange(ctx, "dst", 0, -1).Result(); fmt.Sprint(got) != "[1]" {
			t.Fatalf("dst = %v", got)
		}
		zs := make(chan *redis.ZWithKey, 1)
		go func() { v, _ := c.BZPopMax(ctx, 5*time.Second, "z1", "z2").Result(); zs <- v }()
		waitBlocked(t, admin, 1, "bzpopmax")
		admin.ZAdd(ctx, "z2", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"})
		if v := <-zs; v == nil || v.Key != "z2" || v.Member != "b" || v.Score != 2 {
			t.Fatalf("BZPOPMAX = %+v", v)
		}
		key, vals, err := c.BLMPop(ctx, time.Second, "left", 2, "nokey", "src").Result()
		if err != nil || key != "src" || fmt.Sprint(vals) != "[2]" {
			t.Fatalf("BLMPOP = %s %v %v", key, vals, err)
		}
	})
}

// Commands pipelined after a blocking pop wait for it.
func TestBlockingPops_LaterCommandsOfTheConnectionWait(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$3\r\n0.2\r\n*1\r\n$4\r\nPING\r\n")
		r := bufio.NewReader(conn)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		first, _ := r.ReadString('\n')
		second, _ := r.ReadString('\n')
		if first != "*-1\r\n" || second != "+PONG\r\n" {
			t.Fatalf("replies %q %q", first, second)
		}
	})
}

// A woken client that finds a key of another kind waits on (Redis's
// "LPUSH + DEL + SET should not awake blocked client").
func TestBlockingPops_AKeyTurnedStringDoesNotEndTheWait(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		admin, c := goRedis(t, addr), goRedis(t, addr)
		got := make(chan string, 1)
		go func() {
			v, err := c.BLPop(ctx, 5*time.Second, "list").Result()
			got <- fmt.Sprint(v, err)
		}()
		waitBlocked(t, admin, 1, "blpop")
		_, err := admin.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.LPush(ctx, "list", "a")
			p.Del(ctx, "list")
			p.Set(ctx, "list", "foo", 0)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		admin.Del(ctx, "list")
		admin.LPush(ctx, "list", "b")
		if v := <-got; v != "[list b] <nil>" {
			t.Fatalf("BLPOP = %s", v)
		}
	})
}

// A woken BRPOPLPUSH whose destination holds another kind answers
// WRONGTYPE and leaves the element (Redis's "BRPOPLPUSH with wrong
// destination type").
func TestBlockingPops_AWokenMoveToAKeyOfAnotherKindIsWrongType(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		admin, c := goRedis(t, addr), goRedis(t, addr)
		admin.Set(ctx, "target", "nolist", 0)
		got := make(chan error, 1)
		go func() { got <- c.Do(ctx, "brpoplpush", "blist", "target", 5).Err() }()
		waitBlocked(t, admin, 1, "brpoplpush")
		admin.RPush(ctx, "blist", "foo")
		if err := <-got; err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Fatalf("BRPOPLPUSH = %v, want WRONGTYPE", err)
		}
		if v, _ := admin.LRange(ctx, "blist", 0, -1).Result(); fmt.Sprint(v) != "[foo]" {
			t.Fatalf("blist = %v", v)
		}
	})
}

// The first woken client fails (its destination holds another kind): the
// element goes to the next one (Redis's "BRPOPLPUSH with multiple blocked
// clients").
func TestBlockingPops_AWokenClientThatFailsPassesTheElementOn(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		admin, c1, c2 := goRedis(t, addr), goRedis(t, addr), goRedis(t, addr)
		admin.Set(ctx, "target1", "nolist", 0)
		got1, got2 := make(chan error, 1), make(chan string, 1)
		go func() { got1 <- c1.Do(ctx, "brpoplpush", "blist", "target1", 5).Err() }()
		waitBlocked(t, admin, 1, "brpoplpush")
		go func() { v, err := c2.Do(ctx, "brpoplpush", "blist", "target2", 5).Result(); got2 <- fmt.Sprint(v, err) }()
		waitBlocked(t, admin, 2, "brpoplpush")
		admin.LPush(ctx, "blist", "foo")
		if err := <-got1; err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Fatalf("first client: %v, want WRONGTYPE", err)
		}
		if v := <-got2; v != "foo<nil>" {
			t.Fatalf("second client: %s", v)
		}
	})
}

// CLIENT UNBLOCK ends a wait as its timeout (by default or with TIMEOUT)
// or with an UNBLOCKED error (ERROR); the connection then works as before.
func TestBlockingPops_ClientUnblockEndsTheWaitAsATimeoutOrAnError(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		admin := goRedis(t, addr)
		c := goRedis(t, addr)
		conn := c.Conn()
		defer conn.Close()
		id, err := conn.ClientID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			reason  []any
			wantErr string
		}{{nil, ""}, {[]any{"TIMEOUT"}, ""}, {[]any{"error"}, "UNBLOCKED client unblocked via CLIENT UNBLOCK"}} {
			done := make(chan error, 1)
			go func() { done <- conn.BLPop(ctx, 0, "l").Err() }()
			waitBlocked(t, admin, 1, "blpop")
			n, err := admin.Do(ctx, append([]any{"client", "unblock", id}, tc.reason...)...).Int()
			if err != nil || n != 1 {
				t.Fatalf("CLIENT UNBLOCK %v = %d, %v; want 1", tc.reason, n, err)
			}
			select {
			case err := <-done:
				switch {
				case tc.wantErr == "" && !errors.Is(err, redis.Nil):
					t.Fatalf("unblocked with %v: %v, want a nil reply", tc.reason, err)
				case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
					t.Fatalf("unblocked with %v: %v, want %q", tc.reason, err, tc.wantErr)
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("CLIENT UNBLOCK %v did not end the wait", tc.reason)
			}
		}
		if n, err := admin.Do(ctx, "client", "unblock", id).Int(); err != nil || n != 0 {
			t.Fatalf("CLIENT UNBLOCK of a client not blocked = %d, %v; want 0", n, err)
		}
		done := make(chan []string, 1)
		go func() { got, _ := conn.BLPop(ctx, 0, "l").Result(); done <- got }()
		waitBlocked(t, admin, 1, "blpop")
		admin.LPush(ctx, "l", "foo")
		if got := <-done; len(got) != 2 || got[1] != "foo" {
			t.Fatalf("BLPOP after the unblocks = %v, want [l foo]", got)
		}
	})
}

// Two moves blocked in a circle (list1 to list2, list2 to list1): a push
// to list1 is answered after both ran, as Redis serves the clients a
// command woke before its reply, so the element is back in list1.
func TestBlockingPops_APushIsAnsweredAfterTheMovesItWoke(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		admin := patientClient(t, addr)
		for i := range 20 {
			if err := admin.Del(ctx, "list1", "list2").Err(); err != nil {
				t.Fatalf("round %d: DEL: %v", i, err)
			}
			a, b := patientClient(t, addr), patientClient(t, addr)
			done := make(chan error, 2)
			go func() { done <- a.Do(ctx, "brpoplpush", "list1", "list2", 0).Err() }()
			waitBlocked(t, admin, 1, "brpoplpush")
			go func() { done <- b.Do(ctx, "brpoplpush", "list2", "list1", 0).Err() }()
			waitBlocked(t, admin, 2, "brpoplpush")
			if err := admin.RPush(ctx, "list1", "foo").Err(); err != nil {
				t.Fatalf("round %d: RPUSH: %v", i, err)
			}
			l1, err1 := admin.LRange(ctx, "list1", 0, -1).Result()
			l2, err2 := admin.LRange(ctx, "list2", 0, -1).Result()
			if err := errors.Join(err1, err2); err != nil {
				t.Fatalf("round %d: LRANGE: %v", i, err)
			}
			if len(l1) != 1 || l1[0] != "foo" || len(l2) != 0 {
				t.Fatalf("round %d: after RPUSH list1 foo: list1 %v, list2 %v; want [foo], []", i, l1, l2)
			}
			for range 2 {
				if err := <-done; err != nil {
					t.Fatalf("round %d: a blocked BRPOPLPUSH: %v", i, err)
				}
			}
			a.Close() // CLIENT LIST shows the clients of the next round only
			b.Close()
		}
	})
}

// A move woken by a push changes its destination before the push is
// answered, so a transaction watching the destination, run after the
// push, is aborted (as in Redis).
func TestBlockingPops_AWokenMoveTouchesAWatchedDestination(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		admin := patientClient(t, addr)
		for i := range 20 {
			if err := admin.Del(ctx, "src", "dst").Err(); err != nil {
				t.Fatalf("round %d: DEL: %v", i, err)
			}
			mover := patientClient(t, addr)
			done := make(chan struct{})
			go func() { mover.Do(ctx, "brpoplpush", "src", "dst", 0); close(done) }()
			waitBlocked(t, admin, 1, "brpoplpush")
			watcher := patientClient(t, addr)
			if err := watcher.Watch(ctx, func(tx *redis.Tx) error {
				if err := admin.LPush(ctx, "src", "element").Err(); err != nil {
					return err
				}
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Get(ctx, "somekey")
					return nil
				})
				return err
			}, "dst"); !errors.Is(err, redis.TxFailedErr) {
				t.Fatalf("round %d: EXEC after the move = %v, want it aborted", i, err)
			}
			<-done
			mover.Close()
			watcher.Close()
		}
	})
}

// The command that makes a key ready serves the clients blocked on it
// inside its own update, as Redis does: the pusher's next command, sent
// in the same burst, finds the elements taken. The moves here push onto a
// 300k-element list, each a copy of it, so serving them takes far longer
// than a wait for the woken clients could be capped at.
func TestBlockingPops_ThePushersNextCommandSeesTheElementsTheBlockedClientsTook(t *testing.T) {
	bothPaths(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		admin := goRedis(t, addr)

		// One BLPOP: LPUSH k a, then LLEN k answers 0.
		for i := range 20 {
			popper := goRedis(t, addr)
			got := make(chan []string, 1)
			go func() { v, _ := popper.BLPop(ctx, 0, "k").Result(); got <- v }()
			waitBlocked(t, admin, 1, "blpop")
			cmds, err := admin.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.LPush(ctx, "k", "a")
				p.LLen(ctx, "k")
				return nil
			})
			if err != nil || cmds[1].(*redis.IntCmd).Val() != 0 {
				t.Fatalf("round %d: LPUSH k a; LLEN k = %v, %v; want 0 (the blocked client took it)", i, cmds[1], err)
			}
			if v := <-got; len(v) != 2 || v[1] != "a" {
				t.Fatalf("round %d: the blocked client got %v", i, v)
			}
			popper.Close()
		}

		const big, movers = 300_000, 30
		for i := 0; i < big; i += 10_000 {
			elems := make([]any, 10_000)
			for j := range elems {
				elems[j] = fmt.Sprintf("e%07d", i+j)
			}
			if err := admin.RPush(ctx, "big", elems...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan string, movers)
		for i := range movers {
			c := goRedis(t, addr)
			go func() { v, err := c.BLMove(ctx, "src", "big", "RIGHT", "LEFT", 0).Result(); done <- fmt.Sprint(v, err) }()
			waitBlocked(t, admin, i+1, "blmove")
		}
		pushed := make([]any, movers)
		for i := range pushed {
			pushed[i] = fmt.Sprintf("job%02d", i)
		}
		// Serving the 30 moves copies the list 30 times: slow under -race.
		pusher := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: time.Minute})
		defer pusher.Close()
		cmds, err := pusher.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.RPush(ctx, "src", pushed...)
			p.LLen(ctx, "src")
			p.LLen(ctx, "big")
			return nil
		})
		if err != nil || cmds[1].(*redis.IntCmd).Val() != 0 || cmds[2].(*redis.IntCmd).Val() != big+movers {
			t.Fatalf("RPUSH src 30 jobs; LLEN src; LLEN big = %v, %v, %v; want 0 and %d", cmds[1], cmds[2], err, big+movers)
		}
		for range movers {
			if v := <-done; !strings.HasPrefix(v, "job") {
				t.Fatalf("a mover got %s", v)
			}
		}
	})
}
