package resp

// Tests of a loop's parked connections while their group syncs (see
// eventloop_linux.go). A held disk is the loop's beforeSync hook blocking
// before its first wait: the group is sealed by that wait, so as the loop
// sees it, the sync has not finished. (The loop itself is held: it serves
// nothing meanwhile, as Redis's does during its fsync.)

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
)

// heldDisk holds the syncer before it awaits a batch while held.
type heldDisk struct {
	mu      sync.Mutex
	release chan struct{} // nil: not held
	entered chan struct{} // gets a value each time a held batch arrives
}

func newHeldDisk() *heldDisk { return &heldDisk{entered: make(chan struct{}, 64)} }

func (d *heldDisk) hold() {
	d.mu.Lock()
	d.release = make(chan struct{})
	d.mu.Unlock()
}

func (d *heldDisk) letGo() {
	d.mu.Lock()
	if d.release != nil {
		close(d.release)
		d.release = nil
	}
	d.mu.Unlock()
}

func (d *heldDisk) hook() {
	d.mu.Lock()
	r := d.release
	d.mu.Unlock()
	if r != nil {
		d.entered <- struct{}{}
		<-r
	}
}

func (d *heldDisk) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-d.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no batch reached the syncer")
	}
}

// serveHeld serves db from one event loop whose syncs d holds.
func serveHeld(t *testing.T, db *kvstore.DB, d *heldDisk) (*Server, net.Listener, chan error) {
	t.Helper()
	s, ln, done := serveWithHook(t, db, Options{EventLoops: 1, IdleTimeout: -1, HandshakeTimeout: -1, WriteTimeout: -1,
		Logger: servertest.Logger(t)}, d.hook)
	t.Cleanup(d.letGo) // before the Shutdown of serveWithHook's cleanup
	return s, ln, done
}

// serveWithHook serves db with o, the loops' beforeSync hook set to
// beforeSync, and shuts the server down when the test ends.
func serveWithHook(t *testing.T, db *kvstore.DB, o Options, beforeSync func()) (*Server, net.Listener, chan error) {
	t.Helper()
	s := NewServer(db, o)
	if s.loops == nil {
		t.Fatal("no event loops")
	}
	s.loops.beforeSync = beforeSync
	ln := servertest.Listen(t)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-done
	})
	return s, ln, done
}

// heldSet is a connection whose SET k=v1 is parked: its group waits at a
// held disk (serveHeld) when parkHeldSet returns.
type heldSet struct {
	db   *kvstore.DB
	s    *Server
	done chan error
	d    *heldDisk
	c    *rawConn
}

func parkHeldSet(t *testing.T) heldSet {
	t.Helper()
	h := heldSet{db: servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncAlways}), d: newHeldDisk()}
	var ln net.Listener
	h.s, ln, h.done = serveHeld(t, h.db, h.d)
	h.c = dial(t, ln.Addr().String())
	h.d.hold()
	h.c.send(set("k", "v1"))
	h.d.waitEntered(t)
	return h
}

type rawConn struct {
	t *testing.T
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, Conn: c, r: bufio.NewReader(c)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		c.t.Fatal(err)
	}
}

// line reads one reply line within d.
func (c *rawConn) line(d time.Duration) (string, error) {
	c.SetReadDeadline(time.Now().Add(d))
	return c.r.ReadString('\n')
}

func (c *rawConn) mustLine(want string) {
	c.t.Helper()
	got, err := c.line(10 * time.Second)
	if err != nil || got != want {
		c.t.Fatalf("reply %q, %v; want %q", got, err, want)
	}
}

// nothingWithin fails unless no byte arrives within d.
func (c *rawConn) nothingWithin(what string, d time.Duration) {
	c.t.Helper()
	got, err := c.line(d)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		c.t.Fatalf("%s: got %q, %v; want nothing yet", what, got, err)
	}
}

func set(key, value string) string {
	return fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(value), value)
}

func get(key string) string { return fmt.Sprintf("*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(key), key) }

// A connection whose replies are parked runs nothing else meanwhile, reads
// included, so its replies stay in request order: a GET pipelined after
// its SET is not answered before the SET.
func TestEventLoop_ParkedRepliesKeepTheirOrderOverLaterReads(t *testing.T) {
	h := parkHeldSet(t)
	d, c := h.d, h.c
	c.send(get("k") + "PING\r\n")
	c.nothingWithin("a later reply before the parked SET's", 100*time.Millisecond)
	d.letGo()
	c.mustLine("+OK\r\n")
	c.mustLine("$2\r\n")
	c.mustLine("v1\r\n")
	c.mustLine("+PONG\r\n")
}

// Shutdown, even one whose drain runs out of time, returns only once the
// parked connections' sync is done, and a parked connection's descriptor
// stays open until then (closed, its number could go to a new descriptor
// that would then get the old connection's replies): the client sees its
// reply, then the close, never the close first.
func TestEventLoop_ShutdownWaitsForAPendingSyncAndKeepsTheDescriptor(t *testing.T) {
	h := parkHeldSet(t)
	db, s, done, d, c := h.db, h.s, h.done, h.d, h.c

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		shut <- s.Shutdown(ctx)
	}()
	time.Sleep(200 * time.Millisecond) // well past the drain's deadline
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a parked sync was pending", err)
	default:
	}
	c.nothingWithin("the parked connection, while its sync is pending", 50*time.Millisecond)
	d.letGo()
	c.mustLine("+OK\r\n")
	if got, err := c.line(5 * time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("after the reply: %q, %v; want the close", got, err)
	}
	if err := <-shut; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	<-done
	done <- nil // for the cleanup
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "v1" {
		t.Fatalf("k = %q, %v after Shutdown", v, err)
	}
}

// A read on one connection sent right after another connection got a
// write's reply sees that write, round after round.
func TestEventLoop_AReadAfterAnAcknowledgedWriteSeesIt(t *testing.T) {
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncAlways})
	d := newHeldDisk()
	_, ln, _ := serveHeld(t, db, d)
	addr := ln.Addr().String()
	writer, reader := dial(t, addr), dial(t, addr)
	// Others keep the groups busy, so that writes overlap syncs.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		busy := dial(t, addr)
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				busy.send(set(fmt.Sprint("busy-", g), fmt.Sprint(i)))
				if l, err := busy.line(10 * time.Second); err != nil || l != "+OK\r\n" {
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 300 {
		v := fmt.Sprint("v", i)
		writer.send(set("k", v))
		writer.mustLine("+OK\r\n")
		reader.send(get("k"))
		reader.mustLine(fmt.Sprintf("$%d\r\n", len(v)))
		reader.mustLine(v + "\r\n")
	}
}

// Gathering a group waits only where it pays: not on a disk whose fsync
// is faster than minGatherSync, and at most half a group's wait (capped
// by maxGather) on a slower one.
func TestGatherWait_OnlyOnASlowDisk(t *testing.T) {
	for _, tc := range []struct{ sync, want time.Duration }{
		{0, 0},
		{110 * time.Microsecond, 0},
		{minGatherSync - 1, 0},
		{minGatherSync, minGatherSync / gatherShare},
		{400 * time.Microsecond, 200 * time.Microsecond},
		{2 * time.Millisecond, maxGather},
	} {
		if got := gatherWait(tc.sync); got != tc.want {
			t.Errorf("gatherWait(%v) = %v, want %v", tc.sync, got, tc.want)
		}
	}
}

// On a slow disk (every group's wait 2 ms) the loop gathers: clients that
// write one SET after another share fsyncs, far more of them per group
// than the half of the clients each fsync gets without gathering.
func TestEventLoop_ASlowDiskGathersTheWritersIntoOneGroup(t *testing.T) {
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncAlways})
	_, ln, _ := serveWithHook(t, db, Options{EventLoops: 1, Logger: servertest.Logger(t)},
		func() { time.Sleep(2 * time.Millisecond) })
	const clients, sets = 16, 60
	conns := make([]*rawConn, clients)
	for i := range conns {
		conns[i] = dial(t, ln.Addr().String())
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range sets {
				if _, err := io.WriteString(c, set(fmt.Sprintf("k%d-%d", i, j), "v")); err != nil {
					t.Error(err)
					return
				}
				if got, err := c.line(10 * time.Second); err != nil || got != "+OK\r\n" {
					t.Errorf("client %d, SET %d: %q, %v", i, j, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := db.Stats()
	perFsync := float64(st.Sets) / float64(st.Fsyncs)
	t.Logf("%d SETs, %d fsyncs: %.1f SETs per fsync", st.Sets, st.Fsyncs, perFsync)
	// Without gathering the groups alternate between two halves of the
	// clients: about clients/2 per fsync.
	if perFsync < 0.7*clients {
		t.Fatalf("%.1f SETs per fsync of %d clients on a slow disk, want at least %.1f: the loop did not gather", perFsync, clients, 0.7*clients)
	}
}
