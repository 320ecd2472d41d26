package supervisor

// Stopping signals only what is provably ours (see tree.go): the recorded
// leader after its identity has been verified (through a pidfd on Linux),
// its process group while it lives, and every other member of its tree. A
// record whose PID now names another process is cleaned without sending
// anything. The record is removed only once nothing of the tree is left;
// a stop that fails leaves the process supervised as before.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
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

// memberPoll is how often stop rechecks the members of a tree it signalled.
const memberPoll = 2 * time.Millisecond

// StopOptions tune a stop.
type StopOptions struct {
	// Force kills what outlives the timeout.
	Force bool
	// Timeout overrides the recorded stop_timeout when positive.
	Timeout time.Duration
}

// StopOutcome is what stop found and did for one process.
type StopOutcome string

// Stop outcomes.
const (
	StopStopped    StopOutcome = "stopped"     // it ran and is now gone, with all its descendants
	StopNotRunning StopOutcome = "not-running" // there was nothing to stop
	StopStale      StopOutcome = "stale"       // the record named another process: cleaned, nothing signalled
	StopKilled     StopOutcome = "killed"      // it outlived the timeout and was killed (force, or Windows)
	StopTimeout    StopOutcome = "timeout"     // it (or a descendant) outlived the timeout: still running, still supervised
	StopFailed     StopOutcome = "failed"      // stop could not act: an unreadable record, a signal refused...
)

// StopResult is what stop did for one process.
type StopResult struct {
	Name    string      `json:"name"`
	Outcome StopOutcome `json:"outcome"`
	PID     int         `json:"pid,omitempty"`
	// Survivors are processes of its tree still alive after the stop.
	Survivors []SurvivorInfo `json:"survivors,omitempty"`
	// Error says why the stop failed (outcome timeout or failed).
	Error string `json:"error,omitempty"`
	// Unrecorded says what the stop did but could not write down (a
	// read-only or full home): signalling needs no file, records do.
	Unrecorded []string `json:"unrecorded,omitempty"`
	// Shutdown says why the shutdown command failed (the signals then
	// followed as usual).
	Shutdown string `json:"shutdown_error,omitempty"`
}

// SurvivorInfo names a process of a tree: its PID and command.
type SurvivorInfo struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// Stop stops names in reverse dependency order. A failure does not stop
// the run: every process that can be stopped is, each failure is reported
// in its result, and the returned error joins them all.
func (s *Supervisor) Stop(ctx context.Context, names []string, opts StopOptions) ([]StopResult, error) {
	names = s.expand(names)
	if err := validNames(names); err != nil {
		return nil, err
	}
	for _, n := range names {
		if err := s.checkKnown(n); err != nil {
			return nil, err
		}
	}
	var results []StopResult
	var errs []error
	for _, name := range s.cfg.StopOrder(names) {
		from := s
		if s.isLegacy(name) {
			from = s.legacySupervisor()
		}
		res, err := from.stopOne(ctx, name, opts)
		if err != nil {
			if res.Outcome == "" || res.Outcome == StopStopped || res.Outcome == StopNotRunning {
				res.Outcome = StopFailed
			}
			res.Error = err.Error()
			errs = append(errs, err)
			if ctx.Err() != nil {
				results = append(results, res)
				break
			}
		}
		results = append(results, res)
	}
	return results, errors.Join(errs...)
}

func (s *Supervisor) stopOne(ctx context.Context, name string, opts StopOptions) (StopResult, error) {
	var unrecorded []string
	lock, err := s.lock(ctx, name)
	switch {
	case err == nil:
		defer func() { _ = lock.Release() }() // closing a lock file loses nothing; the kernel drops the lock at exit in any case
	case unwritable(err):
		// No lock file and none can be made: nothing else can start or
		// stop this name either, so stopping without it is safe enough.
		unrecorded = append(unrecorded, fmt.Sprintf("stopped without the lock: %v", err))
	default:
		return StopResult{Name: name, Outcome: StopFailed}, err
	}
	res, err := s.stopRecorded(ctx, name, opts)
	res.Unrecorded = append(unrecorded, res.Unrecorded...)
	return res, err
}

// unwritable reports whether err comes from a home that cannot be written
// (read-only, full, or over its quota).
func unwritable(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// stopRecorded stops the recorded process of name.
func (s *Supervisor) stopRecorded(ctx context.Context, name string, opts StopOptions) (StopResult, error) {
	rec, err := s.home.ReadRecord(name)
	if err != nil {
		return StopResult{Name: name, Outcome: StopFailed}, fmt.Errorf("%s: %w; check what runs, then remove %s", name, err, s.home.RecordPath(name))
	}
	if rec == nil {
		return StopResult{Name: name, Outcome: StopNotRunning}, nil
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
	// The pidfd first, so the process checked below is the one signalled.
	leader, openErr := proc.Open(rec.Process)
	switch {
	case openErr == nil:
		defer func(h *proc.Handle) { _ = h.Close() }(leader) // releasing a handle: nothing to act on
	case errors.Is(openErr, proc.ErrIdentityMismatch), errors.Is(openErr, proc.ErrNotFound):
		leader = nil
	default:
		return res, openErr
	}
	tr, err := new(scan).treeOf(rec)
	if err != nil {
		return res, err
	}
	// The monitor learns first (a marker file), so it records the exit as
	// a stop and does not restart (nor leaves its backoff). A stop that
	// fails withdraws the marker while the leader still runs: supervision
	// goes on as before.
	told := false // the monitor was told by a signal, not a marker
	if !tr.otherBoot {
		if err := s.home.WriteStopMarker(rec.Name, rec.Process.PID); err != nil {
			if !unwritable(err) {
				return res, err
			}
			// Signalling needs no file: the monitor hears of the stop by
			// its own signal instead, and does not restart.
			told = s.tellMonitor(rec, tr.monitorAlive)
			msg := fmt.Sprintf("no stop marker (%v)", err)
			if told {
				msg += "; the monitor was told by signal, so a stop that fails now leaves the process unsupervised"
			} else if tr.monitorAlive {
				msg += "; the monitor could not be told and may restart it"
			}
			res.Unrecorded = append(res.Unrecorded, msg)
		}
	}
	if leader == nil {
		if len(tr.members) == 0 {
			if errors.Is(openErr, proc.ErrIdentityMismatch) || tr.otherBoot {
				s.logger.Warn("stale record: not signalled", "name", rec.Name, "pid", rec.Process.PID)
				res.Outcome = StopStale
				return res, s.home.RemoveRecord(rec.Name)
			}
			res.Outcome = StopNotRunning
			return s.finishStop(ctx, rec, res, tr.monitorAlive)
		}
		// Only descendants are left (the leader exited): they are ended below.
	}
	withdraw := func() {
		if leader != nil && runs(rec.Process) && !told {
			if err := s.home.RemoveStopMarker(rec.Name); err != nil {
				s.logger.Warn("withdraw stop marker", "name", rec.Name, "err", err)
			}
		}
	}

	if spec := recordSpec(rec); spec != nil && spec.Shutdown != nil && leader != nil {
		sd := spec.Shutdown
		if n, err := proc.SignalNumber(sd.Signal); err == nil {
			sig = n
		}
		if sd.Command != "" {
			if gone, err := s.runShutdown(ctx, rec, spec, leader); err != nil {
				res.Shutdown = err.Error()
				s.logger.Warn("shutdown command", "name", rec.Name, "err", err)
			} else if gone {
				// The leader ended; what is left of its tree is ended by
				// signals below, as for a leader that exited by itself.
				leader = nil
				if tr, err = new(scan).treeOf(rec); err != nil {
					return res, err
				}
				if len(tr.members) == 0 {
					return s.finishStop(ctx, rec, res, tr.monitorAlive)
				}
			}
		}
	}

	deadline, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	left := s.signalTree(rec, leader, tr.members, sig)
	left, waitErr := s.waitTreeGone(deadline, rec, leader, left, sig)
	if waitErr != nil && ctx.Err() != nil {
		withdraw()
		res.Outcome = StopFailed
		return res, ctx.Err()
	}
	if waitErr != nil {
		if !opts.Force && proc.StopSignalsCatchable {
			withdraw()
			res.Outcome = StopTimeout
			res.Survivors = survivorsOf(left)
			if leader != nil && runs(rec.Process) {
				return res, fmt.Errorf("%w: %s (pid %d) still running after %s; use --force to kill it", ErrStopTimeout, rec.Name, rec.Process.PID, timeout)
			}
			return res, fmt.Errorf("%w: %s: %s still running after %s; use --force to kill them", ErrSurvivors, rec.Name, describe(res.Survivors), timeout)
		}
		res.Outcome = StopKilled
		left = s.signalTree(rec, leader, left, proc.Kill)
		kctx, kcancel := context.WithTimeout(ctx, killWait)
		defer kcancel()
		if left, err = s.waitTreeGone(kctx, rec, leader, left, proc.Kill); err != nil {
			res.Outcome = StopTimeout
			res.Survivors = survivorsOf(left)
			if leader != nil && runs(rec.Process) {
				res.Survivors = append([]SurvivorInfo{{PID: rec.Process.PID, Comm: "leader"}}, res.Survivors...)
			}
			return res, fmt.Errorf("%w: %s: %s survived SIGKILL", ErrSurvivors, rec.Name, describe(res.Survivors))
		}
	}
	return s.finishStop(ctx, rec, res, tr.monitorAlive)
}

// recordSpec returns the spec rec was started with, nil when the record
// keeps none (or one that cannot be read).
func recordSpec(rec *state.ProcessRecord) *Process {
	if len(rec.Spec) == 0 {
		return nil
	}
	var spec Process
	if err := json.Unmarshal(rec.Spec, &spec); err != nil || spec.Name != rec.Name {
		return nil
	}
	return &spec
}

// runShutdown runs the shutdown command of spec, then waits for the
// leader to end, both within the shutdown timeout. It reports whether the
// leader ended; a command that fails (or outlives the timeout) is an error,
// and the signals follow.
func (s *Supervisor) runShutdown(ctx context.Context, rec *state.ProcessRecord, spec *Process, leader *proc.Handle) (bool, error) {
	sd := spec.Shutdown
	ctx, cancel := context.WithTimeout(ctx, sd.Timeout)
	defer cancel()
	shell, args := proc.ShellCommand(sd.Command)
	cmd := exec.CommandContext(ctx, shell, args...)
	cmd.Dir = spec.Cwd
	cmd.Env = append(spec.Environ(), ShutdownPIDEnv+"="+strconv.Itoa(rec.Process.PID))
	cmd.WaitDelay = time.Second // a grandchild holding the output open cannot hold stop
	out, runErr := cmd.CombinedOutput()
	if runErr != nil {
		runErr = fmt.Errorf("%s: shutdown command %q: %w: %s", rec.Name, sd.Command, runErr, strings.TrimSpace(string(out)))
	}
	if err := leader.Wait(ctx); err != nil {
		return false, runErr
	}
	return true, runErr
}

// runs reports whether id still names a live process.
func runs(id proc.Identity) bool {
	_, err := proc.Verify(id)
	return err == nil
}

// signalTree sends sig to the leader's group and the leader (when it is
// alive), and to every member outside that group. It returns the members
// still to wait for.
func (s *Supervisor) signalTree(rec *state.ProcessRecord, leader *proc.Handle, members []proc.Info, sig syscall.Signal) []proc.Info {
	if leader != nil {
		// The group first (on Windows: the tree, found through the
		// still-living root), then the verified leader itself.
		if err := proc.SignalGroup(rec.Process.PID, sig); err != nil && !errors.Is(err, proc.ErrNotFound) {
			s.logger.Warn("signal group", "name", rec.Name, "pgid", rec.Process.PID, "err", err)
		}
		if err := leader.Signal(sig); err != nil && !errors.Is(err, proc.ErrNotFound) {
			s.logger.Warn("signal leader", "name", rec.Name, "pid", rec.Process.PID, "err", err)
		}
	}
	var left []proc.Info
	for _, m := range members {
		if leader != nil && m.PGID == rec.Process.PID && sig != proc.Kill {
			left = append(left, m) // the group signal reached it
			continue
		}
		h, err := proc.Open(m.Identity)
		if err != nil {
			continue // gone, or its PID names another process now
		}
		if err := h.Signal(sig); err != nil && !errors.Is(err, proc.ErrNotFound) {
			s.logger.Warn("signal descendant", "name", rec.Name, "pid", m.PID, "err", err)
		}
		_ = h.Close() // releasing a handle: nothing to act on
		left = append(left, m)
	}
	return left
}

// waitTreeGone waits until the leader and every member have exited: the
// leader through its handle (prompt), the members by re-verifying them. A
// process the tree spawns meanwhile is found by a last rescan, signalled
// and waited for too. It returns what is left when ctx ends.
func (s *Supervisor) waitTreeGone(ctx context.Context, rec *state.ProcessRecord, leader *proc.Handle, members []proc.Info, sig syscall.Signal) ([]proc.Info, error) {
	if leader != nil {
		if err := leader.Wait(ctx); err != nil {
			return members, err
		}
	}
	var scanErr error
	err := proc.PollEvery(ctx, memberPoll, func() bool {
		members = stillAlive(members)
		if len(members) > 0 {
			return false
		}
		tr, err := new(scan).treeOf(rec)
		if err != nil {
			scanErr = err
			return true
		}
		if len(tr.members) == 0 {
			return true // a rescan found nothing: the tree is gone
		}
		members = s.signalTree(rec, nil, tr.members, sig)
		return false
	})
	switch {
	case scanErr != nil:
		return nil, scanErr
	case err != nil:
		return stillAlive(members), err
	}
	return nil, nil
}

// stillAlive keeps the members that still run as recorded.
func stillAlive(members []proc.Info) []proc.Info {
	out := members[:0:0]
	for _, m := range members {
		if _, err := proc.Verify(m.Identity); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// finishStop waits for the monitor to record the exit and removes the
// record; the tree is gone when it is called.
func (s *Supervisor) finishStop(ctx context.Context, rec *state.ProcessRecord, res StopResult, monitorAlive bool) (StopResult, error) {
	if monitorAlive && rec.Monitor != nil {
		if monitor, err := proc.Open(*rec.Monitor); err == nil {
			wctx, cancel := context.WithTimeout(ctx, monitorExitWait)
			if monitor.Wait(wctx) != nil && !proc.StopSignalsCatchable {
				// Windows: in a backoff it cannot be told; end it.
				if err := monitor.Signal(proc.Kill); err != nil {
					s.logger.Warn("end monitor", "name", rec.Name, "err", err)
				}
			}
			cancel()
			_ = monitor.Close() // releasing a handle: nothing to act on
		}
	}
	if _, err := cgroupMembers(rec); err == nil && rec.Cgroup != "" {
		// Its monitor removes it on the way out; one that was killed cannot.
		if err := proc.RemoveCgroup(rec.Cgroup); err != nil && !monitorAlive {
			s.logger.Warn("remove cgroup", "name", rec.Name, "dir", rec.Cgroup, "err", err)
		}
	}
	if exit, _ := s.home.ReadExit(rec.Name); exit == nil || exit.PID != rec.Process.PID {
		// No monitor recorded this end (it was killed, or never existed); an
		// unreadable exit record is replaced like a missing one.
		// Best effort: status then says "stopped" without an exit code.
		if err := s.home.WriteExit(&state.ExitRecord{Name: rec.Name, PID: rec.Process.PID, Code: -1, At: time.Now().UTC(), Stopped: true, Restarts: rec.Restarts}); err != nil {
			s.logger.Warn("cannot record the exit of a stopped process", "name", rec.Name, "pid", rec.Process.PID, "err", err)
		}
	}
	if err := s.home.RemoveRecord(rec.Name); err != nil {
		if !unwritable(err) {
			return res, err
		}
		res.Unrecorded = append(res.Unrecorded, fmt.Sprintf("the record stays (%v); status finds the process gone and says so", err))
	}
	return res, nil
}

// tellMonitor asks the monitor of rec, verified as the recorded process, to
// let its process go (SIGTERM, which it takes as a stop) when no marker
// can be written. It reports whether the monitor was told.
func (s *Supervisor) tellMonitor(rec *state.ProcessRecord, alive bool) bool {
	if !alive || rec.Monitor == nil || !proc.StopSignalsCatchable {
		return false
	}
	m, err := proc.Open(*rec.Monitor)
	if err != nil {
		return false
	}
	defer func() { _ = m.Close() }() // releasing a handle: nothing to act on
	if err := m.Signal(syscall.SIGTERM); err != nil {
		s.logger.Warn("tell monitor", "name", rec.Name, "err", err)
		return false
	}
	return true
}

func describe(ss []SurvivorInfo) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("pid %d (%s)", s.PID, s.Comm)
	}
	return strings.Join(parts, ", ")
}
