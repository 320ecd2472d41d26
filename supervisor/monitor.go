package supervisor

// A monitor is the devkit binary re-executed for one process, in the manner
// of podman's conmon: it starts the process, writes its record, waits for
// it, records how it ended and applies the restart policy. It is not a
// daemon: it lives exactly as long as its process (plus backoff delays).
// Invariant: killing a monitor hides nothing, because the record names the
// process itself; stop and status never need the monitor. On Linux the
// monitor is a child subreaper, so every descendant of the process —
// daemons that double-fork or call setsid included — stays in its tree;
// it lives until the last of them is gone and reaps them all.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/logfile"
	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/ready"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// monitorRequest is what the CLI sends a monitor on its stdin.
type monitorRequest struct {
	Home    string   `json:"home"`
	Spec    *Process `json:"spec"`
	Digest  string   `json:"digest"` // computed by the CLI, recorded as is
	Project string   `json:"project,omitempty"`
}

// monitorReply is the one line a monitor writes on its stdout once the
// process runs (or could not be started); then it closes stdout.
type monitorReply struct {
	Process proc.Identity `json:"process"`
	Error   string        `json:"error,omitempty"`
}

// RunMonitor is the body of a monitor process: it reads its request from
// in, reports the started process on out and closes out, then supervises
// the process until it ends for good. It returns the exit code the monitor
// should exit with: the process's own.
func RunMonitor(in io.Reader, out io.WriteCloser) int {
	var req monitorRequest
	if err := json.NewDecoder(in).Decode(&req); err != nil || req.Spec == nil {
		reply(out, monitorReply{Error: fmt.Sprintf("bad monitor request: %v", err)})
		return 1
	}
	if req.Spec.MonitorProbesHTTP() && !ready.HTTPProbes {
		reply(out, monitorReply{Error: fmt.Sprintf("%s has an http health probe, and %v", req.Spec.Name, ready.ErrNoHTTPProbes)})
		return 1
	}
	if err := restoreMonitorEnv(); err != nil {
		reply(out, monitorReply{Error: fmt.Sprintf("monitor environment: %v", err)})
		return 1
	}
	// Diagnostics go to the process's log by path, so they follow the log
	// across rotation (stderr stays on the file open at start, for panics).
	home := state.Layout{Root: req.Home}
	ledger := logfile.Ledger{Path: home.LogLedgerPath(req.Spec.Name)}
	logger := slog.New(slog.NewTextHandler(appendFile{req.Spec.LogFile, ledger}, nil)).With("component", "devkit-sup-monitor")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	signal.Ignore(syscall.SIGHUP)
	// As systemd's IgnoreSIGPIPE= (on by default): the process inherits
	// SIGPIPE ignored, so if this monitor is killed its writes to the
	// output pipe fail with EPIPE instead of ending it.
	signal.Ignore(syscall.SIGPIPE)
	if req.Digest == "" {
		req.Digest = req.Spec.Digest()
	}
	m := &monitor{home: home, ledger: ledger, spec: req.Spec, digest: req.Digest, project: req.Project, logger: logger.With("name", req.Spec.Name)}
	m.logWarning = "unknown"               // not "": the first outcome is always recorded
	m.specJSON, _ = json.Marshal(req.Spec) // decoded from JSON just above: cannot fail
	if err := proc.BecomeSubreaper(); err != nil {
		m.logger.Warn("cannot become a child subreaper; daemons that leave the session are found by token only", "err", err)
	}
	m.reaper = proc.NewReaper()
	m.makeCgroup()
	defer m.removeCgroup()
	return m.run(ctx, out)
}

// makeCgroup gives the process a cgroup v2 of its own under the monitor's
// cgroup, where that is writable (and not turned off with CgroupEnv).
// With resources, the cgroup must take the limits: otherwise limitsErr
// says why, and no process is started.
func (m *monitor) makeCgroup() {
	parent, err := limitsParent(m.spec.Resources, os.Getenv(state.CgroupEnv) == "off")
	if err != nil {
		m.limitsErr = err
		return
	}
	if parent == "" {
		if !proc.CgroupsAvailable || os.Getenv(state.CgroupEnv) == "off" {
			return
		}
		if parent, err = proc.OwnCgroupDir(); err != nil {
			return // no unified hierarchy: the subreaper tracks the tree
		}
	}
	dir := filepath.Join(parent, state.CgroupPrefix+m.spec.Name+"-"+strconv.Itoa(os.Getpid()))
	f, err := proc.MakeCgroup(dir)
	if err != nil {
		m.limitsErr = err // not delegated to us: the subreaper tracks the tree
		return
	}
	m.cgroup, m.cgroupDir = f, dir
	if r := m.spec.Resources; r != nil {
		if err := proc.SetCgroupLimits(dir, r.MemoryMax, r.CPUMax); err != nil {
			m.limitsErr = err
			m.removeCgroup()
			m.cgroup, m.cgroupDir = nil, ""
		}
	}
}

// limitsParent returns where the cgroup of a process with resources is
// made ("" without resources), or why resources cannot be enforced here.
func limitsParent(r *Resources, cgroupOff bool) (string, error) {
	if r == nil {
		return "", nil
	}
	if !proc.CgroupsAvailable {
		return "", errors.New("resource limits need Linux's cgroup v2")
	}
	if cgroupOff {
		return "", fmt.Errorf("cgroups are turned off (%s=off)", state.CgroupEnv)
	}
	own, err := proc.OwnCgroupDir()
	if err != nil {
		return "", fmt.Errorf("no cgroup v2: %w", err)
	}
	return proc.LimitsParent(own)
}

// removeCgroup removes the process's cgroup once it is empty.
func (m *monitor) removeCgroup() {
	if m.cgroup == nil {
		return
	}
	_ = m.cgroup.Close() // a directory opened read-only
	if err := proc.RemoveCgroup(m.cgroupDir); err != nil {
		m.logger.Warn("remove cgroup", "dir", m.cgroupDir, "err", err)
	}
}

type monitor struct {
	home    state.Layout
	spec    *Process
	digest  string
	project string
	logger  *slog.Logger
	reaper  *proc.Reaper
	ledger  logfile.Ledger
	// cgroup is open on cgroupDir, the process's own cgroup, when there is one.
	cgroup    *os.File
	cgroupDir string
	// limitsErr says why the spec's resources cannot be enforced (and
	// then nothing is started).
	limitsErr error
	// specJSON is spec as the record keeps it.
	specJSON json.RawMessage
	// captures counts the goroutines copying output to the log.
	captures sync.WaitGroup
	// logWarning is the last rotation error recorded ("" when none).
	logMu      sync.Mutex
	logWarning string
}

// run starts the process and restarts it as the policy says. ctx ends when
// stop has asked the monitor to let the process go.
func (m *monitor) run(ctx context.Context, out io.WriteCloser) int {
	// The record names its monitor so that stop can end it too. A monitor
	// that cannot read its own identity records none: stop then finds the
	// process alone, and this monitor ends when the process does.
	var monitorID *proc.Identity
	if self, err := proc.Lookup(os.Getpid()); err == nil {
		monitorID = &self.Identity
	} else {
		m.logger.Warn("cannot read the monitor's own identity; the record names no monitor", "err", err)
	}
	pol := m.spec.Restart
	restarts, consecutive := 0, 0
	for {
		token := newToken()
		exited, id, captured, err := m.spawn(token)
		started := time.Now()
		if err == nil {
			// The record exists before anyone hears of the process.
			rec := &state.ProcessRecord{
				Name: m.spec.Name, Process: id, Monitor: monitorID, StartedAt: started,
				Digest: m.digest, LogFile: m.spec.LogFile, StopSignal: m.spec.StopSignal,
				StopTimeout: m.spec.StopTimeout, Restarts: restarts, Token: token, Project: m.project,
				Cgroup: m.cgroupDir, Spec: m.specJSON,
			}
			if werr := m.home.WriteRecord(rec); werr != nil {
				m.logger.Error("write record", "err", werr)
			}
		}
		if out != nil {
			if err != nil {
				reply(out, monitorReply{Error: err.Error()})
				return 127
			}
			reply(out, monitorReply{Process: id})
			out = nil
		}
		var code, signum int
		var sig string
		changed := false // the watch ended it: files changed
		endedAt := time.Now()
		if err != nil {
			m.logger.Error("restart failed", "err", err)
			code = 127
		} else {
			if ctx.Err() != nil { // told to stop while we were starting it
				m.signalStop(id)
			}
			stopHealth := m.watchHealth(id)
			stopWatch := m.watchFiles(id)
			st := <-exited
			endedAt = time.Now()
			stopHealth()
			changed = stopWatch()
			// Whoever reads the exit record may read the log next: what
			// the process wrote before it ended is there first.
			m.awaitCapture(captured)
			code = st.Code
			if st.Signal != 0 {
				sig, signum = proc.SignalName(st.Signal), int(st.Signal)
			}
		}
		stopped := m.stopRequested(ctx, id.PID)
		if time.Since(started) >= max(StableRun, pol.MaxBackoff) {
			consecutive = 0
		}
		wants := pol.Mode == RestartAlways || (pol.Mode == RestartOnFailure && code != 0)
		restart := !stopped && wants && (pol.MaxRestarts == 0 || consecutive < pol.MaxRestarts)
		if changed && !stopped {
			// A restart for changed files is asked for, whatever the policy,
			// and is no failure: no backoff, no count towards max_restarts.
			wants, restart, consecutive = true, true, 0
		}
		exit := &state.ExitRecord{
			Name: m.spec.Name, PID: id.PID, Code: code, Signal: sig, At: endedAt.UTC(),
			Stopped: stopped, Restarts: restarts, GaveUp: !stopped && wants && !restart,
		}
		var delay time.Duration
		if restart && !changed {
			delay = pol.Delay(consecutive + 1)
		}
		if restart {
			at := exit.At.Add(delay)
			exit.RestartAt = &at
		}
		if err := m.home.WriteExit(exit); err != nil {
			m.logger.Error("write exit record", "err", err)
		}
		if !restart {
			if exit.GaveUp {
				m.logger.Warn("giving up", "pid", id.PID, "code", code, "restarts", restarts)
			}
			m.forget(ctx, id)
			return exitCode(code, signum)
		}
		consecutive++
		restarts++
		m.logger.Info("process ended; restarting", "pid", id.PID, "code", code, "signal", sig, "in", delay, "attempt", consecutive)
		if !m.sleep(ctx, delay, id.PID) {
			m.forget(ctx, id)
			return exitCode(code, signum)
		}
	}
}

// stopRequested reports whether stop is ending process pid: it signalled
// the monitor (Unix) or left a stop marker (every platform).
func (m *monitor) stopRequested(ctx context.Context, pid int) bool {
	return ctx.Err() != nil || m.home.StopRequested(m.spec.Name, pid)
}

// sleep waits out a restart backoff; it returns false when a stop arrives
// meanwhile, so a stopped process is never started again.
func (m *monitor) sleep(ctx context.Context, d time.Duration, pid int) bool {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if proc.PollEvery(wctx, stopMarkerPoll, func() bool { return m.stopRequested(ctx, pid) }) == nil {
		return false // a stop arrived
	}
	return !m.stopRequested(ctx, pid)
}

// stopMarkerPoll is how often a monitor in a restart backoff looks for a
// stop marker.
const stopMarkerPoll = 50 * time.Millisecond

// spawn starts the process in its own session with stdin from the null
// device and its output on a pipe the monitor copies to the log file
// (capture), which rotates it exactly.
func (m *monitor) spawn(token string) (exited <-chan proc.ExitStatus, id proc.Identity, captured <-chan struct{}, err error) {
	// Also clears a warning an earlier monitor left, once rotation works.
	_, err = logfile.RotateIfOver(m.spec.LogFile, m.spec.LogMaxSize, m.spec.LogBackups, m.ledger)
	m.logRotated(err)
	pipeR, out, err := os.Pipe()
	if err != nil {
		return nil, proc.Identity{}, nil, err
	}
	defer func() { _ = out.Close() }() // the child holds its own copy
	// The environment is built once, for the retry without a cgroup too.
	env := append(m.spec.Environ(), state.TokenEnv+"="+token)
	command := func(attr *syscall.SysProcAttr) *exec.Cmd {
		cmd := exec.Command(m.spec.Command, m.spec.Args...)
		cmd.Dir, cmd.Env = m.spec.Cwd, env
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = attr
		if r := m.spec.RunAs; r != nil {
			cmd.SysProcAttr = proc.WithCredential(attr, r.UID, r.GID, r.Groups)
		}
		return cmd
	}
	if m.spec.Resources != nil && m.cgroup == nil {
		_ = pipeR.Close() // nothing was started
		return nil, proc.Identity{}, nil, fmt.Errorf("resources cannot be enforced: %w", m.limitsErr)
	}
	attr := proc.DetachedAttr()
	if m.cgroup != nil {
		attr = proc.IntoCgroupAttr(int(m.cgroup.Fd()))
	}
	cmd := command(attr)
	exited, err = m.reaper.Start(cmd)
	if err != nil && m.cgroup != nil && m.spec.Resources == nil {
		// The kernel refused the cgroup (no clone3, a controller's rules):
		// track the tree by subreaper and token instead.
		m.logger.Warn("start in a cgroup of its own failed; tracking without it", "err", err)
		m.removeCgroup()
		m.cgroup, m.cgroupDir = nil, ""
		cmd = command(proc.DetachedAttr())
		exited, err = m.reaper.Start(cmd)
	}
	if err != nil {
		_ = pipeR.Close() // the start error is the one to report
		return nil, proc.Identity{}, nil, fmt.Errorf("start %s: %w", m.spec.Command, err)
	}
	done := make(chan struct{})
	m.captures.Add(1)
	go func() {
		defer m.captures.Done()
		defer close(done)
		defer func() { _ = pipeR.Close() }() // read-only
		err := captureLog(pipeR, m.spec.LogFile, logfile.CaptureOptions{
			MaxSize: m.spec.LogMaxSize, Backups: m.spec.LogBackups, Ledger: m.ledger,
			Stamp: m.spec.LogTimestamps, Rotated: m.logRotated,
		})
		if err != nil { // the log could not be opened (or reopened after a rotation)
			m.logger.Error("copy output to the log", "err", err)
			m.logRotated(fmt.Errorf("output no longer reaches the log: %w", err))
			_, _ = io.Copy(io.Discard, pipeR) // never block the process on a log it cannot have
		}
	}()
	id = proc.Identity{PID: cmd.Process.Pid}
	if info, err := proc.Lookup(cmd.Process.Pid); err == nil {
		id = info.Identity
	}
	return exited, id, done, nil
}

// captureLog copies a process's output to its log (a variable so that
// tests can slow the copy down, as a loaded machine or a slow disk does).
var captureLog = logfile.Capture

// exitDrain bounds how long an exit's record waits for the output the
// process wrote before it ended to reach the log. The copy ends when the
// pipe's last writer is gone; a descendant that inherited the pipe and
// lives on would hold the record back until then, so the wait is bounded.
const exitDrain = time.Second

// awaitCapture waits until the output copied from one run of the process
// is in the log (the copy reached the end of the pipe), for at most
// exitDrain.
func (m *monitor) awaitCapture(captured <-chan struct{}) {
	t := time.NewTimer(exitDrain)
	defer t.Stop()
	select {
	case <-captured:
	case <-t.C:
		m.logger.Info("output pipe still open after the process ended (a descendant holds it); recording the exit without waiting for it")
	}
}

// newToken returns the random token a process and its descendants carry
// in their environment.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// logRotated records the outcome of a rotation where status reads it: a
// failure as a log warning, a success by removing the warning.
func (m *monitor) logRotated(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	m.logMu.Lock()
	defer m.logMu.Unlock()
	if msg == m.logWarning {
		return
	}
	m.logWarning = msg
	if err == nil {
		if rerr := m.home.RemoveLogWarning(m.spec.Name); rerr != nil {
			m.logger.Warn("remove log warning", "err", rerr)
		}
		return
	}
	m.logger.Warn("rotate log", "err", err)
	w := &state.LogWarning{Error: msg, At: time.Now().UTC()}
	if werr := m.home.WriteLogWarning(m.spec.Name, w); werr != nil {
		m.logger.Warn("write log warning", "err", werr)
	}
}

// watchHealth runs the liveness probe (or, without one, the ready probe)
// every health.every once it first passes (or once its timeout has gone by
// without it passing). health.failures failures in a row make the process
// unhealthy (status shows it); when its restart policy restarts failures,
// the monitor ends it — stop signal, SIGKILL after stop_timeout — so that
// the policy applies. The returned func, called once the process has
// exited, stops the watch.
func (m *monitor) watchHealth(id proc.Identity) func() {
	hc := m.spec.Health
	check := m.spec.HealthProbe()
	if hc == nil || check == nil {
		return func() {}
	}
	probed := *m.spec
	probed.Ready = check
	probe, err := probeFor(&probed, 0, m.reaper.Run)
	if err != nil {
		m.logger.Warn("health probe", "err", err)
		return func() {}
	}
	exited := make(chan struct{})
	stopped := make(chan struct{})
	write := func(h *state.HealthRecord) {
		h.PID, h.At = id.PID, time.Now().UTC()
		if err := m.home.WriteHealth(m.spec.Name, h); err != nil {
			m.logger.Warn("write health", "err", err)
		}
	}
	go func() {
		defer close(stopped)
		wait := time.NewTimer(0)
		defer wait.Stop()
		ready, failures := false, 0
		began := time.Now()
		for {
			select {
			case <-exited:
				return
			case <-wait.C:
			}
			err := probe.Check(context.Background()) // each attempt is bounded by the probe
			switch {
			case !ready && err != nil && time.Since(began) < check.Timeout:
				// Not ready yet: health counts from readiness, or from the
				// end of the ready timeout.
				wait.Reset(check.Interval)
				continue
			case err == nil:
				if !ready || failures > 0 {
					write(&state.HealthRecord{Healthy: true})
				}
				ready, failures = true, 0
				wait.Reset(hc.Every)
				continue
			}
			failures++
			write(&state.HealthRecord{Healthy: failures < hc.Failures, Failures: failures, LastError: err.Error()})
			if failures >= hc.Failures && m.spec.Restart.Mode != RestartNever {
				m.logger.Warn("unhealthy; ending it so that the restart policy applies", "pid", id.PID, "failures", failures, "err", err)
				m.end(id, exited)
				return
			}
			wait.Reset(hc.Every)
		}
	}()
	return func() { close(exited); <-stopped }
}

// end stops the process id as stop would (its group, then SIGKILL after
// stop_timeout), without a stop marker: the exit counts as a failure.
func (m *monitor) end(id proc.Identity, exited <-chan struct{}) {
	m.signalStop(id)
	select {
	case <-exited:
	case <-time.After(m.spec.StopTimeout):
		if h, err := proc.Open(id); err == nil {
			if err := proc.SignalGroup(id.PID, proc.Kill); err != nil {
				m.logger.Warn("kill unhealthy process group", "err", err)
			}
			_ = h.Signal(proc.Kill) // gone already is fine
			_ = h.Close()           // releasing a handle: nothing to act on
		}
	}
}

// treePoll is how often a monitor whose process ended looks whether the
// rest of the tree is gone.
const treePoll = 50 * time.Millisecond

// forget waits until no descendant of the monitor is left — they are still
// ours to find and stop, and ours to reap — then removes the record of the
// ended process id. While a stop is in progress the record is left to
// stop, which removes it once everything is gone.
func (m *monitor) forget(ctx context.Context, id proc.Identity) {
	self := os.Getpid()
	warned := false
	// Not cut short by ctx: the descendants are ours to reap until the end.
	_ = proc.PollEvery(context.Background(), treePoll, func() bool { // never fails: its context never ends
		desc, err := proc.DescendantsOf(self)
		if err != nil {
			m.logger.Warn("cannot list the process's descendants; removing its record without waiting for them", "err", err)
			return true
		}
		if len(desc) > 0 && !warned {
			warned = true
			m.logger.Warn("process ended but its descendants live on; keeping the record", "pid", id.PID, "descendants", len(desc))
		}
		return len(desc) == 0
	})
	m.waitCaptures()
	if m.stopRequested(ctx, id.PID) {
		return
	}
	if err := m.home.RemoveRecordIf(m.spec.Name, id); err != nil {
		m.logger.Warn("remove record", "err", err)
	}
}

// captureDrain bounds how long a monitor whose tree is gone waits for the
// last output to reach the log: only a process outside the tree that was
// handed the pipe could keep it open.
const captureDrain = 5 * time.Second

// waitCaptures waits until every output copied to the log has been
// written (the pipe's writers are gone), for at most captureDrain.
func (m *monitor) waitCaptures() {
	done := make(chan struct{})
	go func() { m.captures.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(captureDrain):
		m.logger.Warn("output pipe still open after the process tree ended; leaving it")
	}
}

// signalStop sends the stop signal to the process group of id.
func (m *monitor) signalStop(id proc.Identity) {
	if h, err := proc.Open(id); err == nil {
		defer func() { _ = h.Close() }() // releasing a handle: nothing to act on
		if sig, err := proc.SignalNumber(m.spec.StopSignal); err == nil {
			if err := proc.SignalGroup(id.PID, sig); err != nil {
				m.logger.Warn("signal process group", "pid", id.PID, "err", err)
			}
		}
	}
}

// appendFile is an io.Writer that appends each write to the file at its
// path, opening it anew every time (a file it creates enters the ledger).
type appendFile struct {
	path   string
	ledger logfile.Ledger
}

func (p appendFile) Write(b []byte) (int, error) {
	f, err := logfile.OpenAppend(p.path, p.ledger)
	if err != nil {
		return 0, err
	}
	n, err := f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func reply(out io.WriteCloser, r monitorReply) {
	data, _ := json.Marshal(r) // cannot fail: strings and numbers only
	// The CLI waits on this pipe; if it is gone there is nobody to tell.
	_, _ = out.Write(append(data, '\n'))
	_ = out.Close()
}

// exitCode is the monitor's own exit code: the process's, or 128+signal.
func exitCode(code, signum int) int {
	if code >= 0 {
		return code
	}
	return 128 + signum
}

// readReply reads the monitor's one-line reply.
func readReply(r io.Reader) (monitorReply, error) {
	line, err := bufio.NewReader(r).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return monitorReply{}, fmt.Errorf("monitor exited before reporting: %w", err)
	}
	var rep monitorReply
	if err := json.Unmarshal(line, &rep); err != nil {
		return monitorReply{}, fmt.Errorf("monitor reply %q: %w", line, err)
	}
	return rep, nil
}
