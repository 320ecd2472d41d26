package resp

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// Under SyncAlways every SET waits for an fsync, and a connection's commands
// run one after another, so a pipeline of N SETs would cost N fsyncs in a
// row. A run of pipelined SETs on distinct keys is instead committed
// concurrently: the writes join the engine's group commit and share fsyncs.
//
// Invariant: the replies still leave in command order and only after every
// write of the run was acknowledged; a run never holds two writes to one
// key, so the order between writes to a key is the order they were sent.

// maxSetRun bounds the SETs committed together from one connection.
const maxSetRun = 128

// isPlainSet reports whether args is SET key value (no options).
func isPlainSet(args [][]byte) bool {
	return len(args) == 3 && len(args[0]) == 3 && bytes.EqualFold(args[0], []byte("SET"))
}

// pendingSet is one SET of a run, its arguments copied out of the reader.
type pendingSet struct {
	key, value []byte
	start      time.Time
	err        error
}

// executeSetRun gathers the SETs already buffered after first, commits them
// together and writes their replies. It returns a command read on the way
// that is not part of the run (to execute next), or a read error.
func (s *Server) executeSetRun(cl *client, in *commandReader, first [][]byte) (held [][]byte, err error) {
	run := []pendingSet{{key: bytes.Clone(first[1]), value: bytes.Clone(first[2]), start: time.Now()}}
	keys := map[string]struct{}{string(first[1]): {}}
	// Only whole commands already received join: gathering never waits
	// for the network, so no write is held back by a slow sender.
	for len(run) < maxSetRun && in.hasWholeCommand() && !cl.conn.Draining() {
		args, rerr := in.readCommand()
		if rerr != nil {
			err = rerr
			break
		}
		if len(args) == 0 {
			continue
		}
		if isPlainSet(args) {
			if _, dup := keys[string(args[1])]; !dup {
				keys[string(args[1])] = struct{}{}
				run = append(run, pendingSet{key: bytes.Clone(args[1]), value: bytes.Clone(args[2]), start: time.Now()})
				continue
			}
		}
		held = make([][]byte, len(args))
		for i, a := range args {
			held[i] = bytes.Clone(a)
		}
		break
	}
	s.commitRun(cl, run)
	return held, err
}

// setAll runs the SETs (on distinct keys) concurrently and records each
// one's error; it returns once every one is acknowledged or failed.
func (s *Server) setAll(cl *client, run []pendingSet) {
	if len(run) == 1 {
		run[0].err = s.safeSet(cl, run[0].key, run[0].value)
		return
	}
	var wg sync.WaitGroup
	for i := range run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run[i].err = s.safeSet(cl, run[i].key, run[i].value)
		}()
	}
	wg.Wait()
}

// commitRun runs the SETs concurrently and replies in order.
func (s *Server) commitRun(cl *client, run []pendingSet) {
	s.setAll(cl, run)
	for _, p := range run {
		switch {
		case errors.Is(p.err, errInternal):
			cl.out.error("ERR internal error")
		case p.err != nil:
			engineError(&cl.out, p.err)
		default:
			cl.out.ok()
		}
		s.commands.Add(1)
		s.opts.Metrics.Request(metrics.RESP, metrics.OpSet, p.start, p.err != nil)
	}
}

// errInternal stands for a panic recovered while serving a command.
var errInternal = errors.New("internal error")

// safeSet is store.Set with a panic turned into errInternal: it runs on
// goroutines of its own, where a panic would end the process.
func (s *Server) safeSet(cl *client, key, value []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			cl.log.Error("command panicked", "command", "SET", "panic", fmt.Sprint(p))
			err = errInternal
		}
	}()
	return s.store.Set(key, value)
}
