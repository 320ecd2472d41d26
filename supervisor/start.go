package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/logfile"
	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/ready"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// monitorReplyTimeout bounds how long start waits for a monitor to report.
const monitorReplyTimeout = 10 * time.Second

// LogTailLines is how many log lines a failed start reports.
const LogTailLines = 20

// StartResult is what start did for one process.
type StartResult struct {
	Name           string `json:"name"`
	PID            int    `json:"pid"`
	AlreadyRunning bool   `json:"already_running"`
	// ReadySeconds is how long the process took to pass its ready probe
	// (or its start grace, or for a oneshot to complete); zero when it was
	// already running.
	ReadySeconds float64 `json:"ready_seconds,omitempty"`
	// Completed is true for a oneshot that ran to a successful end.
	Completed bool `json:"completed,omitempty"`
}

// StartError is a start that failed: the process never became ready (or
// died, or could not be spawned). LogTail holds the end of its log.
type StartError struct {
	Name    string
	Err     error
	LogFile string
	LogTail []byte
}

func (e *StartError) Error() string { return fmt.Sprintf("start %s: %v", e.Name, e.Err) }
func (e *StartError) Unwrap() error { return e.Err }

// ErrDependency reports a process not started because one it depends on
// failed to start (or, for a oneshot, to complete successfully).
var ErrDependency = errors.New("a dependency did not start")

// startable checks, before anything is touched, that names can be
// started: valid, each in the config, and a monitor to run them found.
func (s *Supervisor) startable(names []string) error {
	if err := validNames(names); err != nil {
		return err
	}
	if _, _, err := s.monitorCommand(nil); err != nil {
		return err
	}
	for _, n := range names {
		if _, ok := s.cfg.Processes[n]; !ok {
			return s.notConfigured(n)
		}
	}
	return nil
}

// notConfigured is the error for a name the config does not declare.
func (s *Supervisor) notConfigured(name string) error {
	return fmt.Errorf("%w %q (not in %s)", ErrUnknownProcess, name, s.cfg.Path)
}

// Start starts names and everything they depend on. Independent processes
// start — and wait for readiness — concurrently; each waits only for what
// it depends on (a oneshot dependency must have completed with exit 0). A
// process that already runs is left alone and reported AlreadyRunning.
// Each start waits for the process's ready probe, or without one confirms
// it is still alive after StartGrace. A failure does not stop independent
// starts: the results hold every success, in start order, and the error
// joins the failures (each a *StartError), real failures first.
func (s *Supervisor) Start(ctx context.Context, names []string) ([]StartResult, error) {
	if s.cfg != nil {
		names = s.cfg.members(names, nil) // the YAML's count: scale starts more
	}
	if err := s.startable(names); err != nil {
		return nil, err
	}
	order := s.cfg.Closure(names)
	type outcome struct {
		res     StartResult
		err     error
		skipped bool
		done    chan struct{}
		// started is closed once the process is spawned (or found running)
		// with pid set, or once its start ended without that (pid 0).
		started   chan struct{}
		pid       int
		startOnce sync.Once
	}
	outs := make(map[string]*outcome, len(order))
	for _, n := range order {
		outs[n] = &outcome{done: make(chan struct{}), started: make(chan struct{})}
	}
	var wg sync.WaitGroup
	for _, name := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := outs[name]
			defer close(o.done)
			// A start that ended before spawning still releases its waiters.
			defer o.startOnce.Do(func() { close(o.started) })
			spec, _ := s.spec(name) // found: order is the closure of names checked against the config above
			for _, d := range spec.DependsOn {
				dep, depSpec := outs[d], s.cfg.Processes[d]
				pid, failed := func() int { return dep.pid }, func() error { return dep.err }
				if err := s.awaitDependency(ctx, spec.Condition(d), depSpec, dep.started, dep.done, pid, failed); err != nil {
					o.err, o.skipped = &StartError{Name: name, Err: err}, true
					return
				}
			}
			o.res, o.err = s.startOne(ctx, spec, func(pid int) {
				o.startOnce.Do(func() { o.pid = pid; close(o.started) })
			})
		}()
	}
	wg.Wait()
	var results []StartResult
	var failed, skipped []error
	for _, n := range order {
		switch o := outs[n]; {
		case o.err == nil:
			results = append(results, o.res)
		case o.skipped:
			skipped = append(skipped, o.err)
		default:
			failed = append(failed, o.err)
		}
	}
	return results, errors.Join(append(failed, skipped...)...)
}

// awaitDependency waits until dep meets cond: started is closed once its
// pid is known (or its start ended without one), done once its start has
// ended; pidOf reads its pid once started, failed its error once done.
func (s *Supervisor) awaitDependency(ctx context.Context, cond DependencyCondition, dep *Process, started, done <-chan struct{}, pidOf func() int, failed func() error) error {
	if cond == DependsStarted {
		select {
		case <-started:
		case <-ctx.Done():
			return ctx.Err()
		}
		if pidOf() != 0 {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrDependency, dep.Name)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	pid, err := pidOf(), failed()
	switch {
	case err != nil || pid == 0:
		return fmt.Errorf("%w: %s", ErrDependency, dep.Name)
	case cond != DependsHealthy:
		return nil
	}
	// Ready; now its monitor's first health check must pass.
	check := dep.HealthProbe() // the parser ensures health has one
	hctx, cancel := context.WithTimeout(ctx, dep.Health.Every*time.Duration(dep.Health.Failures+1)+check.Timeout)
	defer cancel()
	var last *state.HealthRecord
	perr := proc.PollEvery(hctx, check.Interval, func() bool {
		h, err := s.home.ReadHealth(dep.Name)
		if err == nil && h != nil && h.PID == pid {
			last = h
		}
		return last != nil && last.Healthy
	})
	if perr != nil {
		why := "no health check passed yet"
		if last != nil && last.LastError != "" {
			why = last.LastError
		}
		return fmt.Errorf("%w: %s is not healthy (%s)", ErrDependency, dep.Name, why)
	}
	return nil
}

func (s *Supervisor) startOne(ctx context.Context, spec *Process, onSpawn func(pid int)) (StartResult, error) {
	if onSpawn == nil {
		onSpawn = func(int) {}
	}
	lock, err := s.lock(ctx, spec.Name)
	if err != nil {
		return StartResult{}, err
	}
	defer func() { _ = lock.Release() }() // closing a lock file loses nothing; the kernel drops the lock at exit in any case
	if rec, err := s.home.ReadRecord(spec.Name); err != nil {
		return StartResult{}, err
	} else if rec != nil {
		if _, err := proc.Verify(rec.Process); err == nil {
			onSpawn(rec.Process.PID)
			return StartResult{Name: spec.Name, PID: rec.Process.PID, AlreadyRunning: true}, nil
		}
		// Not running as recorded: a stale record, or a monitor in its
		// restart backoff. Either way stop cleans it up without touching
		// any process that is not verifiably ours.
		if _, err := s.stopLocked(ctx, rec, StopOptions{Force: true}); err != nil {
			return StartResult{}, &StartError{Name: spec.Name, Err: err}
		}
	}
	run := *spec
	var offset int64 = -1 // until measured, the tail is of the whole file
	fail := func(err error) (StartResult, error) {
		// The tail only illustrates err: an unreadable log leaves it empty
		// and the error stands on its own.
		var tail []byte
		if offset >= 0 {
			tail, _ = logfile.TailSince(run.LogFile, offset, LogTailLines)
		} else {
			tail, _ = logfile.Tail(run.LogFile, LogTailLines)
		}
		return StartResult{}, &StartError{Name: spec.Name, Err: err, LogFile: run.LogFile, LogTail: tail}
	}
	if run.Ready != nil && run.Ready.TCP != "" {
		if err := portFree(ctx, run.Ready.TCP); err != nil {
			return fail(err)
		}
	}
	if err := s.checkLogFile(&run); err != nil {
		return StartResult{}, &StartError{Name: spec.Name, Err: err}
	}
	if err := s.checkResources(&run); err != nil {
		return StartResult{}, &StartError{Name: spec.Name, Err: err}
	}
	if _, err := logfile.RotateIfOver(run.LogFile, run.LogMaxSize, run.LogBackups, s.ledger(spec.Name)); err != nil {
		return fail(err)
	}
	offset = 0
	if fi, err := os.Stat(run.LogFile); err == nil {
		offset = fi.Size()
	}
	if err := s.home.RemoveStopMarker(spec.Name); err != nil {
		return fail(err)
	}
	id, err := s.spawnMonitor(ctx, &run)
	if err != nil {
		return fail(err)
	}
	s.logger.Info("started", "name", spec.Name, "pid", id.PID)
	onSpawn(id.PID)
	spawned := time.Now()
	if err := s.awaitReady(ctx, &run, id, offset); err != nil {
		if rec, rerr := s.home.ReadRecord(spec.Name); rerr == nil && rec != nil {
			if _, serr := s.stopLocked(context.WithoutCancel(ctx), rec, StopOptions{Force: true, Timeout: time.Second}); serr != nil {
				s.logger.Warn("stop after a failed start", "name", spec.Name, "err", serr)
			}
		}
		return fail(err)
	}
	if err := s.home.WriteApplied(spec.Name, run.Digest()); err != nil {
		return StartResult{}, err
	}
	ready := time.Since(spawned).Round(time.Millisecond)
	return StartResult{Name: spec.Name, PID: id.PID, ReadySeconds: ready.Seconds(), Completed: run.Oneshot}, nil
}

// spawnMonitor starts the monitor for spec and returns the process it
// started. The monitor is detached into its own session so it outlives
// this CLI run.
func (s *Supervisor) spawnMonitor(ctx context.Context, spec *Process) (proc.Identity, error) {
	logf, err := logfile.OpenAppend(spec.LogFile, s.ledger(spec.Name))
	if err != nil {
		return proc.Identity{}, err
	}
	defer func() { _ = logf.Close() }() // the monitor holds its own copy
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return proc.Identity{}, err
	}
	defer func() { _ = stdinR.Close() }() // the monitor holds its own copy
	defer func() { _ = stdinW.Close() }() // closed by hand after the spec is written; a second close is harmless
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return proc.Identity{}, err
	}
	defer func() { _ = stdoutR.Close() }() // read-only
	defer func() { _ = stdoutW.Close() }() // the monitor holds its own copy

	argv, env, err := s.monitorCommand(spec)
	if err != nil {
		return proc.Identity{}, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	environ := os.Environ()
	cmd.Env = append(append(environ, env...), monitorRuntimeEnv(environ, env)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, logf
	cmd.SysProcAttr = proc.DetachedAttr()
	if err := cmd.Start(); err != nil {
		return proc.Identity{}, fmt.Errorf("start monitor: %w", err)
	}
	// Reap the monitor if it exits while we still run (a long-lived caller
	// such as a test); after we exit, init does.
	go func() { _ = cmd.Wait() }() // its exit status is the process's business: the monitor records it
	// The child holds its own copies; ours must go so EOF reaches each side.
	// Closing a pipe end cannot lose data; the deferred closes repeat it harmlessly.
	_ = stdinR.Close()
	_ = stdoutW.Close()
	req, err := json.Marshal(monitorRequest{Home: s.home.Root, Spec: spec, Digest: spec.Digest(), Project: s.project})
	if err != nil {
		return proc.Identity{}, fmt.Errorf("monitor request: %w", err)
	}
	if _, err := stdinW.Write(req); err != nil {
		return proc.Identity{}, fmt.Errorf("send monitor request: %w", err)
	}
	_ = stdinW.Close() // the request is written: EOF tells the monitor so
	if err := stdoutR.SetReadDeadline(time.Now().Add(monitorReplyTimeout)); err != nil {
		return proc.Identity{}, fmt.Errorf("monitor reply: %w", err)
	}
	rep, err := readReply(stdoutR)
	if err != nil {
		return proc.Identity{}, err
	}
	if rep.Error != "" {
		return proc.Identity{}, errors.New(rep.Error)
	}
	return rep.Process, nil
}

// awaitReady waits for the ready probe, failing early if the process dies.
func (s *Supervisor) awaitReady(ctx context.Context, spec *Process, id proc.Identity, logOffset int64) error {
	h, err := proc.Open(id)
	if err != nil && spec.Oneshot {
		return s.completion(ctx, spec.Name, id.PID) // done already
	}
	if err != nil {
		return s.exitedEarly(ctx, spec.Name, id.PID, "right after it started")
	}
	defer func() { _ = h.Close() }() // releasing a handle: nothing to act on
	if spec.Oneshot {
		return s.awaitCompletion(ctx, spec, h, id)
	}
	if spec.Ready == nil {
		wctx, cancel := context.WithTimeout(ctx, StartGrace)
		defer cancel()
		if err := h.Wait(wctx); err == nil {
			return s.exitedEarly(ctx, spec.Name, id.PID, fmt.Sprintf("within %s of starting", StartGrace))
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
		return nil
	}
	probe, err := probeFor(spec, logOffset, nil)
	if err != nil {
		return err
	}
	alive := func() error {
		if _, err := proc.Verify(id); err != nil {
			return s.exitedEarly(ctx, spec.Name, id.PID, "before it was ready")
		}
		return nil
	}
	return ready.Wait(ctx, probe, spec.Ready.Interval, spec.Ready.Timeout, alive)
}

// awaitCompletion waits for a oneshot to end (within ready.timeout when
// one is set) and succeeds when it exited 0.
func (s *Supervisor) awaitCompletion(ctx context.Context, spec *Process, h *proc.Handle, id proc.Identity) error {
	wctx := ctx
	if spec.Ready != nil && spec.Ready.Timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, spec.Ready.Timeout)
		defer cancel()
	}
	if err := h.Wait(wctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while waiting for the oneshot to complete: %w", ctx.Err())
		}
		return fmt.Errorf("oneshot still running after %s", spec.Ready.Timeout)
	}
	return s.completion(ctx, spec.Name, id.PID)
}

// completion judges the recorded exit of a oneshot: success is exit 0.
func (s *Supervisor) completion(ctx context.Context, name string, pid int) error {
	e := s.awaitRecordedExit(ctx, name, pid)
	switch {
	case e == nil:
		return fmt.Errorf("oneshot process %d ended without a recorded exit", pid)
	case e.Signal != "":
		return fmt.Errorf("oneshot process %d was killed by %s", pid, e.Signal)
	case e.Code != 0:
		return fmt.Errorf("oneshot process %d exited with code %d", pid, e.Code)
	}
	return nil
}

// awaitExit polls for the exit record of pid for up to within: the monitor
// writes it moments after reaping the process.
func (s *Supervisor) awaitExit(ctx context.Context, name string, pid int, within time.Duration) *state.ExitRecord {
	var exit *state.ExitRecord
	_ = proc.PollUntil(ctx, within, func() bool { // nil when it never came: the caller says so
		e, _ := s.home.ReadExit(name) // unreadable reads as not yet written: the caller reports a missing exit
		if e != nil && e.PID == pid {
			exit = e
		}
		return exit != nil
	})
	return exit
}

// awaitRecordedExit waits for the exit record of pid. Its monitor writes
// it moments after reaping the process — moments that a loaded machine can
// stretch to seconds — so it waits as long as that monitor lives, up to
// monitorReplyTimeout, and monitorExitWait when the record names no
// monitor. Nil when no exit was recorded (the monitor died first).
func (s *Supervisor) awaitRecordedExit(ctx context.Context, name string, pid int) *state.ExitRecord {
	rec, _ := s.home.ReadRecord(name) // unreadable: as if it named no monitor
	if rec == nil || rec.Process.PID != pid || rec.Monitor == nil {
		return s.awaitExit(ctx, name, pid, monitorExitWait)
	}
	monitor := *rec.Monitor
	var exit *state.ExitRecord
	_ = proc.PollUntil(ctx, monitorReplyTimeout, func() bool { // nil when it never came: the caller says so
		_, gone := proc.Verify(monitor)
		if e, _ := s.home.ReadExit(name); e != nil && e.PID == pid { // unreadable reads as not yet written
			exit = e
		}
		return exit != nil || gone != nil // read after the look at the monitor: a record it wrote on its way out counts
	})
	return exit
}

// exitedEarly describes a process that died during its start, with the
// exit code its monitor recorded.
func (s *Supervisor) exitedEarly(ctx context.Context, name string, pid int, when string) error {
	if e := s.awaitRecordedExit(ctx, name, pid); e != nil {
		if e.Signal != "" {
			return fmt.Errorf("process %d exited %s (killed by %s)", pid, when, e.Signal)
		}
		return fmt.Errorf("process %d exited %s (exit code %d)", pid, when, e.Code)
	}
	return fmt.Errorf("process %d exited %s", pid, when)
}

// probeFor builds spec's ready probe; run, when set, runs exec probes.
func probeFor(spec *Process, logOffset int64, run func(context.Context, *exec.Cmd) ([]byte, error)) (ready.Probe, error) {
	r := spec.Ready
	switch {
	case r.TCP != "":
		return ready.TCP{Addr: r.TCP}, nil
	case r.HTTP != "":
		return ready.HTTP{URL: r.HTTP}, nil
	case r.Exec != "":
		return ready.Exec{Command: r.Exec, Dir: spec.Cwd, Env: spec.Environ(), Run: run}, nil
	default:
		re, err := regexp.Compile("(?m)" + r.LogPattern)
		if err != nil {
			return nil, err
		}
		return &ready.Log{Path: spec.LogFile, Offset: logOffset, Pattern: re}, nil
	}
}

// portFree fails when something already accepts connections on addr, and
// names the process holding it where the OS tells.
func portFree(ctx context.Context, addr string) error {
	if (ready.TCP{Addr: addr}).Check(ctx) != nil {
		return nil
	}
	// The parser checked host:port; a named port ("http") has no holder to look up.
	if _, portStr, err := net.SplitHostPort(addr); err == nil {
		if port, err := strconv.Atoi(portStr); err == nil {
			if info, ok := proc.PortHolder(port); ok {
				return fmt.Errorf("ready address %s is already in use by pid %d (%s)", addr, info.PID, info.Comm)
			}
		}
	}
	return fmt.Errorf("ready address %s is already in use by another process", addr)
}

// ledger lists the log files created for name.
func (s *Supervisor) ledger(name string) logfile.Ledger {
	return logfile.Ledger{Path: s.home.LogLedgerPath(name)}
}

// checkResources refuses a spec whose resources this machine cannot
// enforce, before anything starts, naming the field and what to do (the
// monitor checks again, and never starts the process without them).
func (s *Supervisor) checkResources(spec *Process) error {
	cgroupOff := os.Getenv(state.CgroupEnv) == "off"
	for _, kv := range s.opts.MonitorEnv {
		if v, ok := strings.CutPrefix(kv, state.CgroupEnv+"="); ok {
			cgroupOff = v == "off"
		}
	}
	_, err := limitsParent(spec.Resources, cgroupOff)
	if err == nil {
		return nil
	}
	e := ConfigError{File: s.cfg.Path, Field: "processes." + spec.Name + ".resources"}
	if spec.resourcesAt != nil {
		e = *spec.resourcesAt
	}
	e.Msg = fmt.Sprintf("cannot be enforced here: %v; run devkit where its cgroup v2 can pass the memory and cpu controllers on "+
		"(as root on a unified hierarchy, or in a delegated cgroup: systemd-run --user -p Delegate=yes …), or remove resources", err)
	return &e
}

// checkLogFile refuses a log file that exists and was not created by us:
// appending to it is harmless, but rotation would rename it away (think
// log_file: data/app.db). A file under the home, or an empty one, is adopted.
func (s *Supervisor) checkLogFile(spec *Process) error {
	fi, err := os.Stat(spec.LogFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	at := spec.logFileAt
	if at == nil {
		at = &ConfigError{File: s.cfg.Path, Field: "processes." + spec.Name + ".log_file"}
	}
	if !fi.Mode().IsRegular() {
		e := *at
		e.Msg = fmt.Sprintf("%s is not a regular file", spec.LogFile)
		return &e
	}
	ledger := s.ledger(spec.Name)
	if ok, err := ledger.Owns(spec.LogFile); err != nil || ok {
		return err
	}
	if fi.Size() == 0 || filepath.Dir(spec.LogFile) == filepath.Join(s.home.Root, "logs") {
		return logfile.Adopt(spec.LogFile, ledger)
	}
	e := *at
	e.Msg = fmt.Sprintf("%s exists and was not created by devkit sup (rotation would rename it); choose another log_file or move the file away", spec.LogFile)
	return &e
}
