package policy

import (
	"fmt"
	"slices"
)

// Removed lists what p drops of old: each rule gone ("rule login"), and
// each limit gone from a rule both keep ("limit login-15m of rule login,
// plan free, method GET"). A limit whose values changed under the same
// name is not gone. An operator is told of these on reload: a limit
// removed by a file written in haste is a limit no longer enforced.
func Removed(old, p *Policy) []string {
	var out []string
	kept := map[string]*Rule{}
	for _, r := range p.Rules {
		kept[r.Name] = r
	}
	for _, r := range old.Rules {
		n, ok := kept[r.Name]
		if !ok {
			out = append(out, fmt.Sprintf("rule %s", r.Name))
			continue
		}
		have := limitSet(n)
		for _, l := range limitList(r) {
			if have[l] > 0 {
				have[l]--
				continue
			}
			out = append(out, fmt.Sprintf("limit %s of rule %s", l, r.Name))
		}
	}
	return out
}

// limitList names every limit of r with where it applies.
func limitList(r *Rule) []string {
	var out []string
	for _, l := range r.Limits {
		out = append(out, l.DisplayName())
	}
	plans := make([]string, 0, len(r.Plans))
	for plan := range r.Plans {
		plans = append(plans, plan)
	}
	slices.Sort(plans)
	for _, plan := range plans {
		methods := make([]string, 0, len(r.Plans[plan]))
		for m := range r.Plans[plan] {
			methods = append(methods, m)
		}
		slices.Sort(methods)
		for _, m := range methods {
			for _, l := range r.Plans[plan][m] {
				out = append(out, fmt.Sprintf("%s, plan %s, method %s", l.DisplayName(), plan, m))
			}
		}
	}
	return out
}

func limitSet(r *Rule) map[string]int {
	set := map[string]int{}
	for _, l := range limitList(r) {
		set[l]++
	}
	return set
}
