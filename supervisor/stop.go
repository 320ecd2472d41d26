package supervisor

// Stopping signals the recorded process group only after the group leader's
// identity has been verified; a record whose PID now names another process
// is cleaned without sending anything. The record is removed only once
// nothing of the process's session is left.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// killWait bounds the wait for processes after SIGKILL.
const killWait = 2 * time.Second

// monitorExitWait bounds the wait for a monitor to record the exit.
const monitorExitWait = time.Second

// StopOptions tune a stop.
type StopOptions struct {
	// Force kills what outlives the timeout, and session survivors.
	Force bool
	// Timeout overrides the recorded stop_timeout when positive.
	Timeout time.Duration
}

// StopOutcome is what stop found and did for one process.
type StopOutcome string

// Stop outcomes.
const (
	StopStopped    StopOutcome = "stopped"     // it ran and is now gone
	StopNotRunning StopOutcome = "not-running" // there was nothing to stop
	StopStale      StopOutcome = "stale"       // the record named another process: cleaned, nothing signalled
	StopKilled     StopOutcome = "killed"      // it outlived the timeout and was killed (force, or Windows)
)

// StopResult is what stop did for one process.
type StopResult struct {
	Name    string      `json:"name"`
	Outcome StopOutcome `json:"outcome"`
	PID     int         `json:"pid,omitempty"`
	// Survivors are processes of its session still alive after the stop
	// (reported; killed when forced).
	Survivors []SurvivorInfo `json:"survivors,omitempty"`
}

// SurvivorInfo names a process that outlived its session leader.
type SurvivorInfo struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// Stop stops names in reverse dependency order. It stops at the first
// failure, returning the results so far.
func (s *Supervisor) Stop(ctx context.Context, names []string, opts StopOptions) ([]StopResult, error) {
	for _, n := range names {
		if err := s.checkKnown(n); err != nil {
			return nil, err
		}
	}
	var results []StopResult
	for _, name := range s.cfg.StopOrder(names) {
		res, err := s.stopOne(ctx, name, opts)
		results = append(results, res)
		if err != nil {
			return results, err
		}
	}
	return results, nil
}

func (s *Supervisor) stopOne(ctx context.Context, name string, opts StopOptions) (StopResult, error) {
	lock, err := s.lock(ctx, name)
	if err != nil {
		return StopResult{Name: name}, err
	}
	defer lock.Release()
	rec, err := s.home.ReadRecord(name)
	if err != nil || rec == nil {
		return StopResult{Name: name, Outcome: StopNotRunning}, err
	}
	return s.stopLocked(ctx, rec, opts)
}

// stopLocked stops the process of rec; the caller holds the name's lock.
func (s *Supervisor) stopLocked(ctx context.Context, rec *state.ProcessRecord, opts StopOptions) (StopResult, error) {
	res := StopResult{Name: rec.Name, PID: rec.Process.PID, Outcome: StopStopped}
	timeout := rec.StopTimeout
	if opts.Timeout > 0 {
		timeout = opts.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultStopTimeout
	}
	sig, err := proc.SignalNumber(rec.StopSignal)
	if err != nil {
		sig = syscall.SIGTERM
	}
	// The monitor first, so it records the exit as a stop and does not
	// restart: a marker file on every platform, plus SIGTERM on Unix. A
	// dead or reused monitor PID is simply skipped.
	if err := s.home.WriteStopMarker(rec.Name, rec.Process.PID); err != nil {
		return res, err
	}
	monitor := s.tellMonitorToStop(rec)
	if monitor != nil {
		defer monitor.Close()
	}

	leader, err := proc.Open(rec.Process)
	switch {
	case errors.Is(err, proc.ErrIdentityMismatch):
		s.logger.Warn("stale record: pid belongs to another process; not signalled", "name", rec.Name, "pid", rec.Process.PID)
		res.Outcome = StopStale
		return res, s.home.RemoveRecord(rec.Name)
	case errors.Is(err, proc.ErrNotFound):
		res.Outcome = StopNotRunning
		// The leader is gone; what is left of its session is still ours.
		return s.finishStop(ctx, rec, res, opts, monitor)
	case err != nil:
		return res, err
	}
	defer leader.Close()

	deadline, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The group first (on Windows: the tree, found through the still-living
	// root), then the verified leader itself.
	proc.SignalGroup(rec.Process.PID, sig)
	if err := leader.Signal(sig); err != nil && !errors.Is(err, proc.ErrNotFound) {
		return res, fmt.Errorf("signal %s (pid %d): %w", rec.Name, rec.Process.PID, err)
	}
	waitErr := waitGroupGone(deadline, leader, rec.Process.PID)
	if waitErr != nil && ctx.Err() != nil {
		return res, ctx.Err()
	}
	if waitErr != nil {
		if !opts.Force && runtime.GOOS != "windows" {
			return res, fmt.Errorf("%w: %s (pid %d) still running after %s; use --force to kill it", ErrStopTimeout, rec.Name, rec.Process.PID, timeout)
		}
		res.Outcome = StopKilled
		proc.SignalGroup(rec.Process.PID, proc.Kill)
		leader.Signal(proc.Kill)
		kctx, kcancel := context.WithTimeout(ctx, killWait)
		defer kcancel()
		if err := waitGroupGone(kctx, leader, rec.Process.PID); err != nil {
			return res, fmt.Errorf("%s (pid %d) survived SIGKILL: %w", rec.Name, rec.Process.PID, err)
		}
	}
	return s.finishStop(ctx, rec, res, opts, monitor)
}

// finishStop deals with session survivors, waits for the monitor to record
// the exit and removes the record when nothing is left.
func (s *Supervisor) finishStop(ctx context.Context, rec *state.ProcessRecord, res StopResult, opts StopOptions, monitor *proc.Handle) (StopResult, error) {
	survivors, err := proc.SessionMembers(rec.Process.PID)
	if err != nil {
		return res, err
	}
	for _, m := range survivors {
		res.Survivors = append(res.Survivors, SurvivorInfo{PID: m.PID, Comm: m.Comm})
	}
	if monitor != nil {
		wctx, cancel := context.WithTimeout(ctx, monitorExitWait)
		if monitor.Wait(wctx) != nil && runtime.GOOS == "windows" {
			monitor.Signal(proc.Kill) // in a backoff it cannot be told; end it
		}
		cancel()
	}
	if len(survivors) > 0 {
		if !opts.Force {
			return res, fmt.Errorf("%w: %s: %s; use --force to kill them", ErrSurvivors, rec.Name, describe(res.Survivors))
		}
		if err := killAll(ctx, survivors); err != nil {
			return res, err
		}
		if res.Outcome == StopNotRunning {
			res.Outcome = StopKilled
		}
	}
	if exit, _ := s.home.ReadExit(rec.Name); exit == nil || exit.PID != rec.Process.PID {
		// No monitor recorded this end (it was killed, or never existed).
		// Best effort: status then says "stopped" without an exit code.
		if err := s.home.WriteExit(&state.ExitRecord{Name: rec.Name, PID: rec.Process.PID, Code: -1, At: time.Now().UTC(), Stopped: true, Restarts: rec.Restarts}); err != nil {
			s.logger.Warn("cannot record the exit of a stopped process", "name", rec.Name, "pid", rec.Process.PID, "err", err)
		}
	}
	return res, s.home.RemoveRecord(rec.Name)
}

// tellMonitorToStop sends SIGTERM to the record's monitor, if it is still
// the same process, and returns a handle to wait for it.
func (s *Supervisor) tellMonitorToStop(rec *state.ProcessRecord) *proc.Handle {
	if rec.Monitor == nil || rec.Monitor.PID == 0 {
		return nil
	}
	h, err := proc.Open(*rec.Monitor)
	if err != nil {
		return nil
	}
	if runtime.GOOS == "windows" {
		return h // terminating it would lose the exit record; it ends with its process
	}
	h.Signal(syscall.SIGTERM)
	return h
}

// waitGroupGone waits until the leader and every member of its process
// group have exited: the leader through its handle (prompt), the rest by
// rescanning the session briefly after.
func waitGroupGone(ctx context.Context, leader *proc.Handle, pgid int) error {
	if err := leader.Wait(ctx); err != nil {
		return err
	}
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		members, err := proc.SessionMembers(pgid)
		if err != nil {
			return err
		}
		inGroup := 0
		for _, m := range members {
			if m.PGID == pgid {
				inGroup++
			}
		}
		if inGroup == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// killAll kills each verified survivor and waits for it.
func killAll(ctx context.Context, members []proc.Info) error {
	var handles []*proc.Handle
	for _, m := range members {
		h, err := proc.Open(m.Identity)
		if err != nil {
			continue // already gone
		}
		defer h.Close()
		h.Signal(proc.Kill)
		handles = append(handles, h)
	}
	kctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	for _, h := range handles {
		if err := h.Wait(kctx); err != nil {
			return fmt.Errorf("pid %d survived SIGKILL: %w", h.Identity().PID, err)
		}
	}
	return nil
}

func describe(ss []SurvivorInfo) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("pid %d (%s)", s.PID, s.Comm)
	}
	return strings.Join(parts, ", ")
}
