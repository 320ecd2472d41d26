package supervisor

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"time"
)

// Defaults applied to fields the YAML leaves out.
const (
	DefaultStopSignal   = "TERM"
	DefaultStopTimeout  = 10 * time.Second
	DefaultReadyTimeout = 30 * time.Second
	DefaultReadyPoll    = 50 * time.Millisecond
	DefaultLogMaxSize   = 10 << 20 // bytes
	DefaultLogBackups   = 3
	DefaultMaxRestarts  = 5
	DefaultBackoff      = 500 * time.Millisecond
	DefaultMaxBackoff   = 30 * time.Second
	// StartGrace is how long a process without a ready probe must stay alive
	// for its start to count as successful.
	StartGrace = 500 * time.Millisecond
	// StableRun is how long a run must last for the restart count (and the
	// backoff) to start again from zero.
	StableRun = 10 * time.Second
)

// Config is a parsed ops.yaml: the processes it declares, in dependency order.
type Config struct {
	// Path is the file the configuration was read from, as given.
	Path string
	// Processes maps each name to its resolved spec.
	Processes map[string]*Process
	// Order lists every name so that each comes after its dependencies;
	// ties are broken by name, so the order is stable.
	Order []string
	// ReplicaSets holds the spec of each process declared with replicas:
	// N, by its name; Processes holds its replicas NAME.1 … NAME.N.
	ReplicaSets map[string]*Process
}

// Process is the resolved spec of one supervised process: environment
// interpolated, env_file read, relative paths made absolute, defaults set.
type Process struct {
	Name        string            `json:"name"`
	Command     string            `json:"command"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`      // env_file values overlaid by env
	EnvFile     string            `json:"env_file,omitempty"` // absolute path, informational
	Cwd         string            `json:"cwd,omitempty"`      // default: the config file's directory
	LogFile     string            `json:"log_file,omitempty"` // empty: <home>/logs/<name>.log
	StopSignal  string            `json:"stop_signal"`
	StopTimeout time.Duration     `json:"stop_timeout"`
	DependsOn   []string          `json:"depends_on,omitempty"`
	Ready       *ReadyProbe       `json:"ready,omitempty"`
	Restart     RestartPolicy     `json:"restart"`
	LogMaxSize  int64             `json:"log_max_size"`
	LogBackups  int               `json:"log_backups"`
	// LogTimestamps prefixes each line of output with its arrival time
	// (what logs --since selects on).
	LogTimestamps bool `json:"log_timestamps,omitempty"`
	// Health runs the liveness probe (or, without one, the ready probe)
	// while the process runs; nil: never.
	Health *HealthCheck `json:"health,omitempty"`
	// Liveness is the probe health runs, when it is not the ready probe
	// (tcp, http or exec).
	Liveness *ReadyProbe `json:"liveness,omitempty"`
	// Oneshot is a job that runs to its end: start waits for it to exit 0,
	// status says completed, and dependents start after it completed.
	Oneshot bool `json:"oneshot,omitempty"`
	// RestartWithDependencies makes reload restart this process whenever
	// it restarts one it depends on.
	RestartWithDependencies bool `json:"restart_with_dependencies,omitempty"`
	// Conditions says, per dependency, when this process may start: once
	// it has started, is ready (the default, also for a name absent here),
	// is healthy, or has completed successfully (a oneshot).
	Conditions map[string]DependencyCondition `json:"conditions,omitempty"`
	// Disabled declares the process without starting it with the others:
	// start --all and reload leave it out; start NAME starts it.
	Disabled bool `json:"disabled,omitempty"`
	// Shutdown, when set, is how stop asks the process to end before any
	// signal: its command runs first, then its signal follows.
	Shutdown *Shutdown `json:"shutdown,omitempty"`
	// RunAs is the account the process runs as (user:, root only); nil:
	// devkit's own.
	RunAs *RunAs `json:"run_as,omitempty"`
	// Replicas is N of replicas: N in a replica set's spec (0 in each
	// replica's).
	Replicas int `json:"replicas,omitempty"`
	// Watch lists files and directories (absolute) whose changes restart
	// the process, after WatchDebounce without further change.
	Watch []string `json:"watch,omitempty"`

	// Resources are limits enforced through the process's cgroup v2; nil:
	// none.
	Resources *Resources `json:"resources,omitempty"`

	// logFileAt locates log_file in the YAML, for errors found at start.
	logFileAt *ConfigError
	// resourcesAt locates resources in the YAML, for errors found at start.
	resourcesAt *ConfigError
}

// Resources are limits on a process's tree, enforced by the kernel through
// the cgroup v2 the monitor makes for it (memory.max, cpu.max). A start
// where they cannot be enforced fails; they are never silently dropped.
type Resources struct {
	// MemoryMax is the most memory (bytes) the tree may use (memory.max,
	// with memory.swap.max 0): past it the kernel reclaims, then OOM-kills.
	MemoryMax int64 `json:"memory_max,omitempty"`
	// CPUMax is how many CPUs' worth of time the tree may use (cpu.max: a
	// quota per 100 ms period); 1.5 is one and a half CPUs.
	CPUMax float64 `json:"cpu_max,omitempty"`
}

// MinCPUMax is the smallest cpu_max: the kernel's minimum quota, 1 ms per
// 100 ms period.
const MinCPUMax = 0.01

// Shutdown is a graceful stop: stop runs Command (through the shell, with
// the process's environment and directory, and DEVKIT_SUP_PID set to its
// PID) for at most Timeout, waits what is left of Timeout for the process
// to end, and only then sends Signal and escalates as usual.
type Shutdown struct {
	Command string        `json:"command"`
	Signal  string        `json:"signal"`  // default: the process's stop_signal
	Timeout time.Duration `json:"timeout"` // default: DefaultShutdownTimeout
}

// DefaultShutdownTimeout bounds a shutdown command and the wait after it.
const DefaultShutdownTimeout = 10 * time.Second

// ShutdownPIDEnv names the variable that gives a shutdown command the PID
// of the process it is to stop.
const ShutdownPIDEnv = "DEVKIT_SUP_PID"

// DependencyCondition is when a dependent may start (docker compose's
// depends_on conditions).
type DependencyCondition string

// Dependency conditions.
const (
	// DependsStarted: once the dependency's process has been spawned.
	DependsStarted DependencyCondition = "started"
	// DependsReady: once its ready probe passed (a oneshot: once it has
	// completed with exit 0). The default.
	DependsReady DependencyCondition = "ready"
	// DependsHealthy: once ready and its first health check passed.
	DependsHealthy DependencyCondition = "healthy"
	// DependsCompleted: once the oneshot has completed with exit 0.
	DependsCompleted DependencyCondition = "completed_successfully"
)

// HealthProbe is the probe health runs: the liveness probe, else the
// ready probe (nil when there is neither).
func (p *Process) HealthProbe() *ReadyProbe {
	if p.Liveness != nil {
		return p.Liveness
	}
	return p.Ready
}

// MonitorProbesHTTP reports whether the process's monitor runs an HTTP
// probe: a health check whose probe is http. A monitor built without HTTP
// probes (devkit-sup-monitor) refuses such a process, and devkit runs it
// under its own monitor instead.
func (p *Process) MonitorProbesHTTP() bool {
	probe := p.HealthProbe()
	return p.Health != nil && probe != nil && probe.HTTP != ""
}

// Condition returns when p may start with respect to its dependency dep.
func (p *Process) Condition(dep string) DependencyCondition {
	if c, ok := p.Conditions[dep]; ok {
		return c
	}
	return DependsReady
}

// Enabled returns Order without the disabled processes: what start --all
// starts.
func (c *Config) Enabled() []string {
	var names []string
	for _, n := range c.Order {
		if !c.Processes[n].Disabled {
			names = append(names, n)
		}
	}
	return names
}

// ReadyProbe says when a started process is ready. Exactly one of TCP,
// HTTP, Exec and LogPattern is set.
type ReadyProbe struct {
	TCP        string        `json:"tcp,omitempty"`  // host:port accepting connections
	HTTP       string        `json:"http,omitempty"` // URL answering 2xx
	Exec       string        `json:"exec,omitempty"` // shell command exiting 0
	LogPattern string        `json:"log,omitempty"`  // regular expression matched by a new log line
	Timeout    time.Duration `json:"timeout"`
	Interval   time.Duration `json:"interval"`
}

// HealthCheck runs the ready probe every Every once the process is ready;
// Failures consecutive failures make it unhealthy, and the monitor ends it
// so that its restart policy applies.
type HealthCheck struct {
	Every    time.Duration `json:"every"`
	Failures int           `json:"failures"`
}

// Health defaults.
const (
	DefaultHealthEvery    = 10 * time.Second
	DefaultHealthFailures = 3
)

// RestartMode is when a monitor restarts a process that ended on its own.
type RestartMode string

// Restart modes.
const (
	RestartNever     RestartMode = "never"
	RestartOnFailure RestartMode = "on-failure"
	RestartAlways    RestartMode = "always"
)

// RestartPolicy is a restart mode with capped exponential backoff.
type RestartPolicy struct {
	Mode RestartMode `json:"mode"`
	// MaxRestarts is how many consecutive restarts are tried before giving
	// up; 0 means no limit. A run of StableRun (or MaxBackoff, if longer)
	// resets the count.
	MaxRestarts int           `json:"max_restarts"`
	Backoff     time.Duration `json:"backoff"`     // first delay, doubled each time
	MaxBackoff  time.Duration `json:"max_backoff"` // cap on the delay
}

// Delay returns the backoff before restart number n (1-based).
func (p RestartPolicy) Delay(n int) time.Duration {
	d := p.Backoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, p.MaxBackoff)
}

// LoadConfig reads and parses the YAML file at path, interpolating
// ${VAR} from the process environment.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("supervisor: read config: %w", err)
	}
	return ParseConfig(path, data, os.LookupEnv)
}

// Environ is the environment the process runs with — and its exec probes:
// the caller's, with env (and env_file) on top. One function builds it for
// both, so a probe sees exactly what the process sees.
func (p *Process) Environ() []string {
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		env = append(env, k+"="+p.Env[k])
	}
	return env
}
