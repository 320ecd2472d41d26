package redisstore

// A pipelined check is answered only from the reply to its own command: each
// queued check carries its own reply channel, and a batch's replies are
// delivered in the order the commands were queued in the pipeline.

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// maxBatch bounds the checks sent in one pipeline.
const maxBatch = 128

// pendingCheck is one check waiting for a pipeline.
type pendingCheck struct {
	key  string
	args []any
	done chan checkReply // buffered: the worker never blocks on a caller that gave up
}

type checkReply struct {
	values []int64
	err    error
}

// batcher runs workers that send the checks queued while the previous
// pipeline was in flight as one pipeline: fewer round trips and syscalls
// per check under concurrency.
type batcher struct {
	store *Store
	queue chan *pendingCheck
	stop  chan struct{}
	wg    sync.WaitGroup
}

func newBatcher(s *Store, workers int) *batcher {
	b := &batcher{store: s, queue: make(chan *pendingCheck, workers*maxBatch), stop: make(chan struct{})}
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
func (b *batcher) do(ctx context.Context, key string, args []any) ([]int64, error) {
	p := &pendingCheck{key: key, args: args, done: make(chan checkReply, 1)}
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
	cmds := make([]*redis.Cmd, 0, maxBatch)
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
		b.send(batch, cmds[:0])
	}
}

func (b *batcher) send(batch []*pendingCheck, cmds []*redis.Cmd) {
	ctx, cancel := context.WithTimeout(context.Background(), ClientTimeout)
	defer cancel()
	s := b.store
	pipe := s.client.Pipeline()
	for _, p := range batch {
		cmds = append(cmds, pipe.EvalSha(ctx, s.check.Hash(), []string{p.key}, p.args...))
	}
	pipe.Exec(ctx) // errors are per command
	for i, p := range batch {
		err := cmds[i].Err()
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			// The server does not know the script yet: EVAL loads it.
			values, err := s.check.Run(ctx, s.client, []string{p.key}, p.args...).Int64Slice()
			p.done <- checkReply{values, err}
			continue
		}
		values, err := cmds[i].Int64Slice()
		p.done <- checkReply{values, err}
	}
}
