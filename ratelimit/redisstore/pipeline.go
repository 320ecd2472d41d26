package redisstore

// A pipelined check is answered only from the reply to its own script call:
// each queued check carries its own reply channel, and the checks of one
// call get their results in the order their keys were passed. A check whose
// caller has already given up is not sent, and a batch is sent under the
// latest deadline of the checks in it, so no caller's budget is cut short by
// another's and none is stretched past its own (each waits on its own ctx).

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxBatch bounds the checks one script call carries.
const maxBatch = 128

// DefaultPipeline is the number of batches in flight at once when
// Options.Pipeline is zero.
const DefaultPipeline = 4

// pendingCheck is one check, sent alone or waiting for a pipeline.
type pendingCheck struct {
	ctx context.Context
	// key is the identity key (check.lua) or the window key (lean_fw.lua,
	// when lean).
	key  string
	kind uint8 // kindGeneral, kindLeanFW, kindLeanGCRA
	// plain: sent alone, the lean check needs no script (countPlain).
	plain bool
	entry *specEntry // the lean limit's, for countPlain
	// args are the whole script call's for this check alone: for
	// check.lua now, 1, then the check's own (cost, number of limits, one
	// spec per limit); for lean_fw.lua 1, then cost, rate, period, block.
	args   []any
	limits int
	done   chan checkReply // buffered: the sender never blocks on a caller that gave up
}

// own is the check's part of a batched call's arguments.
func (p *pendingCheck) own() []any {
	if p.kind != kindGeneral {
		return p.args[1:]
	}
	return p.args[2:]
}

type checkReply struct {
	values []int64
	err    error
}

// batcher sends checks without a goroutine of its own at rest: a check that
// finds fewer than `inflight` batches on the wire is sent at once, by its
// own goroutine (no added latency at low load); the others queue, and the
// sender that finishes first takes the whole queue as the next batch — all
// checks of one hash slot (all of them, without a cluster) in one script
// call per script, one dispatch and one TIME for many checks, and the calls
// for several slots in one pipeline.
type batcher struct {
	store    *Store
	cluster  bool
	inflight int

	mu      sync.Mutex
	senders int
	queue   []*pendingCheck
}

func newBatcher(s *Store, inflight int) *batcher {
	_, cluster := s.client.(*redis.ClusterClient)
	return &batcher{store: s, cluster: cluster, inflight: inflight}
}

var replyChans = sync.Pool{New: func() any { return make(chan checkReply, 1) }}

// do sends one check, alone or in a batch, and waits for its reply or the
// end of ctx. p is copied to the heap only when it queues.
func (b *batcher) do(ctx context.Context, p pendingCheck) ([]int64, error) {
	b.mu.Lock()
	if b.senders < b.inflight {
		// Fewer batches than allowed are on the wire: this check goes alone,
		// now, under its caller's context, as an unbatched store would.
		b.senders++
		b.mu.Unlock()
		s := b.store
		var values []int64
		var err error
		if p.plain {
			values, err = s.countPlain(ctx, p.key, p.entry, p.args)
		} else {
			values, err = s.run(ctx, 1, s.script(p.kind), []string{p.key}, p.args...).Int64Slice()
		}
		b.next()
		return values, err
	}
	q := &pendingCheck{ctx: p.ctx, key: p.key, kind: p.kind, args: p.args, limits: p.limits, done: replyChans.Get().(chan checkReply)}
	b.queue = append(b.queue, q)
	b.mu.Unlock()
	select {
	case r := <-q.done:
		replyChans.Put(q.done)
		return r.values, r.err
	case <-ctx.Done():
		// A reply that came while this goroutine waited for a CPU is the
		// store's answer all the same: it wins over the end of ctx.
		select {
		case r := <-q.done:
			replyChans.Put(q.done)
			return r.values, r.err
		default:
		}
		// The channel may still receive the reply: it is not reused.
		return nil, ctx.Err()
	}
}

// next hands the queue, if any, to a new sender; otherwise this sender ends.
func (b *batcher) next() {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.senders--
		b.mu.Unlock()
		return
	}
	batch := b.take()
	b.mu.Unlock()
	go func() {
		for {
			b.send(batch)
			b.mu.Lock()
			if len(b.queue) == 0 {
				b.senders--
				b.mu.Unlock()
				return
			}
			batch = b.take()
			b.mu.Unlock()
		}
	}()
}

// take removes up to maxBatch checks from the queue; b.mu is held.
func (b *batcher) take() []*pendingCheck {
	n := min(len(b.queue), maxBatch)
	batch := make([]*pendingCheck, n)
	copy(batch, b.queue)
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	return batch
}

// call is one script call: checks of one hash slot and one kind.
type call struct {
	kind   uint8
	checks []*pendingCheck
	keys   []string
	args   []any
}

func newCall(kind uint8, now int64, size int) *call {
	c := &call{kind: kind, checks: make([]*pendingCheck, 0, size), keys: make([]string, 0, size)}
	if kind != kindGeneral {
		c.args = make([]any, 1, 1+size*4)
	} else {
		c.args = make([]any, 2, 2+size*3)
		c.args[0] = now
	}
	return c
}

// batchContext is the latest deadline of the live checks of a batch (a
// caller without one counts as ClientTimeout); live are the checks whose
// callers still wait, the others get their context's error.
func batchContext(batch []*pendingCheck) (ctx context.Context, cancel context.CancelFunc, live []*pendingCheck) {
	var latest time.Time
	live = batch[:0]
	for _, p := range batch {
		if p.ctx.Err() != nil {
			p.done <- checkReply{nil, p.ctx.Err()}
			continue
		}
		live = append(live, p)
		d, ok := p.ctx.Deadline()
		if !ok {
			d = time.Now().Add(ClientTimeout)
		}
		if d.After(latest) {
			latest = d
		}
	}
	ctx, cancel = context.WithDeadline(context.Background(), latest)
	return ctx, cancel, live
}

func (b *batcher) send(batch []*pendingCheck) {
	ctx, cancel, batch := batchContext(batch)
	defer cancel()
	if len(batch) == 0 {
		return
	}
	s := b.store
	now := s.nowArg()
	var calls []*call
	if b.cluster {
		type slotScript struct {
			slot uint16
			kind uint8
		}
		bySlot := make(map[slotScript]*call)
		for _, p := range batch {
			k := slotScript{slot(p.key), p.kind}
			c := bySlot[k]
			if c == nil {
				c = newCall(p.kind, now, 1)
				bySlot[k] = c
				calls = append(calls, c)
			}
			c.add(p)
		}
	} else {
		var byKind [3]*call
		for _, p := range batch {
			c := &byKind[p.kind]
			if *c == nil {
				*c = newCall(p.kind, now, len(batch))
				calls = append(calls, *c)
			}
			(*c).add(p)
		}
	}
	if !b.cluster || len(calls) == 1 {
		b.exec(ctx, calls)
		return
	}
	// One pipeline per master, each delivered as soon as it is answered: a
	// dead or slow master (and go-redis's retries towards it) never holds
	// back the answers of the healthy ones.
	byNode := map[string][]*call{}
	var nodes []string
	for _, c := range calls {
		node := s.nodeOf(ctx, c.keys[0])
		if _, ok := byNode[node]; !ok {
			nodes = append(nodes, node)
		}
		byNode[node] = append(byNode[node], c)
	}
	if len(nodes) == 1 {
		b.exec(ctx, calls)
		return
	}
	var wg sync.WaitGroup
	for _, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.exec(ctx, byNode[node])
		}()
	}
	wg.Wait()
}

// exec sends calls in one round trip (a pipeline when several) and
// delivers their replies.
func (b *batcher) exec(ctx context.Context, calls []*call) {
	s := b.store
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 1 && s.waitReplicas == 0 {
		cmds[0] = s.client.EvalSha(ctx, calls[0].script(s).Hash(), calls[0].keys, calls[0].args...)
	} else {
		pipe := s.client.Pipeline()
		for i, c := range calls {
			cmds[i] = pipe.EvalSha(ctx, c.script(s).Hash(), c.keys, c.args...)
		}
		wait := s.waitAfter(ctx, pipe) // after every write of the batch
		_, _ = pipe.Exec(ctx)          // errors are per command
		written := 0                   // the checks of the calls that ran
		for i, c := range calls {
			if cmds[i].Err() == nil {
				written += len(c.checks)
			}
		}
		s.waited(wait, written)
	}
	for i, c := range calls {
		cmd := cmds[i]
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			// The server does not know the script yet: EVAL loads it.
			cmd = s.run(ctx, len(c.checks), c.script(s), c.keys, c.args...)
		}
		values, err := cmd.Int64Slice()
		c.deliver(values, err)
	}
}

// script is the call's script.
func (c *call) script(s *Store) *redis.Script { return s.script(c.kind) }

func (c *call) add(p *pendingCheck) {
	c.checks = append(c.checks, p)
	c.args = append(c.args, p.own()...)
	c.keys = append(c.keys, p.key)
	if c.kind != kindGeneral {
		c.args[0] = len(c.checks)
	} else {
		c.args[1] = len(c.checks)
	}
}

// deliver hands every check its slice of the call's reply: 5 values per limit.
func (c *call) deliver(values []int64, err error) {
	off := 0
	for _, p := range c.checks {
		if err != nil {
			p.done <- checkReply{nil, err}
			continue
		}
		n := 5 * p.limits
		if off+n > len(values) {
			p.done <- checkReply{values[off:], nil} // the caller reports the short reply
			off = len(values)
			continue
		}
		p.done <- checkReply{values[off : off+n : off+n], nil}
		off += n
	}
}
