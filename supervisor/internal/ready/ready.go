// Package ready probes whether a started process is ready: a TCP port that
// accepts, an HTTP URL that answers 2xx, a command that exits 0, or a line
// in the process's log that matches a pattern.
package ready

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

// ErrNoHTTPProbes is what an HTTP probe gives in a build without them
// (HTTPProbes false).
var ErrNoHTTPProbes = errors.New("this monitor is built without HTTP probes (tag devkit_sup_monitor)")

// attemptTimeout bounds one probe attempt.
const attemptTimeout = time.Second

// Probe is one readiness check; Check returns nil when ready.
type Probe interface {
	Check(ctx context.Context) error
}

// TCP is ready when Addr accepts a connection.
type TCP struct{ Addr string }

// Check dials Addr.
func (p TCP) Check(ctx context.Context) error {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", p.Addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// Exec is ready when Command, run by the system shell, exits 0.
type Exec struct {
	Command string
	Dir     string
	Env     []string
	// Run, when set, runs the command and returns its combined output (a
	// process that reaps its children itself — a monitor — cannot let
	// exec.Cmd wait); nil means cmd.CombinedOutput.
	Run func(ctx context.Context, cmd *exec.Cmd) ([]byte, error)
}

// Check runs the command once.
func (p Exec) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	shell, args := proc.ShellCommand(p.Command)
	var out []byte
	var err error
	if p.Run != nil {
		cmd := exec.Command(shell, args...)
		cmd.Dir, cmd.Env = p.Dir, p.Env
		out, err = p.Run(ctx, cmd)
	} else {
		cmd := exec.CommandContext(ctx, shell, args...)
		cmd.Dir, cmd.Env = p.Dir, p.Env
		out, err = cmd.CombinedOutput()
	}
	if err != nil {
		return fmt.Errorf("%q: %w: %s", p.Command, err, trim(out))
	}
	return nil
}

// Log is ready when a line written to Path after Offset matches Pattern.
// Each Check reads only what was appended since the previous one (plus the
// unfinished last line), so waiting on a large, busy log costs what is
// written, not what is there.
type Log struct {
	Path    string
	Offset  int64
	Pattern *regexp.Regexp

	pos     int64  // where the next Check reads from; 0 until the first
	started bool   // pos is valid
	carry   []byte // the unfinished line at pos
}

// maxCarry bounds the unfinished line kept between checks.
const maxCarry = 64 << 10

// Check reads what was appended since the last check.
func (p *Log) Check(ctx context.Context) error {
	f, err := os.Open(p.Path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !p.started {
		p.pos, p.started = p.Offset, true
	}
	if fi.Size() < p.pos { // rotated or truncated since
		p.pos, p.carry = 0, nil
	}
	data := make([]byte, len(p.carry), len(p.carry)+int(fi.Size()-p.pos))
	copy(data, p.carry)
	data = data[:cap(data)]
	n, err := f.ReadAt(data[len(p.carry):], p.pos)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	data = data[:len(p.carry)+n]
	p.pos += int64(n)
	if p.Pattern.Match(data) {
		return nil
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[i+1:]
	}
	if len(data) > maxCarry {
		data = data[len(data)-maxCarry:]
	}
	p.carry = append(p.carry[:0], data...)
	return fmt.Errorf("no log line matches %q yet", p.Pattern.String())
}

// ErrTimeout reports that the probe never succeeded in time.
var ErrTimeout = errors.New("not ready before the timeout")

// Wait checks probe every interval until it succeeds, alive reports false
// (the process died: no point waiting) or timeout passes. The error names
// the last failed attempt.
func Wait(parent context.Context, probe Probe, interval, timeout time.Duration, alive func() error) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	var last, dead error
	err := proc.PollEvery(ctx, interval, func() bool {
		if dead = alive(); dead != nil {
			return true
		}
		err := probe.Check(ctx)
		if err == nil {
			return true
		}
		// An attempt cut short by the overall deadline says nothing new:
		// keep the last real answer (such as "answered 503").
		if last == nil || ctx.Err() == nil {
			last = err
		}
		return false
	})
	switch {
	case dead != nil:
		return dead
	case err == nil:
		return nil
	case parent.Err() != nil:
		return fmt.Errorf("interrupted while waiting until ready: %w", parent.Err())
	case last == nil:
		return fmt.Errorf("%w (%s)", ErrTimeout, timeout)
	}
	return fmt.Errorf("%w (%s): %w", ErrTimeout, timeout, last)
}

func trim(out []byte) string {
	if len(out) > 200 {
		out = out[len(out)-200:]
	}
	return string(out)
}
