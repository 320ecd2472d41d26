package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

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
	// ErrNoMonitor: Options.MonitorCommand is empty, so nothing can be started.
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

// Options configure a Supervisor. The zero value can inspect and stop
// processes; starting them needs MonitorCommand.
type Options struct {
	// MonitorCommand is the program (and leading arguments) that runs one
	// process's monitor: it must call RunMonitor with its stdin and stdout.
	// devkit uses its own binary: ["/path/to/devkit", "sup", "__monitor"].
	MonitorCommand []string
	// MonitorEnv is added to the monitor's environment.
	MonitorEnv []string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// OnLockWait, when set, is told that an operation on name waits for
	// the lock held by another run (holder is its PID, 0 if unknown).
	OnLockWait func(name string, holder int)
}

// Supervisor starts, stops and inspects the processes of one Config, with
// all state under one home directory. Every method derives what is running
// from the records on disk and the kernel; a Supervisor holds no registry.
type Supervisor struct {
	home   state.Layout
	cfg    *Config
	opts   Options
	logger *slog.Logger
}

// New returns a Supervisor keeping its state under home. cfg may be nil to
// work from the records alone (status and stop of what was started).
func New(home string, cfg *Config, opts Options) (*Supervisor, error) {
	if cfg == nil {
		cfg = &Config{Processes: map[string]*Process{}}
	}
	layout := state.Layout{Root: home}
	if err := layout.Init(); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Supervisor{home: layout, cfg: cfg, opts: opts, logger: logger}, nil
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
	if _, ok := s.cfg.Processes[name]; ok {
		return nil
	}
	// A record that exists, even a corrupt one, makes the name known.
	if r, err := s.home.ReadRecord(name); r != nil || errors.Is(err, ErrCorrupt) {
		return nil
	} else if err != nil {
		return err
	}
	if e, err := s.home.ReadExit(name); e != nil || errors.Is(err, ErrCorrupt) {
		return nil
	} else if err != nil {
		return err
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
