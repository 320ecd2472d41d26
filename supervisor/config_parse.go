//go:build !devkit_sup_monitor

package supervisor

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/devkit-go/devkit/internal/duration"
	"github.com/devkit-go/devkit/internal/yamlerr"
)

// parser walks the YAML node tree so that every error can name the file,
// line and dotted field it is about.
type parser struct {
	file   string
	dir    string // directory of the file: base of relative paths
	lookup func(string) (string, bool)
	// vars collects, for the process being parsed, the values that its
	// shell snippets refer to (see interpolateShell).
	vars map[string]string
	// depNodes locates each dependency ("name/dep") for errors found once
	// every process is known.
	depNodes map[string]*yaml.Node
}

// ParseConfig parses YAML data read from path, or a Procfile (see
// IsProcfile). lookup resolves ${VAR}
// (os.LookupEnv in LoadConfig). Unknown keys, bad values, unknown
// dependencies and cycles are *ConfigError values.
func ParseConfig(path string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	if IsProcfile(path, data) {
		return parseProcfile(path, data, lookup)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	p := &parser{file: path, dir: dir, lookup: lookup, depNodes: map[string]*yaml.Node{}}
	root, err := yamlerr.Parse(path, data)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, p.errorf(nil, "", "empty file: want a processes: mapping")
	}
	cfg := &Config{Path: path, Processes: map[string]*Process{}}
	var procs *yaml.Node
	err = p.mapping(root, "", func(key string, k, v *yaml.Node) error {
		switch key {
		case "processes":
			procs = v
			return nil
		}
		return p.errorf(k, key, "unknown field (want processes)")
	})
	if err != nil {
		return nil, err
	}
	if procs == nil {
		return nil, p.errorf(root, "processes", "missing")
	}
	depLines := map[string]*yaml.Node{}
	err = p.mapping(procs, "processes", func(name string, k, v *yaml.Node) error {
		field := "processes." + name
		if err := ValidName(name); err != nil {
			return p.errorf(k, field, "%v", err)
		}
		proc, err := p.process(name, field, v)
		if err != nil {
			return err
		}
		cfg.Processes[name] = proc
		depLines[name] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Errors name what the file says: a replica's set, and the index of a
	// dependency in the list as written, before sets are expanded.
	written := map[string][]string{}
	for name, proc := range cfg.Processes {
		written[name] = slices.Clone(proc.DependsOn)
	}
	if cfg.ReplicaSets, err = expandReplicas(cfg.Processes); err != nil {
		return nil, p.errorf(procs, "processes", "%v", err)
	}
	yamlName := func(name string) string {
		for set := range cfg.ReplicaSets {
			if _, ok := replicaIndex(set, name); ok {
				return set
			}
		}
		return name
	}
	for set, t := range cfg.ReplicaSets {
		for i := 1; i <= t.Replicas; i++ {
			depLines[ReplicaName(set, i)] = depLines[set]
		}
		for key, n := range p.depNodes {
			if proc, dep, _ := strings.Cut(key, "/"); proc == set {
				for i := 1; i <= t.Replicas; i++ {
					p.depNodes[ReplicaName(set, i)+"/"+dep] = n
				}
			}
		}
	}
	for key, n := range p.depNodes {
		if proc, dep, _ := strings.Cut(key, "/"); cfg.ReplicaSets[dep] != nil {
			for i := 1; i <= cfg.ReplicaSets[dep].Replicas; i++ {
				p.depNodes[proc+"/"+ReplicaName(dep, i)] = n
			}
		}
	}
	order, err := dependencyOrder(cfg.Processes)
	if err != nil {
		var de *dependencyError
		if errors.As(err, &de) {
			return nil, p.errorf(depLines[de.name], "processes."+yamlName(de.name)+".depends_on", "%s", de.msg)
		}
		return nil, err
	}
	cfg.Order = order
	for _, name := range order {
		proc := cfg.Processes[name]
		pn := yamlName(name)
		for _, d := range proc.DependsOn {
			dn := yamlName(d)
			at := p.depNodes[name+"/"+d]
			field := fmt.Sprintf("processes.%s.depends_on[%d]", pn, slices.Index(written[pn], dn))
			dep := cfg.Processes[d]
			switch {
			case dep.Disabled && !proc.Disabled:
				return nil, p.errorf(depLines[name], "processes."+pn+".depends_on", "%s is disabled: start --all would have to start it; disable %s too, or enable %s", dn, pn, dn)
			case proc.Condition(d) == DependsHealthy && dep.Health == nil:
				return nil, p.errorf(at, field+".condition", "healthy needs a health check on %s (health: {every: 10s})", dn)
			case proc.Condition(d) == DependsCompleted && !dep.Oneshot:
				return nil, p.errorf(at, field+".condition", "completed_successfully needs %s to be oneshot: true", dn)
			}
		}
	}
	return cfg, nil
}

func (p *parser) process(name, field string, node *yaml.Node) (*Process, error) {
	proc := &Process{
		Name:        name,
		StopSignal:  DefaultStopSignal,
		StopTimeout: DefaultStopTimeout,
		Restart:     RestartPolicy{Mode: RestartNever, MaxRestarts: DefaultMaxRestarts, Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff},
		LogMaxSize:  DefaultLogMaxSize,
		LogBackups:  DefaultLogBackups,
	}
	var env map[string]string
	var envFileNode, healthNode, argsNode *yaml.Node
	p.vars = map[string]string{}
	err := p.mapping(node, field, func(key string, k, v *yaml.Node) error {
		f := field + "." + key
		var err error
		switch key {
		case "command":
			proc.Command, err = p.str(v, f)
		case "args":
			proc.Args, err = p.strList(v, f)
			argsNode = v
		case "env":
			env, err = p.strMap(v, f)
		case "env_file":
			proc.EnvFile, err = p.path(v, f)
			envFileNode = v
		case "cwd":
			proc.Cwd, err = p.path(v, f)
		case "log_file":
			if proc.LogFile, err = p.path(v, f); err == nil {
				err = p.logFile(v, f, proc.LogFile)
				proc.logFileAt = &ConfigError{File: p.file, Line: v.Line, Field: f}
			}
		case "stop_signal":
			proc.StopSignal, err = p.signal(v, f)
		case "stop_timeout":
			proc.StopTimeout, err = p.duration(v, f)
		case "depends_on":
			proc.DependsOn, proc.Conditions, err = p.dependsOn(v, f)
		case "ready":
			proc.Ready, err = p.ready(v, f)
		case "restart":
			err = p.restart(v, f, &proc.Restart)
		case "log_max_size":
			proc.LogMaxSize, err = p.size(v, f)
		case "log_backups":
			proc.LogBackups, err = p.nonNegativeInt(v, f)
		case "log_timestamps":
			proc.LogTimestamps, err = p.boolean(v, f)
		case "health":
			proc.Health, err = p.health(v, f)
			healthNode = v
		case "liveness":
			if proc.Liveness, err = p.ready(v, f); err == nil && proc.Liveness.LogPattern != "" {
				err = p.errorf(v, f+".log", "a liveness probe is tcp, http or exec: a log line cannot be re-checked")
			}
		case "oneshot":
			proc.Oneshot, err = p.boolean(v, f)
		case "restart_with_dependencies":
			proc.RestartWithDependencies, err = p.boolean(v, f)
		case "disabled":
			proc.Disabled, err = p.boolean(v, f)
		case "user":
			var name string
			if name, err = p.str(v, f); err == nil {
				var rerr error
				if proc.RunAs, rerr = resolveUser(name); rerr != nil {
					err = p.errorf(v, f, "%v", rerr)
				}
			}
		case "watch":
			var paths []string
			if paths, err = p.strList(v, f); err == nil {
				for i, item := range paths {
					if item == "" {
						return p.errorf(deref(v).Content[i], fmt.Sprintf("%s[%d]", f, i), "empty path")
					}
					if !filepath.IsAbs(item) {
						item = filepath.Join(p.dir, item)
					}
					if _, serr := os.Stat(item); serr != nil {
						return p.errorf(deref(v).Content[i], fmt.Sprintf("%s[%d]", f, i), "%v", serr)
					}
					proc.Watch = append(proc.Watch, item)
				}
			}
		case "replicas":
			if proc.Replicas, err = p.nonNegativeInt(v, f); err == nil && proc.Replicas < 1 {
				err = p.errorf(v, f, "must be at least 1 (disabled: true declares a process not started)")
			}
		case "shutdown":
			proc.Shutdown, err = p.shutdown(v, f)
		case "resources":
			proc.Resources, err = p.resources(v, f)
			proc.resourcesAt = &ConfigError{File: p.file, Line: v.Line, Field: f}
		default:
			err = p.errorf(k, f, "unknown field")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if proc.Command == "" {
		return nil, p.errorf(node, field+".command", "missing")
	}
	if i := shellScriptArg(proc.Command, proc.Args); i >= 0 {
		item := deref(argsNode).Content[i]
		if proc.Args[i], err = p.shell(item, fmt.Sprintf("%s.args[%d]", field, i), p.vars); err != nil {
			return nil, err
		}
	}
	if proc.Liveness != nil && proc.Health == nil {
		proc.Health = &HealthCheck{Every: DefaultHealthEvery, Failures: DefaultHealthFailures}
	}
	if proc.Health != nil && proc.Liveness == nil {
		switch {
		case proc.Ready == nil:
			return nil, p.errorf(healthNode, field+".health", "needs a liveness or ready probe to run")
		case proc.Ready.LogPattern != "":
			return nil, p.errorf(healthNode, field+".health", "a log ready probe cannot be re-run; add a liveness probe (tcp, http or exec)")
		}
	}
	if proc.Shutdown != nil && proc.Shutdown.Signal == "" {
		proc.Shutdown.Signal = proc.StopSignal
	}
	if proc.Cwd == "" {
		// Relative commands and paths mean the same wherever the CLI runs.
		proc.Cwd = p.dir
	}
	proc.Env = map[string]string{}
	if proc.EnvFile != "" {
		data, err := os.ReadFile(proc.EnvFile)
		if err != nil {
			return nil, p.errorf(envFileNode, field+".env_file", "%v", err)
		}
		fileEnv, err := parseEnvFile(data)
		if err != nil {
			return nil, p.errorf(envFileNode, field+".env_file", "%s: %v", proc.EnvFile, err)
		}
		for k, v := range fileEnv {
			proc.Env[k] = v
		}
	}
	for k, v := range env {
		proc.Env[k] = v
	}
	for k, v := range p.vars {
		proc.Env[k] = v
	}
	return proc, nil
}

// dependsOn parses depends_on: a list whose items are a name (condition
// ready) or {name: NAME, condition: started|ready|healthy|completed_successfully}.
func (p *parser) dependsOn(node *yaml.Node, field string) ([]string, map[string]DependencyCondition, error) {
	node = deref(node)
	if node.Kind == yaml.ScalarNode {
		s, err := p.scalar(node, field)
		p.depNodes[processOf(field)+"/"+s] = node
		return []string{s}, nil, err
	}
	if node.Kind != yaml.SequenceNode {
		return nil, nil, p.errorf(node, field, "must be a list")
	}
	var names []string
	conds := map[string]DependencyCondition{}
	for i, item := range node.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		var name string
		cond := DependsReady
		var err error
		if deref(item).Kind == yaml.MappingNode {
			err = p.mapping(item, f, func(key string, k, v *yaml.Node) error {
				switch key {
				case "name":
					name, err = p.str(v, f+".name")
					return err
				case "condition":
					c, err := p.str(v, f+".condition")
					switch cc := DependencyCondition(c); {
					case err != nil:
						return err
					case cc == DependsStarted || cc == DependsReady || cc == DependsHealthy || cc == DependsCompleted:
						cond = cc
						return nil
					}
					return p.errorf(v, f+".condition", "%q is not a condition (started, ready, healthy, completed_successfully)", c)
				}
				return p.errorf(k, f+"."+key, "unknown field (want name, condition)")
			})
			if err == nil && name == "" {
				err = p.errorf(item, f+".name", "missing")
			}
		} else {
			name, err = p.scalar(item, f)
		}
		if err != nil {
			return nil, nil, err
		}
		names = append(names, name)
		p.depNodes[processOf(field)+"/"+name] = item
		if cond != DependsReady {
			conds[name] = cond
		}
	}
	if len(conds) == 0 {
		conds = nil
	}
	return names, conds, nil
}

// processOf returns NAME of a field processes.NAME.….
func processOf(field string) string {
	parts := strings.SplitN(field, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

// shells are the interpreters whose -c script is a shell snippet.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"}

// shellScriptArg returns the index in args of the script a shell command
// runs (sh -c SCRIPT, sh -ec SCRIPT), or -1.
func shellScriptArg(command string, args []string) int {
	if !slices.Contains(shells, filepath.Base(command)) {
		return -1
	}
	sawC := false
	for i, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			if sawC && a != "--" {
				return i
			}
			if a != "--" && !sawC {
				return -1
			}
			continue
		}
		if !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			sawC = true
		}
	}
	return -1
}

func (p *parser) ready(node *yaml.Node, field string) (*ReadyProbe, error) {
	r := &ReadyProbe{Timeout: DefaultReadyTimeout, Interval: DefaultReadyPoll}
	kinds := 0
	err := p.mapping(node, field, func(key string, k, v *yaml.Node) error {
		f := field + "." + key
		var err error
		switch key {
		case "tcp":
			kinds++
			if r.TCP, err = p.str(v, f); err == nil {
				if _, _, serr := net.SplitHostPort(r.TCP); serr != nil {
					err = p.errorf(v, f, "%q is not host:port", r.TCP)
				}
			}
		case "http":
			kinds++
			if r.HTTP, err = p.str(v, f); err == nil {
				if u, perr := url.Parse(r.HTTP); perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					err = p.errorf(v, f, "%q is not an http(s) URL", r.HTTP)
				}
			}
		case "exec":
			kinds++
			r.Exec, err = p.shell(v, f, p.vars)
		case "log":
			kinds++
			if r.LogPattern, err = p.str(v, f); err == nil {
				if _, rerr := regexp.Compile(r.LogPattern); rerr != nil {
					err = p.errorf(v, f, "bad pattern: %v", rerr)
				}
			}
		case "timeout":
			r.Timeout, err = p.duration(v, f)
		case "interval":
			r.Interval, err = p.duration(v, f)
		default:
			err = p.errorf(k, f, "unknown field (want tcp, http, exec or log, and timeout, interval)")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if kinds != 1 {
		return nil, p.errorf(node, field, "want exactly one of tcp, http, exec, log")
	}
	if r.Interval <= 0 {
		r.Interval = DefaultReadyPoll
	}
	return r, nil
}

func (p *parser) shutdown(node *yaml.Node, field string) (*Shutdown, error) {
	sd := &Shutdown{Timeout: DefaultShutdownTimeout}
	err := p.mapping(node, field, func(key string, k, v *yaml.Node) error {
		f := field + "." + key
		var err error
		switch key {
		case "command":
			sd.Command, err = p.shell(v, f, p.vars)
		case "signal":
			sd.Signal, err = p.signal(v, f)
		case "timeout":
			if sd.Timeout, err = p.duration(v, f); err == nil && sd.Timeout <= 0 {
				err = p.errorf(v, f, "must be positive")
			}
		default:
			err = p.errorf(k, f, "unknown field (want command, signal, timeout)")
		}
		return err
	})
	if err == nil && sd.Command == "" && sd.Signal == "" {
		err = p.errorf(node, field, "want a command, a signal or both")
	}
	return sd, err
}

func (p *parser) resources(node *yaml.Node, field string) (*Resources, error) {
	r := &Resources{}
	err := p.mapping(node, field, func(key string, k, v *yaml.Node) error {
		f := field + "." + key
		var err error
		switch key {
		case "memory_max":
			if r.MemoryMax, err = p.size(v, f); err == nil && r.MemoryMax < 1<<20 {
				err = p.errorf(v, f, "%d bytes is too little to run a process: at least 1MiB", r.MemoryMax)
			}
		case "cpu_max":
			var s string
			if s, err = p.scalar(v, f); err == nil {
				var perr error
				r.CPUMax, perr = strconv.ParseFloat(strings.TrimSpace(s), 64)
				switch {
				case perr != nil || math.IsNaN(r.CPUMax) || math.IsInf(r.CPUMax, 0):
					err = p.errorf(v, f, "%q is not a number of CPUs (e.g. 1.5)", s)
				case r.CPUMax < MinCPUMax:
					err = p.errorf(v, f, "%s is below %g, the kernel's smallest quota", s, MinCPUMax)
				}
			}
		default:
			err = p.errorf(k, f, "unknown field (want memory_max, cpu_max)")
		}
		return err
	})
	if err == nil && r.MemoryMax == 0 && r.CPUMax == 0 {
		err = p.errorf(node, field, "want memory_max, cpu_max or both")
	}
	return r, err
}

func (p *parser) health(node *yaml.Node, field string) (*HealthCheck, error) {
	h := &HealthCheck{Every: DefaultHealthEvery, Failures: DefaultHealthFailures}
	err := p.mapping(node, field, func(key string, k, v *yaml.Node) error {
		f := field + "." + key
		var err error
		switch key {
		case "every":
			if h.Every, err = p.duration(v, f); err == nil && h.Every <= 0 {
				err = p.errorf(v, f, "must be positive")
			}
		case "failures":
			if h.Failures, err = p.nonNegativeInt(v, f); err == nil && h.Failures < 1 {
				err = p.errorf(v, f, "must be at least 1")
			}
		default:
			err = p.errorf(k, f, "unknown field (want every, failures)")
		}
		return err
	})
	return h, err
}

func (p *parser) restart(node *yaml.Node, field string, pol *RestartPolicy) error {
	mode := func(v *yaml.Node, f string) error {
		s, err := p.str(v, f)
		if err != nil {
			return err
		}
		switch RestartMode(s) {
		case RestartNever, RestartOnFailure, RestartAlways:
			pol.Mode = RestartMode(s)
			return nil
		}
		return p.errorf(v, f, "%q is not one of never, on-failure, always", s)
	}
	if deref(node).Kind == yaml.ScalarNode {
		return mode(node, field)
	}
	err := p.mapping(node, field, func(key string, k, v *yaml.Node) error {
		f := field + "." + key
		var err error
		switch key {
		case "policy":
			err = mode(v, f)
		case "max_restarts":
			pol.MaxRestarts, err = p.nonNegativeInt(v, f)
		case "backoff":
			pol.Backoff, err = p.duration(v, f)
		case "max_backoff":
			pol.MaxBackoff, err = p.duration(v, f)
		default:
			err = p.errorf(k, f, "unknown field (want policy, max_restarts, backoff, max_backoff)")
		}
		return err
	})
	if err != nil {
		return err
	}
	if pol.Backoff <= 0 {
		pol.Backoff = DefaultBackoff
	}
	if pol.MaxBackoff < pol.Backoff {
		pol.MaxBackoff = pol.Backoff
	}
	return nil
}

// mapping calls fn for each key of a mapping node, rejecting duplicates.
func (p *parser) mapping(node *yaml.Node, field string, fn func(key string, k, v *yaml.Node) error) error {
	node = deref(node)
	if node.Kind != yaml.MappingNode {
		return p.errorf(node, field, "must be a mapping")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		if seen[k.Value] {
			return p.errorf(k, join(field, k.Value), "duplicate key")
		}
		seen[k.Value] = true
		if err := fn(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

// scalar returns the interpolated value of a scalar node.
func (p *parser) scalar(node *yaml.Node, field string) (string, error) {
	node = deref(node)
	if node.Kind != yaml.ScalarNode || node.Tag == "!!null" {
		return "", p.errorf(node, field, "must be a single value")
	}
	s, err := interpolate(node.Value, p.lookup)
	if err != nil {
		return "", p.wrapf(node, field, err)
	}
	return s, nil
}

// shell returns the value of a scalar node that is a shell snippet, its
// ${VAR}s made references to parameters whose values go into vars (see
// interpolateShell).
func (p *parser) shell(node *yaml.Node, field string, vars map[string]string) (string, error) {
	node = deref(node)
	if node.Kind != yaml.ScalarNode || node.Tag == "!!null" {
		return "", p.errorf(node, field, "must be a single value")
	}
	s, err := interpolateShell(node.Value, p.lookup, vars)
	if err != nil {
		return "", p.wrapf(node, field, err)
	}
	return s, nil
}

// wrapf is errorf for an error that callers may test with errors.Is.
func (p *parser) wrapf(node *yaml.Node, field string, err error) error {
	line := 0
	if node != nil {
		line = node.Line
	}
	return &ConfigError{File: p.file, Line: line, Field: field, Msg: err.Error(), Err: err}
}

func (p *parser) str(node *yaml.Node, field string) (string, error) { return p.scalar(node, field) }

func (p *parser) strList(node *yaml.Node, field string) ([]string, error) {
	node = deref(node)
	if node.Kind == yaml.ScalarNode {
		s, err := p.scalar(node, field)
		return []string{s}, err
	}
	if node.Kind != yaml.SequenceNode {
		return nil, p.errorf(node, field, "must be a list")
	}
	out := make([]string, 0, len(node.Content))
	for i, item := range node.Content {
		s, err := p.scalar(item, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) strMap(node *yaml.Node, field string) (map[string]string, error) {
	out := map[string]string{}
	err := p.mapping(node, field, func(key string, k, v *yaml.Node) error {
		s, err := p.scalar(v, field+"."+key)
		out[key] = s
		return err
	})
	return out, err
}

func (p *parser) path(node *yaml.Node, field string) (string, error) {
	s, err := p.scalar(node, field)
	if err != nil || s == "" {
		return s, err
	}
	if strings.HasPrefix(s, "~/") {
		if home, herr := os.UserHomeDir(); herr == nil {
			s = filepath.Join(home, s[2:])
		}
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(p.dir, s)
	}
	return s, nil
}

// logFile refuses a log path that exists and is no regular file (a
// directory, a device, a FIFO, a socket) or that is a symbolic link leading
// out of the project (the config file's directory).
func (p *parser) logFile(node *yaml.Node, field, path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil // missing: it will be created; unreadable: start reports that when it opens the file
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return p.errorf(node, field, "%s is a symbolic link that does not resolve: %v", path, err)
		}
		rel, err := filepath.Rel(p.dir, target)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return p.errorf(node, field, "%s is a symbolic link out of the project (to %s); name the file itself", path, target)
		}
		if fi, err = os.Stat(path); err != nil {
			return p.errorf(node, field, "%v", err)
		}
	}
	switch {
	case fi.IsDir():
		return p.errorf(node, field, "%s is a directory, not a log file", path)
	case !fi.Mode().IsRegular():
		return p.errorf(node, field, "%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	return nil
}

// duration reads devkit's one duration grammar (duration.Parse of the shared internal module): Go
// durations ("500ms", "10s") or a plain number of seconds ("5", "1.5").
func (p *parser) duration(node *yaml.Node, field string) (time.Duration, error) {
	s, err := p.scalar(node, field)
	if err != nil {
		return 0, err
	}
	d, err := duration.Parse(s)
	if err != nil {
		return 0, p.errorf(node, field, "%q is not a duration", s)
	}
	return d, nil
}

func (p *parser) boolean(node *yaml.Node, field string) (bool, error) {
	s, err := p.scalar(node, field)
	if err != nil {
		return false, err
	}
	switch s {
	case "true", "yes", "on":
		return true, nil
	case "false", "no", "off":
		return false, nil
	}
	return false, p.errorf(node, field, "%q is not true or false", s)
}

func (p *parser) nonNegativeInt(node *yaml.Node, field string) (int, error) {
	s, err := p.scalar(node, field)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, p.errorf(node, field, "%q is not a non-negative integer", s)
	}
	return n, nil
}

// size accepts a byte count with an optional unit: 1048576, 512KB, 10MB, 1GiB.
func (p *parser) size(node *yaml.Node, field string) (int64, error) {
	s, err := p.scalar(node, field)
	if err != nil {
		return 0, err
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, p.errorf(node, field, "%q is not a size (e.g. 10MB)", s)
	}
	return n * mult, nil
}

func (p *parser) signal(node *yaml.Node, field string) (string, error) {
	s, err := p.scalar(node, field)
	if err != nil {
		return "", err
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	switch name {
	case "TERM", "INT", "HUP", "QUIT", "KILL", "USR1", "USR2":
		return name, nil
	}
	return "", p.errorf(node, field, "%q is not a stop signal (TERM, INT, HUP, QUIT, KILL, USR1, USR2)", s)
}

func (p *parser) errorf(node *yaml.Node, field, format string, a ...any) error {
	line := 0
	if node != nil {
		line = node.Line
	}
	return &ConfigError{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, a...)}
}

func deref(n *yaml.Node) *yaml.Node { return yamlerr.Deref(n) }

func join(field, key string) string { return yamlerr.Join(field, key) }
