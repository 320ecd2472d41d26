package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/devkit-go/devkit/supervisor/internal/lockfile"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// Errors callers test for.
var (
	// ErrUnknownProcess: the name is neither in the YAML nor recorded.
	ErrUnknownProcess = errors.New("unknown process")
	// ErrStopTimeout: the process outlived its stop timeout and force was not given.
	ErrStopTimeout = errors.New("process did not stop in time")
	// ErrSurvivors: processes of the stopped process's session are still alive.
	ErrSurvivors = errors.New("processes of the session survived")
	// ErrNoMonitor: Options.MonitorCommand is empty and the running
	// executable does not call MonitorMain or cannot be found, so nothing
	// can be started.
	ErrNoMonitor = errors.New("no monitor command configured")
	// ErrInvalidName: a name that cannot safely name a file (a separator,
	// "..", an absolute path...). Nothing is read, created or removed for it.
	ErrInvalidName = state.ErrInvalidName
	// ErrCorrupt: a state file of the name cannot be read; it is reported
	// by name and hides nothing else.
	ErrCorrupt = state.ErrCorrupt
)

// ValidName reports whether name may name a process: letters, digits,
// '.', '-' and '_', not starting with '.' or '-'. The YAML, the command
// line and the records all go through it.
func ValidName(name string) error { return state.ValidName(name) }

// validNames checks every name before anything touches a file.
func validNames(names []string) error {
	for _, n := range names {
		if err := ValidName(n); err != nil {
			return err
		}
	}
	return nil
}

// Options configure a Supervisor. The zero value inspects, stops and
// starts processes, with the running executable as their monitors.
type Options struct {
	// MonitorCommand is the program (and leading arguments) that runs one
	// process's monitor: it must call RunMonitor with its stdin and stdout.
	// Empty means the running executable, re-executed with MonitorEnvVar
	// set, which must call MonitorMain first in main: the child runs the
	// monitor there and exits (without that call, Start fails with ErrNoMonitor).
	MonitorCommand []string
	// MonitorCommandFunc, when set, chooses the monitor command of each
	// process about to start instead of MonitorCommand; nil from it means
	// MonitorCommand. It is called only when a monitor starts, so a choice
	// that costs something (devkit runs its small monitor program to check
	// its version, once) is paid only by a run that starts a process.
	MonitorCommandFunc func(spec *Process) []string
	// MonitorEnv is added to the monitor's environment.
	MonitorEnv []string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Project names the namespace of this configuration's state; empty
	// means ProjectKey of the config file's path.
	Project string
	// OnLockWait, when set, is told that an operation on name waits for
	// the lock held by another run (holder is its PID, 0 if unknown).
	OnLockWait func(name string, holder int)
}

// Supervisor starts, stops and inspects the processes of one Config, with
// all state under one home directory. Every method derives what is running
// from the records on disk and the kernel; a Supervisor holds no registry.
type Supervisor struct {
	home    state.Layout // the project's namespace: <root>/projects/<key>
	legacy  state.Layout // records of the layout before projects: <root>
	project string
	cfg     *Config
	opts    Options
	logger  *slog.Logger
}

// New returns a Supervisor keeping its state under home, in the namespace
// of its project (Options.Project, else ProjectKey of cfg.Path): two
// projects under one home never see each other's processes. cfg may be
// nil to work from the records alone (status and stop of what was started).
func New(home string, cfg *Config, opts Options) (*Supervisor, error) {
	if cfg == nil {
		cfg = &Config{Processes: map[string]*Process{}}
	}
	project := opts.Project
	if project == "" {
		project = ProjectKeyIn(home, cfg.Path)
	}
	if err := ValidName(project); err != nil {
		return nil, fmt.Errorf("supervisor: project: %w", err)
	}
	layout := state.Layout{Root: filepath.Join(home, "projects", project)}
	if err := layout.Init(); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Supervisor{home: layout, legacy: state.Layout{Root: home}, project: project, cfg: cfg, opts: opts, logger: logger}, nil
}

// ProjectKey derives a project's namespace from its config file: the
// directory's name (made file-safe) plus 8 hex digits of the SHA-256 of
// the file's real path (absolute, symlinks followed, so one file reached
// through a symlinked directory is one project), e.g. "shop-3f2a9c1d". An
// empty path gives "default".
func ProjectKey(configPath string) string {
	if configPath == "" {
		return "default"
	}
	return keyOf(realPath(configPath))
}

// ProjectKeyIn is ProjectKey for a home that may hold a project recorded
// under the key of the path as given (before symlinks were followed): that
// one is used while it exists and the real path's does not, so processes
// started before are still found.
func ProjectKeyIn(home, configPath string) string {
	key := ProjectKey(configPath)
	if configPath == "" {
		return key
	}
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return key
	}
	literal := keyOf(abs)
	if literal == key || dirExists(filepath.Join(home, "projects", key)) || !dirExists(filepath.Join(home, "projects", literal)) {
		return key
	}
	return literal
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// realPath is path made absolute with every symlink followed; a file that
// does not exist yet is resolved through its directory.
func realPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// keyOf is the project key of the absolute path abs.
func keyOf(abs string) string {
	base := []byte(filepath.Base(filepath.Dir(abs)))
	for i, c := range base {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			base[i] = '-'
		}
	}
	name := strings.Trim(string(base), "-")
	if len(name) > 32 {
		name = name[:32]
	}
	sum := sha256.Sum256([]byte(abs))
	if name == "" {
		return hex.EncodeToString(sum[:4])
	}
	return name + "-" + hex.EncodeToString(sum[:4])
}

// Project returns the namespace the supervisor works in.
func (s *Supervisor) Project() string { return s.project }

// legacySupervisor works on the records of the layout before projects,
// which are still found, reported and stoppable by name.
func (s *Supervisor) legacySupervisor() *Supervisor {
	return &Supervisor{home: s.legacy, legacy: s.legacy, project: "", cfg: &Config{Processes: map[string]*Process{}}, opts: s.opts, logger: s.logger}
}

// LegacyNames lists the processes recorded in the layout before projects
// that the project does not know.
func (s *Supervisor) LegacyNames() ([]string, error) {
	names, _, err := s.legacy.RecordNames()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !s.knownHere(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// knownHere reports whether the project (YAML or records) knows name.
func (s *Supervisor) knownHere(name string) bool {
	if _, ok := s.cfg.Processes[name]; ok {
		return true
	}
	if r, err := s.home.ReadRecord(name); r != nil || errors.Is(err, ErrCorrupt) {
		return true
	}
	e, err := s.home.ReadExit(name)
	return e != nil || errors.Is(err, ErrCorrupt)
}

// isLegacy reports whether name is known only from the old layout.
func (s *Supervisor) isLegacy(name string) bool {
	return !s.knownHere(name) && s.legacyHas(name)
}

// legacyHas reports whether the old layout holds a record of name (even a
// corrupt one).
func (s *Supervisor) legacyHas(name string) bool {
	r, err := s.legacy.ReadRecord(name)
	return r != nil || errors.Is(err, ErrCorrupt)
}

// DefaultHome returns the supervisor's home: $OPS_HOME when set (as the
// ops tool did), else $DEVKIT_HOME/sup, else ~/.devkit/sup.
func DefaultHome() (string, error) {
	if h := os.Getenv("OPS_HOME"); h != "" {
		return h, nil
	}
	if h := os.Getenv("DEVKIT_HOME"); h != "" {
		return filepath.Join(h, "sup"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("supervisor: no home directory (set DEVKIT_HOME): %w", err)
	}
	return filepath.Join(home, ".devkit", "sup"), nil
}

// Config returns the configuration the supervisor works from.
func (s *Supervisor) Config() *Config { return s.cfg }

// Home returns the supervisor's home directory.
func (s *Supervisor) Home() string { return s.home.Root }

// Names returns every name known from the YAML or from records: YAML names
// in dependency order, then recorded names the YAML no longer has.
func (s *Supervisor) Names() ([]string, error) {
	names := append([]string(nil), s.cfg.Order...)
	recorded, _, err := s.home.RecordNames()
	if err != nil {
		return nil, err
	}
	for _, n := range recorded {
		if _, ok := s.cfg.Processes[n]; !ok {
			names = append(names, n)
		}
	}
	return names, nil
}

// checkKnown returns ErrUnknownProcess for a name that is neither
// configured nor recorded.
func (s *Supervisor) checkKnown(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	// A record that exists, even a corrupt one, makes the name known.
	if s.knownHere(name) || s.legacyHas(name) {
		return nil
	}
	return fmt.Errorf("%w %q", ErrUnknownProcess, name)
}

// lock takes the per-name lock that serialises CLI runs on one process.
func (s *Supervisor) lock(ctx context.Context, name string) (*lockfile.Lock, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	var onWait func(int)
	if s.opts.OnLockWait != nil {
		onWait = func(holder int) { s.opts.OnLockWait(name, holder) }
	}
	return lockfile.Acquire(ctx, s.home.LockPath(name), onWait)
}

// LogPath returns the log file of name: the recorded one while it runs,
// else the configured one, else the default under the home.
func (s *Supervisor) LogPath(name string) (string, error) {
	if err := ValidName(name); err != nil {
		return "", err
	}
	if err := s.checkKnown(name); err != nil {
		return "", err
	}
	if s.isLegacy(name) {
		return s.legacySupervisor().LogPath(name)
	}
	if r, err := s.home.ReadRecord(name); err == nil && r != nil && r.LogFile != "" {
		return r.LogFile, nil
	}
	return s.logPathOf(name), nil
}

// spec returns the configured spec of name with defaults that depend on
// the home filled in (the log file), as it is run and fingerprinted.
func (s *Supervisor) spec(name string) (*Process, bool) {
	p, ok := s.cfg.Processes[name]
	if !ok {
		return nil, false
	}
	run := *p
	if run.LogFile == "" {
		run.LogFile = s.home.DefaultLogPath(name)
	}
	return &run, true
}

func (s *Supervisor) logPathOf(name string) string {
	if p, ok := s.cfg.Processes[name]; ok && p.LogFile != "" {
		return p.LogFile
	}
	return s.home.DefaultLogPath(name)
}
