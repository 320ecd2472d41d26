package supervisor

// A process with replicas: N is a replica set: N processes named NAME.1 …
// NAME.N, each a process of its own (record, monitor, log), made from the
// one spec. A dependency on NAME is a dependency on every replica.

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ReplicaEnv is set to a replica's number (1-based) in its environment.
const ReplicaEnv = "DEVKIT_SUP_REPLICA"

// ReplicaName is the name of replica i of the set name.
func ReplicaName(name string, i int) string { return name + "." + strconv.Itoa(i) }

// replica returns the spec of replica i of template: its own name, log
// file (NAME.i before the extension of a log_file), and environment —
// ReplicaEnv, and PORT (when numeric) offset by i-1, as foreman does.
func replica(template *Process, i int) *Process {
	p := *template
	p.Name = ReplicaName(template.Name, i)
	p.Replicas = 0
	p.Env = maps.Clone(template.Env)
	p.Conditions = maps.Clone(template.Conditions)
	if p.Env == nil {
		p.Env = map[string]string{}
	}
	p.Env[ReplicaEnv] = strconv.Itoa(i)
	if port, err := strconv.Atoi(p.Env["PORT"]); err == nil {
		p.Env["PORT"] = strconv.Itoa(port + i - 1)
	}
	if p.LogFile != "" {
		ext := filepath.Ext(p.LogFile)
		p.LogFile = strings.TrimSuffix(p.LogFile, ext) + "." + strconv.Itoa(i) + ext
	}
	return &p
}

// expandReplicas replaces each replica set in procs by its replicas and
// every dependency on a set by dependencies on all its replicas. It
// returns the templates, by set name.
func expandReplicas(procs map[string]*Process) (map[string]*Process, error) {
	sets := map[string]*Process{}
	for name, p := range procs {
		if p.Replicas > 0 {
			sets[name] = p
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sets)) {
		t := sets[name]
		delete(procs, name)
		for i := 1; i <= t.Replicas; i++ {
			r := replica(t, i)
			if _, taken := procs[r.Name]; taken {
				return nil, fmt.Errorf("%s is both a process and replica %d of %s", r.Name, i, name)
			}
			procs[r.Name] = r
		}
	}
	for _, p := range slices.Concat(slices.Collect(maps.Values(procs)), slices.Collect(maps.Values(sets))) {
		var deps []string
		for _, d := range p.DependsOn {
			t, ok := sets[d]
			if !ok {
				deps = append(deps, d)
				continue
			}
			for i := 1; i <= t.Replicas; i++ {
				r := ReplicaName(d, i)
				deps = append(deps, r)
				if c, ok := p.Conditions[d]; ok {
					p.Conditions[r] = c // Conditions is non-nil: it holds d
				}
			}
		}
		p.DependsOn = deps
	}
	return sets, nil
}

// Members returns names with each replica set name replaced by its
// replicas in the config (and by the recorded ones beyond them, given in
// recorded).
func (c *Config) members(names, recorded []string) []string {
	var out []string
	for _, n := range names {
		t, ok := c.ReplicaSets[n]
		if !ok {
			out = append(out, n)
			continue
		}
		for i := 1; i <= t.Replicas; i++ {
			out = append(out, ReplicaName(n, i))
		}
		for _, r := range recorded {
			if i, ok := replicaIndex(n, r); ok && i > t.Replicas && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// replicaIndex returns i when name is replica i of set.
func replicaIndex(set, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, set+".")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 1 && strconv.Itoa(i) == rest
}

// expand is members over the records of this project.
func (s *Supervisor) expand(names []string) []string {
	if s.cfg == nil {
		return names
	}
	recorded, _, _ := s.home.RecordNames()
	return s.cfg.members(names, recorded)
}

// ScaleResult is what Scale did: the replicas it started and stopped.
type ScaleResult struct {
	Started []StartResult `json:"started,omitempty"`
	Stopped []StopResult  `json:"stopped,omitempty"`
}

// Scale runs n replicas of the replica set name: it starts NAME.1 … NAME.n
// that do not run, and stops the recorded replicas numbered above n. The
// count holds until reload (or start --all) applies the YAML's again.
func (s *Supervisor) Scale(ctx context.Context, name string, n int, opts StopOptions) (ScaleResult, error) {
	var res ScaleResult
	var t *Process
	if s.cfg != nil {
		t = s.cfg.ReplicaSets[name]
	}
	if t == nil {
		return res, fmt.Errorf("%w %q: not a replica set (replicas: N)", ErrUnknownProcess, name)
	}
	if n < 0 {
		return res, fmt.Errorf("scale %s: %d replicas", name, n)
	}
	recorded, _, err := s.home.RecordNames()
	if err != nil {
		return res, err
	}
	var start, stop []string
	for i := 1; i <= n; i++ {
		r := ReplicaName(name, i)
		if _, ok := s.cfg.Processes[r]; !ok {
			s.cfg.Processes[r] = replica(t, i)
			s.cfg.Order = append(s.cfg.Order, r)
		}
		if rec, _ := s.home.ReadRecord(r); rec == nil || !runs(rec.Process) {
			start = append(start, r)
		}
	}
	for _, r := range recorded {
		if i, ok := replicaIndex(name, r); ok && i > n {
			stop = append(stop, r)
		}
	}
	slices.Sort(stop)
	if len(stop) > 0 {
		res.Stopped, err = s.Stop(ctx, stop, opts)
		if err != nil {
			return res, err
		}
	}
	if len(start) > 0 {
		res.Started, err = s.Start(ctx, start)
	}
	return res, err
}
