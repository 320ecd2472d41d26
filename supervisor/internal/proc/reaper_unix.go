//go:build unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reapTick bounds how long an exit goes unreaped if a SIGCHLD is missed.
const reapTick = 200 * time.Millisecond

// Reaper collects the exit of every child of this process — those it
// started and the orphans a subreaper inherits — with one wait4(-1) loop.
// Invariant: while a Reaper runs, exec.Cmd.Wait is never called (it would
// race the loop for the status); commands are started and waited for
// through the Reaper.
type Reaper struct {
	mu      sync.Mutex
	waiters map[int]chan ExitStatus
}

// NewReaper starts the reaping loop for the life of the process.
func NewReaper() *Reaper {
	r := &Reaper{waiters: map[int]chan ExitStatus{}}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	go r.loop(sigs)
	return r
}

func (r *Reaper) loop(sigs chan os.Signal) {
	t := time.NewTicker(reapTick)
	defer t.Stop()
	for {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if pid <= 0 || err != nil {
				break // no child has exited (or there is no child at all)
			}
			r.deliver(pid, statusOf(ws))
		}
		select {
		case <-sigs:
		case <-t.C:
		}
	}
}

// deliver hands the status of pid to its waiter; an orphan's is dropped.
func (r *Reaper) deliver(pid int, st ExitStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.waiters[pid]; ok {
		ch <- st
		delete(r.waiters, pid)
	}
}

// Start starts cmd and registers it before the loop can reap it.
func (r *Reaper) Start(cmd *exec.Cmd) (<-chan ExitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := make(chan ExitStatus, 1)
	r.waiters[cmd.Process.Pid] = ch
	return ch, nil
}

func statusOf(ws unix.WaitStatus) ExitStatus {
	if ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal()}
	}
	return ExitStatus{Code: ws.ExitStatus()}
}

// Run starts cmd through the reaper and returns its combined output once
// it exits; when ctx ends first the command is killed.
func (r *Reaper) Run(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	exited, err := r.Start(cmd)
	_ = pw.Close() // the child holds its own copy; ours goes so that EOF comes
	if err != nil {
		_ = pr.Close() // the start error is the one to report
		return nil, err
	}
	outc := make(chan []byte, 1)
	go func() {
		defer func() { _ = pr.Close() }()                 // read-only
		data, _ := io.ReadAll(io.LimitReader(pr, 64<<10)) // diagnostics only
		outc <- data
	}()
	var st ExitStatus
	select {
	case st = <-exited:
	case <-ctx.Done():
		_ = cmd.Process.Kill() // it may have exited just now: nothing to do then
		st = <-exited
	}
	out := <-outc
	switch {
	case ctx.Err() != nil:
		return out, ctx.Err()
	case st.Signal != 0:
		return out, fmt.Errorf("killed by %s", SignalName(st.Signal))
	case st.Code != 0:
		return out, fmt.Errorf("exit status %d", st.Code)
	}
	return out, nil
}
