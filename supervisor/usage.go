package supervisor

// A process's usage counts its whole tree, and only what is provably of it:
// the cgroup devkit made for it where there is one (the kernel's own
// accounting, exact, including descendants that have exited), else the
// sum over the verified leader and members of its tree, each read only
// while its start time still matches the one it was verified with.
// A StatusReader remembers a cgroup without memory accounting and reads
// the tree of it from then on (a cgroup's controllers are set when it is
// made).

import (
	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// Usage sources, as ProcessStatus.UsageSource reports them.
const (
	// UsageCgroup: cpu.stat and memory.current of the process's cgroup.
	UsageCgroup = "cgroup"
	// UsageTree: summed over the live, verified processes of its tree.
	UsageTree = "tree"
)

// usage is the resource use of one process tree at one instant.
type usage struct {
	cpuSeconds float64 // cumulative user + system CPU time
	rssBytes   int64   // resident memory (from a cgroup: memory.current)
	source     string  // UsageCgroup or UsageTree; "" when unknown
}

// addUsage fills st's usage fields for the live tree of rec. Usage is a
// reading, not a verdict: when it cannot be read the fields stay empty and
// status reports the rest.
func addUsage(st *ProcessStatus, rec *state.ProcessRecord, tr ownedTree, trees *treeCache) {
	var u usage
	ok := false
	if !trees.noCgroupUsage(rec.Cgroup) {
		if u, ok = cgroupUsage(rec.Cgroup); !ok {
			trees.markNoCgroupUsage(rec.Cgroup)
		}
	}
	if !ok {
		leader := proc.Info{Identity: rec.Process}
		u = treeUsage(append([]proc.Info{leader}, tr.members...), trees.procFiles())
	}
	if u.source == "" {
		return
	}
	st.CPUSeconds, st.RSSBytes, st.UsageSource = u.cpuSeconds, u.rssBytes, u.source
}
