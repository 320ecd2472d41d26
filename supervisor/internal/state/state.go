// Package state is the supervisor's on-disk contract between CLI runs:
// process records under pids/, applied digests under applied/, exit records
// under exits/, logs under logs/ and locks under locks/.
//
// Invariant: every file here is replaced atomically, and a process record
// is only written while the name's lock is held or by that name's monitor.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/atomicfile"
	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

// RecordVersion is the version of the record files' format.
const RecordVersion = 1

// ErrInvalidName reports a process name that could not safely name a file:
// empty, starting with '.' or '-', or holding anything but letters,
// digits, '.', '-' and '_' (so no separator, no "..", nothing absolute).
var ErrInvalidName = errors.New("invalid process name")

// ErrCorrupt reports a state file that cannot be decoded or does not
// describe the name it is filed under.
var ErrCorrupt = errors.New("corrupt state file")

// ValidName accepts names usable as file names on every platform; every
// path built from a name goes through it first.
func ValidName(name string) error {
	if name == "" || name[0] == '.' || name[0] == '-' {
		return fmt.Errorf("%w %q", ErrInvalidName, name)
	}
	for _, r := range name {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("%w %q: use letters, digits, '.', '-' and '_'", ErrInvalidName, name)
		}
	}
	return nil
}

// Layout locates the supervisor's files under its home directory.
type Layout struct{ Root string }

// Init creates the home's directories.
func (l Layout) Init() error {
	for _, d := range []string{"pids", "applied", "exits", "logs", "locks"} {
		if err := os.MkdirAll(filepath.Join(l.Root, d), 0o700); err != nil {
			return fmt.Errorf("supervisor: create home: %w", err)
		}
	}
	return nil
}

// RecordPath is where the process record of name lives.
func (l Layout) RecordPath(name string) string { return filepath.Join(l.Root, "pids", name+".json") }

// AppliedPath is where the applied digest of name lives.
func (l Layout) AppliedPath(name string) string {
	return filepath.Join(l.Root, "applied", name+".digest")
}

// ExitPath is where the last exit of name is recorded.
func (l Layout) ExitPath(name string) string { return filepath.Join(l.Root, "exits", name+".json") }

// LockPath is the lock file of name.
func (l Layout) LockPath(name string) string { return filepath.Join(l.Root, "locks", name+".lock") }

// StopMarkerPath is where stop leaves word for a monitor that the process
// with the PID inside is being stopped on purpose (and must not be restarted).
func (l Layout) StopMarkerPath(name string) string {
	return filepath.Join(l.Root, "locks", name+".stop")
}

// WriteStopMarker records that stop is ending the process pid of name.
func (l Layout) WriteStopMarker(name string, pid int) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return atomicfile.Write(l.StopMarkerPath(name), []byte(strconv.Itoa(pid)+"\n"), 0o600)
}

// StopRequested reports whether stop is ending the process pid of name.
func (l Layout) StopRequested(name string, pid int) bool {
	data, err := os.ReadFile(l.StopMarkerPath(name))
	return err == nil && strings.TrimSpace(string(data)) == strconv.Itoa(pid)
}

// RemoveStopMarker clears the stop marker of name.
func (l Layout) RemoveStopMarker(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return removeIfExists(l.StopMarkerPath(name))
}

// LogLedgerPath is where the files created for name's log are listed
// (rotation touches only those).
func (l Layout) LogLedgerPath(name string) string {
	return filepath.Join(l.Root, "logs", "."+name+".owned.json")
}

// DefaultLogPath is the log file of name when the YAML names none.
func (l Layout) DefaultLogPath(name string) string {
	return filepath.Join(l.Root, "logs", name+".log")
}

// ProcessRecord describes a started process well enough to find, verify
// and stop it without the YAML that started it.
type ProcessRecord struct {
	Version     int            `json:"version"`
	Name        string         `json:"name"`
	Process     proc.Identity  `json:"process"`           // the session and group leader
	Monitor     *proc.Identity `json:"monitor,omitempty"` // the monitor waiting for it
	StartedAt   time.Time      `json:"started_at"`
	Digest      string         `json:"digest"`
	LogFile     string         `json:"log_file"`
	StopSignal  string         `json:"stop_signal"`
	StopTimeout time.Duration  `json:"stop_timeout"`
	Restarts    int            `json:"restarts"`
	// Token is set in the process's environment (TokenEnv) and inherited
	// by its descendants: a process that left the session and lost its
	// parent is still recognised as ours by it.
	Token string `json:"token,omitempty"`
	// Project is the namespace the record belongs to.
	Project string `json:"project,omitempty"`
	// Cgroup is the cgroup v2 directory the monitor made for the process
	// (Linux, where the caller's cgroup is writable); every descendant is
	// in it. Its base name is CgroupPrefix + name + "-" + monitor PID.
	Cgroup string `json:"cgroup,omitempty"`
	// Spec is the resolved spec the process was started with, so that it
	// can be restarted from the record when the YAML cannot be read as it
	// was (a variable this shell lacks).
	Spec json.RawMessage `json:"spec,omitempty"`
}

// CgroupPrefix starts the name of every cgroup the supervisor makes; a
// record naming any other cgroup is not trusted.
const CgroupPrefix = "devkit-sup-"

// CgroupEnv, set to "off", makes monitors track descendants without a
// cgroup (subreaper and token only).
const CgroupEnv = "DEVKIT_SUP_CGROUP"

// TokenEnv is the environment variable carrying a record's Token.
const TokenEnv = "DEVKIT_SUP_TOKEN"

// ExitRecord is how a process last ended, written by its monitor.
type ExitRecord struct {
	Name     string    `json:"name"`
	PID      int       `json:"pid"`
	Code     int       `json:"code"`             // -1 when killed by a signal
	Signal   string    `json:"signal,omitempty"` // the signal that killed it
	At       time.Time `json:"at"`
	Stopped  bool      `json:"stopped"` // ended because stop asked it to
	Restarts int       `json:"restarts"`
	GaveUp   bool      `json:"gave_up,omitempty"` // restart policy exhausted
	// RestartAt is when the monitor means to start the process again (it
	// is waiting out a backoff); nil when it does not.
	RestartAt *time.Time `json:"restart_at,omitempty"`
}

// HealthRecord is what the monitor's periodic health check found for the
// process PID.
type HealthRecord struct {
	PID       int       `json:"pid"`
	Healthy   bool      `json:"healthy"`
	Failures  int       `json:"failures"` // consecutive
	LastError string    `json:"last_error,omitempty"`
	At        time.Time `json:"at"`
}

// LogWarning is why the monitor could not rotate (or write) name's log;
// it is removed by the next rotation that succeeds.
type LogWarning struct {
	Error string    `json:"error"`
	At    time.Time `json:"at"`
}

// LogWarningPath is where the monitor keeps name's log warning.
func (l Layout) LogWarningPath(name string) string {
	return filepath.Join(l.Root, "exits", name+".logwarn")
}

// WriteLogWarning stores w for name atomically.
func (l Layout) WriteLogWarning(name string, w *LogWarning) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return atomicfile.WriteJSON(l.LogWarningPath(name), w)
}

// ReadLogWarning returns name's log warning, or nil.
func (l Layout) ReadLogWarning(name string) (*LogWarning, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	var w LogWarning
	if err := atomicfile.ReadJSON(l.LogWarningPath(name), &w); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return &w, nil
}

// RemoveLogWarning removes name's log warning, if any.
func (l Layout) RemoveLogWarning(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return removeIfExists(l.LogWarningPath(name))
}

// HealthPath is where the monitor keeps name's health.
func (l Layout) HealthPath(name string) string {
	return filepath.Join(l.Root, "exits", name+".health")
}

// WriteHealth stores h for name atomically.
func (l Layout) WriteHealth(name string, h *HealthRecord) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return atomicfile.WriteJSON(l.HealthPath(name), h)
}

// ReadHealth returns name's health, or nil.
func (l Layout) ReadHealth(name string) (*HealthRecord, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	var h HealthRecord
	if err := atomicfile.ReadJSON(l.HealthPath(name), &h); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return &h, nil
}

// ReadRecord returns the record of name, or nil when there is none.
func (l Layout) ReadRecord(name string) (*ProcessRecord, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	var r ProcessRecord
	if err := atomicfile.ReadJSON(l.RecordPath(name), &r); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if r.Name != name {
		return nil, fmt.Errorf("%w: %s names process %q", ErrCorrupt, l.RecordPath(name), r.Name)
	}
	return &r, nil
}

// WriteRecord stores r atomically.
func (l Layout) WriteRecord(r *ProcessRecord) error {
	if err := ValidName(r.Name); err != nil {
		return err
	}
	r.Version = RecordVersion
	return atomicfile.WriteJSON(l.RecordPath(r.Name), r)
}

// RemoveRecord deletes the record of name; a missing record is fine.
func (l Layout) RemoveRecord(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return removeIfExists(l.RecordPath(name))
}

// RemoveRecordIf deletes the record of name only if it still describes
// the process id, so a newer record written meanwhile survives.
func (l Layout) RemoveRecordIf(name string, id proc.Identity) error {
	r, err := l.ReadRecord(name)
	if err != nil || r == nil || !r.Process.Same(id) {
		return err
	}
	return l.RemoveRecord(name)
}

// RecordNames lists the names that have a process record, sorted. A file
// under pids/ whose name is not a valid process name is listed in bad (by
// file name), never used to build a path.
func (l Layout) RecordNames() (names, bad []string, err error) {
	entries, err := os.ReadDir(filepath.Join(l.Root, "pids"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		switch {
		case !ok || strings.HasPrefix(e.Name(), "."):
			continue // temporary files of atomic writes, and strays
		case ValidName(name) != nil:
			bad = append(bad, e.Name())
		default:
			names = append(names, name)
		}
	}
	slices.Sort(names)
	slices.Sort(bad)
	return names, bad, nil
}

// ReadExit returns the last exit of name, or nil.
func (l Layout) ReadExit(name string) (*ExitRecord, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	var r ExitRecord
	if err := atomicfile.ReadJSON(l.ExitPath(name), &r); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return &r, nil
}

// WriteExit stores r atomically.
func (l Layout) WriteExit(r *ExitRecord) error {
	if err := ValidName(r.Name); err != nil {
		return err
	}
	return atomicfile.WriteJSON(l.ExitPath(r.Name), r)
}

// RemoveExit forgets the last exit of name.
func (l Layout) RemoveExit(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return removeIfExists(l.ExitPath(name))
}

// ReadApplied returns the digest last applied for name, or "".
func (l Layout) ReadApplied(name string) (string, error) {
	if err := ValidName(name); err != nil {
		return "", err
	}
	data, err := os.ReadFile(l.AppliedPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(data)), err
}

// WriteApplied records digest as applied for name.
func (l Layout) WriteApplied(name, digest string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return atomicfile.Write(l.AppliedPath(name), []byte(digest+"\n"), 0o600)
}

// RemoveApplied forgets the applied digest of name.
func (l Layout) RemoveApplied(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return removeIfExists(l.AppliedPath(name))
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
