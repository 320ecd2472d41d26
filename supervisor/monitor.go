package supervisor

// A monitor is the devkit binary re-executed for one process, in the manner
// of podman's conmon: it starts the process, writes its record, waits for
// it, records how it ended and applies the restart policy. It is not a
// daemon: it lives exactly as long as its process (plus backoff delays).
// Invariant: killing a monitor hides nothing, because the record names the
// process itself; stop and status never need the monitor.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/logfile"
	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// monitorRequest is what the CLI sends a monitor on its stdin.
type monitorRequest struct {
	Home   string   `json:"home"`
	Spec   *Process `json:"spec"`
	Digest string   `json:"digest"` // computed by the CLI, recorded as is
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
	// Diagnostics go to the process's log by path, so they follow the log
	// across rotation (stderr stays on the file open at start, for panics).
	logger := slog.New(slog.NewTextHandler(appendFile(req.Spec.LogFile), nil)).With("component", "devkit-sup-monitor")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	signal.Ignore(syscall.SIGHUP)
	if req.Digest == "" {
		req.Digest = req.Spec.Digest()
	}
	m := &monitor{home: state.Layout{Root: req.Home}, spec: req.Spec, digest: req.Digest, logger: logger.With("name", req.Spec.Name)}
	return m.run(ctx, out)
}

type monitor struct {
	home   state.Layout
	spec   *Process
	digest string
	logger *slog.Logger
}

// run starts the process and restarts it as the policy says. ctx ends when
// stop has asked the monitor to let the process go.
func (m *monitor) run(ctx context.Context, out io.WriteCloser) int {
	self, _ := proc.Lookup(os.Getpid())
	pol := m.spec.Restart
	restarts, consecutive := 0, 0
	for {
		cmd, id, err := m.spawn()
		started := time.Now()
		if err == nil {
			// The record exists before anyone hears of the process.
			rec := &state.ProcessRecord{
				Name: m.spec.Name, Process: id, Monitor: &self.Identity, StartedAt: started,
				Digest: m.digest, LogFile: m.spec.LogFile, StopSignal: m.spec.StopSignal,
				StopTimeout: m.spec.StopTimeout, Restarts: restarts,
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
		if err != nil {
			m.logger.Error("restart failed", "err", err)
			code = 127
		} else {
			if ctx.Err() != nil { // stop arrived while we were starting it
				m.signalStop(id)
			}
			code, sig, signum = exitStatus(cmd.Wait())
		}
		stopped := m.stopRequested(ctx, id.PID)
		if time.Since(started) >= max(StableRun, pol.MaxBackoff) {
			consecutive = 0
		}
		wants := pol.Mode == RestartAlways || (pol.Mode == RestartOnFailure && code != 0)
		restart := !stopped && wants && (pol.MaxRestarts == 0 || consecutive < pol.MaxRestarts)
		exit := &state.ExitRecord{
			Name: m.spec.Name, PID: id.PID, Code: code, Signal: sig, At: time.Now().UTC(),
			Stopped: stopped, Restarts: restarts, GaveUp: !stopped && wants && !restart,
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
		delay := pol.Delay(consecutive)
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
	timer := time.NewTimer(d)
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return !m.stopRequested(ctx, pid)
		case <-tick.C:
			if m.stopRequested(ctx, pid) {
				return false
			}
		}
	}
}

// spawn starts the process in its own session with its output appended to
// the log file and stdin from the null device.
func (m *monitor) spawn() (*exec.Cmd, proc.Identity, error) {
	if _, err := logfile.RotateIfOver(m.spec.LogFile, m.spec.LogMaxSize, m.spec.LogBackups); err != nil {
		m.logger.Warn("rotate log", "err", err)
	}
	logf, err := logfile.OpenAppend(m.spec.LogFile)
	if err != nil {
		return nil, proc.Identity{}, err
	}
	defer logf.Close()
	cmd := exec.Command(m.spec.Command, m.spec.Args...)
	cmd.Dir = m.spec.Cwd
	cmd.Env = os.Environ()
	for k, v := range m.spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = proc.DetachedAttr()
	if err := cmd.Start(); err != nil {
		return nil, proc.Identity{}, fmt.Errorf("start %s: %w", m.spec.Command, err)
	}
	id := proc.Identity{PID: cmd.Process.Pid}
	if info, err := proc.Lookup(cmd.Process.Pid); err == nil {
		id = info.Identity
	}
	return cmd, id, nil
}

// survivorGrace is how long the rest of a session gets to follow its
// leader out before the monitor calls it orphaned.
const survivorGrace = 250 * time.Millisecond

// forget removes the record of the ended process id, unless processes of
// its session live on: they are still ours to find and stop. While a stop
// is in progress the record is left to stop, which removes it once the
// whole session is gone.
func (m *monitor) forget(ctx context.Context, id proc.Identity) {
	if m.stopRequested(ctx, id.PID) {
		return
	}
	deadline := time.Now().Add(survivorGrace)
	for {
		members, err := proc.SessionMembers(id.PID)
		if err != nil || len(members) == 0 {
			break
		}
		if time.Now().After(deadline) {
			m.logger.Warn("process ended but its session lives on; keeping the record", "pid", id.PID, "survivors", len(members))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.home.RemoveRecordIf(m.spec.Name, id)
}

// signalStop sends the stop signal to the process group of id.
func (m *monitor) signalStop(id proc.Identity) {
	if h, err := proc.Open(id); err == nil {
		defer h.Close()
		if sig, err := proc.SignalNumber(m.spec.StopSignal); err == nil {
			proc.SignalGroup(id.PID, sig)
		}
	}
}

// appendFile is an io.Writer that appends each write to the file at its
// path, opening it anew every time.
type appendFile string

func (p appendFile) Write(b []byte) (int, error) {
	f, err := os.OpenFile(string(p), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Write(b)
}

func reply(out io.WriteCloser, r monitorReply) {
	data, _ := json.Marshal(r)
	out.Write(append(data, '\n'))
	out.Close()
}

// exitStatus turns cmd.Wait's result into an exit code and, when a signal
// ended the process, its name.
func exitStatus(err error) (code int, sig string, signum int) {
	if err == nil {
		return 0, "", 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 127, "", 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, proc.SignalName(ws.Signal()), int(ws.Signal())
	}
	return ee.ExitCode(), "", 0
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
