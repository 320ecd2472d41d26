package supervisor

import (
	"fmt"
	"slices"
	"strings"
)

// dependencyError names the process whose depends_on is wrong.
type dependencyError struct {
	name string
	msg  string
}

func (e *dependencyError) Error() string { return e.name + ": " + e.msg }

// dependencyOrder sorts names so that each comes after its dependencies,
// breaking ties by name. Unknown dependencies and cycles are errors.
func dependencyOrder(procs map[string]*Process) ([]string, error) {
	names := make([]string, 0, len(procs))
	for name := range procs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, dep := range procs[name].DependsOn {
			if _, ok := procs[dep]; !ok {
				return nil, &dependencyError{name, fmt.Sprintf("unknown process %q", dep)}
			}
			if dep == name {
				return nil, &dependencyError{name, "a process cannot depend on itself"}
			}
		}
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	order := make([]string, 0, len(names))
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case done:
			return nil
		case visiting:
			cycle := append(path[slices.Index(path, name):], name)
			return &dependencyError{cycle[0], "dependency cycle " + strings.Join(cycle, " -> ")}
		}
		state[name] = visiting
		deps := slices.Sorted(slices.Values(procs[name].DependsOn))
		for _, dep := range deps {
			if err := visit(dep, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = done
		order = append(order, name)
		return nil
	}
	for _, name := range names {
		if err := visit(name, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// Closure returns names plus everything they depend on, in start order.
func (c *Config) Closure(names []string) []string {
	want := map[string]bool{}
	var add func(string)
	add = func(n string) {
		if want[n] {
			return
		}
		want[n] = true
		if p, ok := c.Processes[n]; ok {
			for _, d := range p.DependsOn {
				add(d)
			}
		}
	}
	for _, n := range names {
		add(n)
	}
	var out []string
	for _, n := range c.Order {
		if want[n] {
			out = append(out, n)
		}
	}
	return out
}

// StopOrder returns names in reverse dependency order: dependents first.
// Names the configuration does not know (removed processes) come first.
func (c *Config) StopOrder(names []string) []string {
	var unknown, known []string
	for _, n := range names {
		if _, ok := c.Processes[n]; ok {
			known = append(known, n)
		} else {
			unknown = append(unknown, n)
		}
	}
	slices.Sort(unknown)
	pos := map[string]int{}
	for i, n := range c.Order {
		pos[n] = i
	}
	slices.SortFunc(known, func(a, b string) int { return pos[b] - pos[a] })
	return append(unknown, known...)
}
