package policy

// A policy file is applied only when its writer is done with it: when the
// file is closed after writing or a new one is renamed into place (Linux:
// inotify's IN_CLOSE_WRITE and IN_MOVED_TO), or, on systems that do not
// say when a writer closes, when no change has come for the settle
// interval (fsnotify's events); where no events can be had, when a poll
// finds the same new content twice in a row. A writer that keeps the file
// open and pauses between two writes therefore never has its first half
// applied on Linux. What is applied must parse; otherwise the old policy
// stays and the error is reported.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"time"
)

// Defaults of WatchOptions.
const (
	DefaultWatchInterval = 2 * time.Second
	DefaultWatchSettle   = time.Second
)

// WatchOptions configure Watch.
type WatchOptions struct {
	// Interval is how often the file is polled where no file events can
	// be had (default DefaultWatchInterval).
	Interval time.Duration
	// Settle is how long a change must be followed by no other before it
	// is applied, where the system does not say when a writer closes the
	// file (default DefaultWatchSettle).
	Settle time.Duration
	// Reload, when not nil, forces a re-read on each receive (SIGHUP).
	Reload <-chan struct{}
	// OnChange receives the policy in force and the one replacing it.
	OnChange func(old, p *Policy)
	// OnError receives what prevented a reload (the old policy stays).
	OnError func(error)
}

// fileEvent is a change of the watched file: done when its writer is
// known to be done (closed after writing, renamed into place).
type fileEvent struct{ done bool }

// Watch follows the policy file at path until ctx ends and calls OnChange
// with each new policy that differs from the one in force and parses.
func Watch(ctx context.Context, path string, current *Policy, opts WatchOptions) {
	if opts.Interval <= 0 {
		opts.Interval = DefaultWatchInterval
	}
	if opts.Settle <= 0 {
		opts.Settle = DefaultWatchSettle
	}
	w := &watcher{path: path, current: current, last: current.Digest, opts: opts}
	events, err := watchFile(ctx, path)
	var poll <-chan time.Time
	if err != nil {
		opts.OnError(fmt.Errorf("policy: no file events for %s (%w): polling every %v", path, err, opts.Interval))
		tick := time.NewTicker(opts.Interval)
		defer tick.Stop()
		poll = tick.C
	}
	if err == nil {
		// A change made before the watch began has no event of its own.
		w.load(false)
	}
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			if ev.done {
				settle.Stop()
				w.load(false)
			} else {
				settle.Reset(opts.Settle)
			}
		case <-settle.C:
			w.load(false)
		case <-opts.Reload:
			w.load(true)
		case <-poll:
			w.poll()
		}
	}
}

type watcher struct {
	path    string
	current *Policy
	last    [sha256.Size]byte // the content last applied (or refused)
	pending *[sha256.Size]byte
	opts    WatchOptions
}

// load reads the file and applies it if it changed (or force) and parses.
func (w *watcher) load(force bool) {
	data, err := os.ReadFile(w.path)
	if err != nil {
		w.opts.OnError(err)
		return
	}
	w.apply(data, sha256.Sum256(data), force)
}

func (w *watcher) apply(data []byte, sum [sha256.Size]byte, force bool) {
	if !force && bytes.Equal(sum[:], w.last[:]) {
		return
	}
	w.last = sum
	p, err := Parse(w.path, data)
	if err != nil {
		w.opts.OnError(err)
		return
	}
	old := w.current
	w.current = p
	w.opts.OnChange(old, p)
}

// poll applies new content once two polls in a row found it unchanged.
func (w *watcher) poll() {
	data, err := os.ReadFile(w.path)
	if err != nil {
		w.opts.OnError(err)
		return
	}
	sum := sha256.Sum256(data)
	if bytes.Equal(sum[:], w.last[:]) {
		w.pending = nil
		return
	}
	if w.pending == nil || *w.pending != sum {
		w.pending = &sum
		return
	}
	w.pending = nil
	w.apply(data, sum, false)
}
