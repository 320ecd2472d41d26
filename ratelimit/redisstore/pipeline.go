package redisstore

// A pipelined check is answered only from the reply to its own script call:
// each queued check carries its own reply channel, and the checks of one
// call get their results in the order their keys were passed.

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// maxBatch bounds the checks one worker sends at once.
const maxBatch = 128

// pendingCheck is one check waiting for a pipeline.
type pendingCheck struct {
	key    string
	args   []any // cost, number of limits, one spec per limit
	limits int
	done   chan checkReply // buffered: the worker never blocks on a caller that gave up
}

type checkReply struct {
	values []int64
	err    error
}

// batcher runs workers that send the checks queued while the previous batch
// was in flight together: all checks of one hash slot (all of them, without
// a cluster) in one script call — one dispatch and one TIME for many checks —
// and the calls for several slots in one pipeline.
type batcher struct {
	store   *Store
	cluster bool
	queue   chan *pendingCheck
	stop    chan struct{}
	wg      sync.WaitGroup
}

func newBatcher(s *Store, workers int) *batcher {
	_, cluster := s.client.(*redis.ClusterClient)
	b := &batcher{store: s, cluster: cluster, queue: make(chan *pendingCheck, workers*maxBatch), stop: make(chan struct{})}
	for i := 0; i < workers; i++ {
		b.wg.Add(1)
		go b.work()
	}
	return b
}

func (b *batcher) close() {
	close(b.stop)
	b.wg.Wait()
}

// do queues one check and waits for its reply or the end of ctx.
func (b *batcher) do(ctx context.Context, key string, args []any, limits int) ([]int64, error) {
	p := &pendingCheck{key: key, args: args, limits: limits, done: make(chan checkReply, 1)}
	select {
	case b.queue <- p:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-p.done:
		return r.values, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *batcher) work() {
	defer b.wg.Done()
	batch := make([]*pendingCheck, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case p := <-b.queue:
			batch = append(batch, p)
		case <-b.stop:
			return
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case p := <-b.queue:
				batch = append(batch, p)
			default:
				break drain
			}
		}
		b.send(batch)
	}
}

// call is one script call: checks of one hash slot.
type call struct {
	checks []*pendingCheck
	keys   []string
	args   []any
}

func (b *batcher) send(batch []*pendingCheck) {
	ctx, cancel := context.WithTimeout(context.Background(), ClientTimeout)
	defer cancel()
	s := b.store
	now := s.nowArg()
	var calls []*call
	if b.cluster {
		bySlot := make(map[uint16]*call)
		for _, p := range batch {
			sl := slot(p.key)
			c := bySlot[sl]
			if c == nil {
				c = &call{args: []any{now, 0}}
				bySlot[sl] = c
				calls = append(calls, c)
			}
			c.add(p)
		}
	} else {
		c := &call{args: make([]any, 2, 2+len(batch)*3)}
		c.args[0] = now
		for _, p := range batch {
			c.add(p)
		}
		calls = append(calls, c)
	}
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 1 {
		cmds[0] = s.client.EvalSha(ctx, s.check.Hash(), calls[0].keys, calls[0].args...)
	} else {
		pipe := s.client.Pipeline()
		for i, c := range calls {
			cmds[i] = pipe.EvalSha(ctx, s.check.Hash(), c.keys, c.args...)
		}
		pipe.Exec(ctx) // errors are per command
	}
	for i, c := range calls {
		cmd := cmds[i]
		if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			// The server does not know the script yet: EVAL loads it.
			cmd = s.check.Eval(ctx, s.client, c.keys, c.args...)
		}
		values, err := cmd.Int64Slice()
		c.deliver(values, err)
	}
}

func (c *call) add(p *pendingCheck) {
	c.checks = append(c.checks, p)
	c.keys = append(c.keys, p.key)
	c.args = append(c.args, p.args...)
	c.args[1] = len(c.checks)
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
