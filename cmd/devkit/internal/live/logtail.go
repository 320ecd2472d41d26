package live

// A LogTail holds the last lines of one process's log, read through the
// supervisor's FollowLog (which follows truncation and rotation as `sup
// logs -f` does). Every line gets a sequence number, increasing and never
// reused within one LogTail, so a reader can ask for what came after the
// last line it saw (the web view's Last-Event-ID).

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/devkit-go/devkit/supervisor"
)

// Line is one log line.
type Line struct {
	Seq  uint64 `json:"seq"`
	Text string `json:"text"`
}

// maxLine bounds one line held: a process that writes megabytes without a
// newline costs the view this much, not the whole run.
const maxLine = 16 << 10

// LogTail is a bounded, live tail of one log.
type LogTail struct {
	name string
	size int

	mu      sync.Mutex
	lines   []Line // the last size lines, oldest first
	next    uint64 // Seq of the next line
	partial []byte
	changed chan struct{} // closed and replaced on every new line
	err     error
}

// FollowLog tails the last size lines of name's log and keeps following
// until ctx ends. A log that does not exist yet is waited for.
func FollowLog(ctx context.Context, sup *supervisor.Supervisor, name string, size int) *LogTail {
	t := NewLogTail(name, size)
	go func() {
		for ctx.Err() == nil {
			err := sup.FollowLog(ctx, name, size, supervisor.LogFilter{}, t)
			if ctx.Err() != nil {
				return
			}
			t.setErr(err)
			select { // not there yet, or gone with a reload: look again
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return t
}

// NewLogTail returns an empty tail of size lines that its Write fills.
func NewLogTail(name string, size int) *LogTail {
	return &LogTail{name: name, size: max(size, 1), next: 1, changed: make(chan struct{})}
}

// Name is the process whose log this is.
func (t *LogTail) Name() string { return t.name }

// Write takes log bytes and splits them into lines (io.Writer, for
// FollowLog).
func (t *LogTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.err = nil
	rest := p
	added := false
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			room := maxLine - len(t.partial)
			t.partial = append(t.partial, rest[:min(len(rest), max(room, 0))]...)
			break
		}
		line := append(t.partial, rest[:i]...)
		t.partial = nil
		rest = rest[i+1:]
		t.add(string(bytes.TrimRight(line[:min(len(line), maxLine)], "\r")))
		added = true
	}
	if added {
		close(t.changed)
		t.changed = make(chan struct{})
	}
	return len(p), nil
}

func (t *LogTail) add(text string) {
	if len(t.lines) == t.size {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:t.size-1]
	}
	t.lines = append(t.lines, Line{Seq: t.next, Text: text})
	t.next++
}

func (t *LogTail) setErr(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.err = err
}

// Err is why the log cannot be followed now (nil while it is).
func (t *LogTail) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Lines returns a copy of the lines held, oldest first.
func (t *LogTail) Lines() []Line { return t.Since(0) }

// Since returns the lines held with Seq greater than seq, oldest first.
func (t *LogTail) Since(seq uint64) []Line {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := 0
	for i < len(t.lines) && t.lines[i].Seq <= seq {
		i++
	}
	return append([]Line(nil), t.lines[i:]...)
}

// Changed returns a channel closed when a line arrives after the call.
func (t *LogTail) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}
