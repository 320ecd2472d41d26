package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/lockfile"
	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// StatusSchema versions the JSON form of a status report; it changes only
// when a field is removed or changes meaning.
const StatusSchema = "devkit.sup.status/v1"

// State is what status knows about one process.
type State string

// States.
const (
	StateRunning    State = "running"    // the recorded process is alive and verified
	StateStopped    State = "stopped"    // not running: never started, or stopped on request
	StateExited     State = "exited"     // it ended on its own; see exit code and time
	StateRestarting State = "restarting" // it ended and its monitor will start it again after a backoff
	StateStale      State = "stale"      // the record's PID is gone or names another process; record cleaned
	StateOrphaned   State = "orphaned"   // the leader is gone but processes of its tree live on
	// StateUnsupervised: the process runs but its monitor is gone, so exit
	// codes and restarts are lost; `devkit sup restart NAME` fixes it.
	StateUnsupervised State = "unsupervised"
	// StateCorrupt: the record cannot be read; it is reported by name and
	// hides nothing else.
	StateCorrupt State = "corrupt"
	// StateCompleted: a oneshot (or a process under restart: never) that
	// ended with exit 0 on its own; status counts it as success.
	StateCompleted State = "completed"
	// StateUnhealthy: it runs but failed its periodic health check
	// (health.failures times in a row).
	StateUnhealthy State = "unhealthy"
	// StateDisabled: declared with disabled: true and not running; start
	// --all leaves it out, start NAME starts it. Status counts it as fine.
	StateDisabled State = "disabled"
)

// ProcessStatus is the status of one process.
type ProcessStatus struct {
	Name      string     `json:"name"`
	State     State      `json:"state"`
	PID       int        `json:"pid,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	// UptimeSeconds is how long the process has been running.
	UptimeSeconds float64 `json:"uptime_seconds,omitempty"`
	Restarts      int     `json:"restarts"`
	// ExitCode, ExitSignal and ExitedAt describe the last exit, if known.
	ExitCode   *int       `json:"exit_code,omitempty"`
	ExitSignal string     `json:"exit_signal,omitempty"`
	ExitedAt   *time.Time `json:"exited_at,omitempty"`
	// Drift is true when the running spec differs from the YAML, or the
	// YAML no longer declares the process.
	Drift bool `json:"drift"`
	// Configured is false for a recorded process the YAML no longer has.
	Configured bool           `json:"configured"`
	LogFile    string         `json:"log_file"`
	Reason     string         `json:"reason,omitempty"`
	Orphans    []SurvivorInfo `json:"orphans,omitempty"`
	// Descendants counts the live processes of its tree besides the
	// leader (children, and daemons that left the session).
	Descendants int `json:"descendants"`
	// Legacy is true for a record of the layout before projects.
	Legacy bool `json:"legacy,omitempty"`
	// LogWarning says why the monitor could not rotate or write the log
	// (the log may then outgrow log_max_size); empty when all is well.
	LogWarning string `json:"log_warning,omitempty"`
	// CPUSeconds (cumulative CPU time) and RSSBytes (resident memory; from
	// a cgroup, its memory.current) are the usage of the running tree, read
	// as UsageSource says; a CPU percentage is the change of CPUSeconds
	// between two reports over the time between them.
	CPUSeconds  float64 `json:"cpu_seconds,omitempty"`
	RSSBytes    int64   `json:"rss_bytes,omitempty"`
	UsageSource string  `json:"usage_source,omitempty"`
	// MemoryMax (bytes) and CPUMax (CPUs) are the resources limits the
	// process was started with (of the YAML when it does not run).
	MemoryMax int64   `json:"memory_max,omitempty"`
	CPUMax    float64 `json:"cpu_max,omitempty"`
	// OOMKills counts the processes of its tree the kernel killed for
	// memory_max (from its cgroup's memory.events; only with memory_max).
	OOMKills *int `json:"oom_kills,omitempty"`
}

// StatusReport is the versioned document `devkit sup status --json` prints.
type StatusReport struct {
	Schema    string          `json:"schema"`
	Project   string          `json:"project"`
	Processes []ProcessStatus `json:"processes"`
}

// Status reports on names, or on every known process when names is empty.
// A stale record is cleaned as a side effect, unless another CLI run holds
// that name's lock.
func (s *Supervisor) Status(ctx context.Context, names []string) ([]ProcessStatus, error) {
	return s.status(ctx, names, true, nil)
}

// DefaultRescan is how long a StatusReader made with rescan 0 reuses the
// members it found in a tree.
const DefaultRescan = 5 * time.Second

// A StatusReader reports the status of a project again and again, as a
// live view does every second. Each report verifies every leader and
// monitor and reads usage as Status does, but it looks for the members of
// a tree (its descendants, through /proc) only every rescan: in between it
// reuses those it found while the same leader and monitor live, each read
// for usage only while its start time still matches. A descendant started
// since is counted from the next rescan. It never decides what is signalled,
// and it only reads: a stale record is reported, not removed, so a live
// view that opens and quits changes nothing in the home.
type StatusReader struct {
	s     *Supervisor
	trees *treeCache
}

// NewStatusReader returns a StatusReader that looks for descendants every
// rescan (DefaultRescan when 0). It is safe for one caller at a time.
func (s *Supervisor) NewStatusReader(rescan time.Duration) *StatusReader {
	if rescan <= 0 {
		rescan = DefaultRescan
	}
	return &StatusReader{s: s, trees: &treeCache{every: rescan, byName: map[string]cachedTree{}, noCgroup: map[string]bool{}, files: newProcFiles()}}
}

// Status reports on names, or on every known process when names is empty,
// as Supervisor.Status does, without cleaning stale records.
func (r *StatusReader) Status(ctx context.Context, names []string) ([]ProcessStatus, error) {
	return r.s.status(ctx, names, false, r.trees)
}

// status reports on names; clean says whether stale records are removed;
// trees, when not nil, lends members found by an earlier report.
func (s *Supervisor) status(ctx context.Context, names []string, clean bool, trees *treeCache) ([]ProcessStatus, error) {
	names = s.expand(names)
	if len(names) == 0 {
		all, err := s.Names()
		if err != nil {
			return nil, err
		}
		legacy, err := s.LegacyNames()
		if err != nil {
			return nil, err
		}
		names = append(all, legacy...)
	}
	if err := validNames(names); err != nil {
		return nil, err
	}
	for _, name := range names {
		if err := s.checkKnown(name); err != nil {
			return nil, err
		}
	}
	// A StatusReader walks each tree (every rescan) rather than the table:
	// its cost then depends on the stack alone, not on the machine's other
	// processes.
	sc := &scan{preferTable: len(names) > 8 && trees == nil, trees: trees}
	out := make([]ProcessStatus, 0, len(names))
	var old *Supervisor
	for _, name := range names {
		from := s
		if s.isLegacy(name) {
			if old == nil {
				old = s.legacySupervisor()
			}
			from = old
		}
		st, err := from.statusOne(sc, name, time.Now(), clean)
		if from == old {
			st.Legacy = true
			if st.Reason == "" {
				st.Reason = "recorded in the layout before projects; `devkit sup stop " + name + "` stops it"
			}
		}
		if errors.Is(err, ErrCorrupt) {
			st.State, st.Reason = StateCorrupt, err.Error()+"; check what runs, then remove the file"
			err = nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	if trees != nil {
		trees.files.sweep()
	}
	return out, nil
}

func (s *Supervisor) statusOne(sc *scan, name string, now time.Time, clean bool) (ProcessStatus, error) {
	spec, configured := s.spec(name)
	st := ProcessStatus{Name: name, State: StateStopped, Configured: configured, LogFile: s.logPathOf(name)}
	if w, err := s.home.ReadLogWarning(name); err == nil && w != nil {
		st.LogWarning = w.Error
	}
	rec, err := s.home.ReadRecord(name)
	if err != nil {
		return st, err
	}
	if rec == nil {
		if configured && spec.Resources != nil {
			st.MemoryMax, st.CPUMax = spec.Resources.MemoryMax, spec.Resources.CPUMax
		}
		if configured && spec.Disabled {
			st.State = StateDisabled
		}
		return st, s.addExit(&st, 0)
	}
	st.PID, st.Restarts, st.LogFile = rec.Process.PID, rec.Restarts, rec.LogFile
	addLimits(&st, rec, spec)
	st.Drift = !configured || rec.Digest != spec.Digest()
	tr, err := sc.treeOf(rec)
	if err != nil {
		return st, err
	}
	st.Descendants = len(tr.members)
	if tr.otherBoot {
		st.State = StateStale
		st.Reason = fmt.Sprintf("the record of pid %d is from another boot; record removed, nothing signalled", rec.Process.PID)
		return st, s.cleanRecord(rec, clean)
	}
	if tr.leaderAlive {
		st.State = StateRunning
		started := rec.StartedAt
		st.StartedAt = &started
		st.UptimeSeconds = now.Sub(started).Round(time.Millisecond).Seconds()
		addUsage(&st, rec, tr, sc.trees)
		if rec.Monitor != nil && !tr.monitorAlive {
			st.State = StateUnsupervised
			st.Reason = fmt.Sprintf("its monitor (pid %d) is gone: exit codes and restarts are lost; run `devkit sup restart %s`", rec.Monitor.PID, name)
			return st, nil
		}
		if h, err := s.home.ReadHealth(name); err == nil && h != nil && h.PID == rec.Process.PID && !h.Healthy {
			st.State = StateUnhealthy
			st.Reason = fmt.Sprintf("health check failed %d times in a row: %s", h.Failures, h.LastError)
		}
		return st, nil
	}
	if len(tr.members) > 0 {
		st.State = StateOrphaned
		st.Orphans = survivorsOf(tr.members)
		st.Reason = "the process exited but its descendants live on; `devkit sup stop " + name + "` ends them"
		return st, nil
	}
	if errors.Is(tr.leaderErr, proc.ErrIdentityMismatch) {
		st.State = StateStale
		st.Reason = fmt.Sprintf("pid %d now belongs to another process (%s); record removed, nothing signalled", rec.Process.PID, tr.leaderNow.Comm)
		return st, s.cleanRecord(rec, clean)
	}
	if tr.monitorAlive {
		st.State = StateRestarting
		return st, s.addExit(&st, rec.Process.PID)
	}
	st.State = StateStale
	st.Reason = fmt.Sprintf("pid %d is gone and no exit was recorded; record removed", rec.Process.PID)
	if err := s.addExit(&st, rec.Process.PID); err != nil {
		return st, err
	}
	if exit, _ := s.home.ReadExit(name); exit != nil && exit.PID == rec.Process.PID && exit.RestartAt != nil && rec.Monitor != nil {
		// Its monitor died while waiting to restart it. The record stays, so
		// that every status says so until the user acts.
		st.State = StateExited
		st.Reason = fmt.Sprintf("its monitor (pid %d) is gone: it was to restart %s at %s, so the restart policy is no longer applied; run `devkit sup start %s`",
			rec.Monitor.PID, name, exit.RestartAt.Local().Format(time.TimeOnly), name)
		return st, nil
	}
	if st.ExitedAt != nil {
		st.State, st.Reason = StateExited, ""
	}
	return st, s.cleanRecord(rec, clean)
}

// addExit fills in the last recorded exit; with pid > 0 only an exit of
// that pid counts.
func (s *Supervisor) addExit(st *ProcessStatus, pid int) error {
	exit, err := s.home.ReadExit(st.Name)
	if err != nil || exit == nil || (pid > 0 && exit.PID != pid) {
		return err
	}
	code, at := exit.Code, exit.At
	if exit.Signal == "" && code >= 0 {
		st.ExitCode = &code
	}
	st.ExitSignal, st.ExitedAt, st.Restarts = exit.Signal, &at, exit.Restarts
	if (st.State == StateStopped || st.State == StateDisabled) && !exit.Stopped {
		st.State = StateExited
		p, ok := s.cfg.Processes[st.Name]
		if ok && exit.Code == 0 && exit.Signal == "" && (p.Oneshot || p.Restart.Mode == RestartNever) {
			st.State = StateCompleted
		}
	}
	if exit.GaveUp {
		st.Reason = fmt.Sprintf("gave up after %d restarts", exit.Restarts)
	}
	return nil
}

// cleanRecord removes a record known not to describe a live process,
// unless another run holds the lock (it is then busy with that record) or
// the caller only looks (clean is false).
func (s *Supervisor) cleanRecord(rec *state.ProcessRecord, clean bool) error {
	if !clean {
		return nil
	}
	l, ok, err := lockfile.TryAcquire(s.home.LockPath(rec.Name))
	if err != nil || !ok {
		return err
	}
	defer func() { _ = l.Release() }() // closing a lock file loses nothing; the kernel drops the lock at exit in any case
	if err := s.home.RemoveRecordIf(rec.Name, rec.Process); err != nil && !unwritable(err) {
		return err // a home that cannot be written keeps the record: status still reports
	}
	return nil
}

// addLimits reports the resources of the spec rec was started with (the
// YAML's, for a record without one), and the OOM kills of its cgroup.
func addLimits(st *ProcessStatus, rec *state.ProcessRecord, spec *Process) {
	var started struct {
		Resources *Resources `json:"resources"`
	}
	var r *Resources
	if len(rec.Spec) > 0 {
		if json.Unmarshal(rec.Spec, &started) == nil {
			r = started.Resources
		}
	} else if spec != nil {
		r = spec.Resources
	}
	if r == nil {
		return
	}
	st.MemoryMax, st.CPUMax = r.MemoryMax, r.CPUMax
	if r.MemoryMax > 0 && rec.Cgroup != "" {
		if n, ok := proc.CgroupOOMKills(rec.Cgroup); ok {
			st.OOMKills = &n
		}
	}
}

// AllRunning reports whether every status is running (as supervised),
// completed (a oneshot that succeeded) or disabled (not meant to run).
func AllRunning(sts []ProcessStatus) bool {
	for _, st := range sts {
		if st.State != StateRunning && st.State != StateCompleted && st.State != StateDisabled {
			return false
		}
	}
	return true
}
