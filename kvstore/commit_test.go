package kvstore

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLog is a commitEnv that records what the pipeline asks of it, in
// order, and checks the pipeline's invariant as it goes.
type fakeLog struct {
	t  *testing.T
	mu sync.Mutex

	written, synced, applied uint64 // last seq at each stage
	groups                   int
	events                   []string
	inGroup                  atomic.Bool // a write..apply is in progress
	afterCommits             atomic.Int64
	failSyncAt               uint64        // sync of the group holding this seq fails
	syncGate                 chan struct{} // when set, each sync waits for a value
	takeLeadAfterCommit      bool
	whileExclusiveWaits      int // groups written while an exclusive() caller waited
	pipe                     *commitPipeline
}

func (f *fakeLog) write(g *group) error {
	if !f.inGroup.CompareAndSwap(false, true) {
		f.t.Error("two groups written at once")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pipe != nil {
		f.pipe.mu.Lock()
		if f.pipe.exclusiveWaiting > 0 {
			f.whileExclusiveWaits++
		}
		f.pipe.mu.Unlock()
	}
	first := g.muts[0].seq
	if first != f.written+1 {
		f.t.Errorf("group starting at seq %d written after seq %d: out of log order", first, f.written)
	}
	f.written = g.last
	f.events = append(f.events, fmt.Sprintf("write %d..%d", first, g.last))
	return nil
}

func (f *fakeLog) sync(g *group) error {
	if f.syncGate != nil {
		<-f.syncGate
	} else {
		time.Sleep(50 * time.Microsecond) // an fsync takes time: writers gather meanwhile
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSyncAt != 0 && g.muts[0].seq <= f.failSyncAt && f.failSyncAt <= g.last {
		f.inGroup.Store(false)
		return errors.New("injected fsync failure")
	}
	f.synced = g.last
	return nil
}

func (f *fakeLog) apply(g *group) {
	f.mu.Lock()
	if f.synced != g.last {
		f.t.Errorf("group ..%d applied before it was synced (synced up to %d)", g.last, f.synced)
	}
	f.applied = g.last
	f.groups++
	f.mu.Unlock()
	f.inGroup.Store(false)
}

func (f *fakeLog) afterCommit() {
	if f.takeLeadAfterCommit {
		// What compaction does: take the log. Called inside the lead, it
		// would wait for itself forever.
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				f.t.Error("afterCommit could not take the lead: it runs inside a group write")
			}
		}()
		_ = f.pipe.exclusive(func() error {
			if f.inGroup.Load() {
				f.t.Error("a group write is in progress inside an exclusive section")
			}
			return nil
		})
		close(done)
	}
	f.afterCommits.Add(1)
}

func (f *fakeLog) state() (written, synced, applied uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.written, f.synced, f.applied
}

func newFakePipeline(t *testing.T) (*commitPipeline, *fakeLog) {
	f := &fakeLog{t: t}
	p := newCommitPipeline(f, 1)
	f.pipe = p
	return p, f
}

// put enqueues a one-key set of key=value.
func put(p *commitPipeline, key, value string) (*group, uint64, error) {
	var got uint64
	g, err := p.enqueue(func(g *group, seq uint64) error {
		got = seq
		g.addSet(seq, []byte(key), []byte(value), 0)
		return nil
	})
	return g, got, err
}

func TestCommitPipeline_WriteIsAcknowledgedOnlyAfterItsGroupIsSyncedAndApplied(t *testing.T) {
	p, f := newFakePipeline(t)
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				g, seq, err := put(p, fmt.Sprintf("w%d", w), fmt.Sprint(i))
				if err != nil {
					t.Error(err)
					return
				}
				if err := p.wait(g); err != nil {
					t.Error(err)
					return
				}
				if _, synced, applied := f.state(); synced < seq || applied < seq {
					t.Errorf("seq %d acknowledged with synced=%d applied=%d", seq, synced, applied)
					return
				}
			}
		}()
	}
	wg.Wait()
	if w, s, a := f.state(); w != 32*200 || s != w || a != w {
		t.Fatalf("written %d synced %d applied %d, want %d each", w, s, a, 32*200)
	}
	if f.groups >= 32*200 {
		t.Fatalf("%d groups for %d concurrent writes: nothing was grouped", f.groups, 32*200)
	}
	p.mu.Lock()
	w, pending := p.pendingWrite([]byte("w0"))
	p.mu.Unlock()
	if pending {
		t.Fatalf("a write of w0 still pending after every group applied: %+v", w)
	}
}

// enqueueOp enqueues one record that encode appends (a delete, a flush).
func enqueueOp(t *testing.T, p *commitPipeline, encode func(g *group, seq uint64)) *group {
	t.Helper()
	g, err := p.enqueue(func(g *group, seq uint64) error { encode(g, seq); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A transaction's view of what is enqueued and not yet applied spans the
// group being written (held in its fsync here) and the open one: the
// newest write of a key wins, a delete reads as a delete, and a flush in
// the open group hides what came before it in both.
func TestCommitPipeline_PendingWritesAcrossTheWrittenAndTheOpenGroup(t *testing.T) {
	p, f := newFakePipeline(t)
	f.syncGate = make(chan struct{})
	var first *group
	for _, kv := range [][2]string{{"k1", "a1"}, {"k2", "a2"}, {"k3", "a3"}, {"k1", "a1'"}} {
		g, _, err := put(p, kv[0], kv[1])
		if err != nil {
			t.Fatal(err)
		}
		first = g
	}
	done := make(chan error, 1)
	go func() { done <- p.wait(first) }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		taken := p.writing == first
		p.mu.Unlock()
		if taken {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first group was not taken for writing")
		}
	}
	second, _, err := put(p, "k1", "b1")
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatal("a write joined the group being written")
	}
	enqueueOp(t, p, func(g *group, seq uint64) { g.addDelete(seq, []byte("k2")) })
	look := func(key string) string {
		p.mu.Lock()
		defer p.mu.Unlock()
		w, ok := p.pendingWrite([]byte(key))
		switch {
		case !ok:
			return "-"
		case w.flushed:
			return "flushed"
		case w.del:
			return "deleted"
		}
		return string(w.value)
	}
	for key, want := range map[string]string{"k1": "b1", "k2": "deleted", "k3": "a3", "k4": "-"} {
		if got := look(key); got != want {
			t.Errorf("before the flush, %s: %s, want %s", key, got, want)
		}
	}
	enqueueOp(t, p, func(g *group, seq uint64) { g.addFlush(seq) })
	if _, _, err := put(p, "k5", "b5"); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"k1": "flushed", "k2": "flushed", "k3": "flushed", "k5": "b5"} {
		if got := look(key); got != want {
			t.Errorf("after the flush, %s: %s, want %s", key, got, want)
		}
	}
	f.syncGate <- struct{}{} // the first group
	// The leader goes on to write the second group (held in its fsync).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		applied := first.finished
		p.mu.Unlock()
		if applied {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first group was not applied")
		}
	}
	if got := look("k3"); got != "flushed" {
		t.Errorf("first group applied, k3: %s, want flushed (the open group's flush is still pending)", got)
	}
	f.syncGate <- struct{}{} // the second group
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := p.wait(second); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"k1", "k2", "k3", "k5"} {
		if got := look(key); got != "-" {
			t.Errorf("every group applied, %s: %s pending, want nothing", key, got)
		}
	}
}

func TestCommitPipeline_WaiterIsHeldUntilTheSyncCompletes(t *testing.T) {
	p, f := newFakePipeline(t)
	f.syncGate = make(chan struct{})
	g, _, err := put(p, "k", "v")
	if err != nil {
		t.Fatal(err)
	}
	acked := make(chan error, 1)
	go func() { acked <- p.wait(g) }()
	select {
	case err := <-acked:
		t.Fatalf("acknowledged (%v) while its fsync had not returned", err)
	case <-time.After(50 * time.Millisecond):
	}
	f.syncGate <- struct{}{}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
}

func TestCommitPipeline_NoSyncWaitBurstIsLoggedInCallOrderAndOneWaitCoversIt(t *testing.T) {
	p, f := newFakePipeline(t)
	var last *group
	for i := 0; i < 1000; i++ {
		g, seq, err := put(p, fmt.Sprintf("k%d", i), "v")
		if err != nil {
			t.Fatal(err)
		}
		if seq != uint64(i+1) {
			t.Fatalf("call %d got seq %d: not in call order", i, seq)
		}
		last = g
	}
	if w, _, _ := f.state(); w != 0 {
		t.Fatalf("%d records written before anyone waited", w)
	}
	if err := p.wait(last); err != nil {
		t.Fatal(err)
	}
	if _, _, a := f.state(); a != 1000 {
		t.Fatalf("one wait for the last of the burst applied up to %d, want 1000", a)
	}
}

func TestCommitPipeline_FailedSyncFailsItsGroupAndEveryLaterOneAndNothingIsApplied(t *testing.T) {
	p, f := newFakePipeline(t)
	f.failSyncAt = 3
	var groups []*group
	for i := 0; i < 6; i++ {
		g, _, err := put(p, fmt.Sprint(i), "v")
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			// Seal 1..2 as their own group, so 3.. are later groups.
			if err := p.wait(g); err != nil {
				t.Fatal(err)
			}
		}
		groups = append(groups, g)
	}
	for i, g := range groups[2:] {
		if err := p.wait(g); err == nil {
			t.Fatalf("write %d acknowledged after the fsync of its group failed", i+3)
		}
	}
	if _, _, a := f.state(); a != 2 {
		t.Fatalf("applied up to %d, want 2 (nothing after the failed sync)", a)
	}
	if _, _, err := put(p, "later", "v"); err == nil {
		t.Fatal("the pipeline took a write after a failed sync")
	}
}

func TestCommitPipeline_AfterCommitRunsOutsideTheGroupWrite(t *testing.T) {
	p, f := newFakePipeline(t)
	f.takeLeadAfterCommit = true
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				g, _, err := put(p, "k", "v")
				if err == nil {
					err = p.wait(g)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if f.afterCommits.Load() == 0 {
		t.Fatal("afterCommit never ran")
	}
}

func TestCommitPipeline_ExclusiveRunsBetweenGroupsAndWritersKeepEnqueueing(t *testing.T) {
	p, f := newFakePipeline(t)
	release := make(chan struct{})
	inside := make(chan struct{})
	go p.exclusive(func() error {
		close(inside)
		<-release
		return nil
	})
	<-inside
	g, _, err := put(p, "k", "v") // enqueueing does not wait for the exclusive section
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.wait(g) }()
	time.Sleep(20 * time.Millisecond)
	if w, _, _ := f.state(); w != 0 {
		t.Fatal("a group was written during an exclusive section")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestCommitPipeline_CloseWritesWhatWasEnqueuedAndRefusesMore(t *testing.T) {
	p, f := newFakePipeline(t)
	for i := 0; i < 10; i++ {
		if _, _, err := put(p, "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	if _, _, a := f.state(); a != 10 {
		t.Fatalf("close applied up to %d, want 10", a)
	}
	if _, _, err := put(p, "k", "v"); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v, want ErrClosed", err)
	}
}

func TestCommitPipeline_ExclusiveGoesBeforeTheNextGroupUnderAStreamOfWriters(t *testing.T) {
	p, f := newFakePipeline(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				g, _, err := put(p, "k", "v")
				if err == nil {
					err = p.wait(g)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	groups := func() int { f.mu.Lock(); defer f.mu.Unlock(); return f.groups }
	for groups() < 100 {
		time.Sleep(time.Millisecond)
	}
	const calls = 50
	for i := 0; i < calls; i++ {
		_ = p.exclusive(func() error { return nil })
	}
	close(stop)
	wg.Wait()
	// Each call waits for the group being written when it arrives, and at
	// most the leader's own group after it, never for a stream of groups.
	f.mu.Lock()
	n := f.whileExclusiveWaits
	f.mu.Unlock()
	if n > 2*calls {
		t.Fatalf("%d groups were written while %d exclusive calls waited: writers starve it", n, calls)
	}
}
