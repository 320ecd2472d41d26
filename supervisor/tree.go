package supervisor

// Invariant: a process counts as ours — to be signalled, killed, or listed
// as a survivor — only when its descent from what we started is provable:
// it runs in the same boot as the record, it started no earlier than the
// recorded leader, and it is
//   - a descendant of the record's live, verified monitor (a subreaper on
//     Linux, so daemons that double-fork or call setsid are reparented to
//     it and stay in its tree), or
//   - a member of the leader's session or group while the verified leader
//     lives (the kernel does not hand out a PID that names a live session),
//     or a descendant of that leader, or
//   - a carrier of the record's token in its environment.
// A session id alone proves nothing once the leader is gone: the PID may
// since have named an unrelated session.

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// scan is one pass over the process table, shared by everything one
// operation asks (status of fifty processes reads /proc at most once). The
// common case needs no pass at all: while the monitor lives, every
// descendant is in its tree, walked through the kernel's children lists.
type scan struct {
	// preferTable makes even the common case read the whole table once:
	// cheaper than a walk per record when many records are asked about.
	preferTable bool
	// trees, when not nil, lends the members an earlier scan found
	// (StatusReader).
	trees *treeCache

	table proc.Table
	err   error
	done  bool
	// Indexes over table, built with it.
	children         map[int][]proc.Info
	bySession, group map[int][]proc.Info
}

func (sc *scan) get() (proc.Table, error) {
	if !sc.done {
		sc.done = true
		sc.table, sc.err = proc.Snapshot()
		sc.children = sc.table.ByParent()
		sc.bySession = map[int][]proc.Info{}
		sc.group = map[int][]proc.Info{}
		for _, p := range sc.table {
			sc.bySession[p.Session] = append(sc.bySession[p.Session], p)
			if p.PGID != p.Session {
				sc.group[p.PGID] = append(sc.group[p.PGID], p)
			}
		}
	}
	return sc.table, sc.err
}

// ownedTree is what of a record is alive now.
type ownedTree struct {
	leaderAlive  bool        // the recorded leader, verified
	leaderErr    error       // why not: proc.ErrNotFound, proc.ErrIdentityMismatch, ...
	leaderNow    proc.Info   // what the leader's PID names now (with ErrIdentityMismatch: another process)
	monitorAlive bool        // the recorded monitor, verified
	otherBoot    bool        // the record is from another boot: nothing is ours
	members      []proc.Info // every other live process provably ours
}

// treeOf finds what of rec is alive, from one snapshot.
func (sc *scan) treeOf(rec *state.ProcessRecord) (tr ownedTree, err error) {
	boot, err := proc.BootID()
	if err != nil {
		return ownedTree{}, err
	}
	if rec.Process.BootID != "" && rec.Process.BootID != boot {
		return ownedTree{otherBoot: true}, nil
	}
	tr.leaderNow, tr.leaderErr = sc.trees.verify(rec.Process)
	tr.leaderAlive = tr.leaderErr == nil
	if rec.Monitor != nil && rec.Monitor.PID > 0 {
		_, merr := sc.trees.verify(*rec.Monitor)
		tr.monitorAlive = merr == nil
	}
	leader := rec.Process.PID
	monitor := 0
	if rec.Monitor != nil {
		monitor = rec.Monitor.PID
	}
	if tr.leaderAlive && tr.monitorAlive {
		if members, ok := sc.trees.lend(rec); ok {
			tr.members = members
			return tr, nil
		}
		defer func() {
			if err == nil {
				sc.trees.keep(rec, tr)
			}
		}()
	}
	cg, err := cgroupMembers(rec)
	if err != nil {
		return ownedTree{}, err
	}
	if tr.monitorAlive && proc.CanTrackDescendants && !sc.preferTable {
		// A subreaper's tree holds every descendant: nothing else to find
		// (beyond the cgroup, which holds them all too).
		if desc, err := proc.DescendantsOf(monitor); err == nil {
			seen := map[int]bool{leader: true}
			for _, p := range append(desc, cg...) {
				if !seen[p.PID] {
					seen[p.PID] = true
					tr.members = append(tr.members, p)
				}
			}
			return tr, nil
		}
	}
	t, err := sc.get()
	if err != nil {
		return ownedTree{}, err
	}
	ours := map[int]bool{leader: true, monitor: true}
	add := func(p proc.Info) {
		if !ours[p.PID] {
			ours[p.PID] = true
			tr.members = append(tr.members, p)
		}
	}
	for _, p := range cg {
		add(p)
	}
	if tr.monitorAlive {
		for _, p := range proc.Below(sc.children, monitor) {
			add(p)
		}
	}
	if tr.leaderAlive {
		for _, p := range proc.Below(sc.children, leader) {
			add(p)
		}
	}
	token := ""
	if rec.Token != "" {
		token = state.TokenEnv + "=" + rec.Token
	}
	consider := func(p proc.Info, inSession bool) {
		if ours[p.PID] || !proc.StartedNotBefore(p.Identity, rec.Process) {
			return
		}
		switch {
		case inSession && tr.leaderAlive:
			add(p)
		case token != "" && proc.HasEnv(p.PID, token):
			add(p)
		}
	}
	if tr.monitorAlive {
		// Only the session and group can hold something outside the
		// monitor's tree (where there is no subreaper).
		for _, p := range append(sc.bySession[leader], sc.group[leader]...) {
			consider(p, true)
		}
		return tr, nil
	}
	// No monitor: a daemon that left the session is found by its token.
	for _, p := range t {
		consider(p, p.Session == leader || p.PGID == leader)
	}
	return tr, nil
}

// treeCache keeps the members found in each tree for a StatusReader, under
// the leader and monitor they were found with.
type treeCache struct {
	every  time.Duration
	byName map[string]cachedTree
	// noCgroup holds the cgroups whose usage could not be read.
	noCgroup map[string]bool
	// files keeps the /proc files of the processes verified open.
	files *procFiles
}

// verify is proc.Verify, through the files a StatusReader keeps open.
func (c *treeCache) verify(id proc.Identity) (proc.Info, error) {
	if c == nil {
		return proc.Verify(id)
	}
	return c.files.verify(id)
}

func (c *treeCache) procFiles() *procFiles {
	if c == nil {
		return nil
	}
	return c.files
}

func (c *treeCache) noCgroupUsage(dir string) bool { return c != nil && c.noCgroup[dir] }

func (c *treeCache) markNoCgroupUsage(dir string) {
	if c != nil && dir != "" {
		c.noCgroup[dir] = true
	}
}

type cachedTree struct {
	leader, monitor proc.Identity
	members         []proc.Info
	at              time.Time
}

// lend returns the members found for rec's leader and monitor less than
// every ago (the caller has verified both alive).
func (c *treeCache) lend(rec *state.ProcessRecord) ([]proc.Info, bool) {
	if c == nil || rec.Monitor == nil {
		return nil, false
	}
	t, ok := c.byName[rec.Name]
	if !ok || !t.leader.Same(rec.Process) || !t.monitor.Same(*rec.Monitor) || time.Since(t.at) >= c.every {
		return nil, false
	}
	return t.members, true
}

// keep records what a full look found of rec's tree.
func (c *treeCache) keep(rec *state.ProcessRecord, tr ownedTree) {
	if c == nil || rec.Monitor == nil {
		return
	}
	c.byName[rec.Name] = cachedTree{leader: rec.Process, monitor: *rec.Monitor, members: tr.members, at: time.Now()}
}

// cgroupMembers lists the processes of rec's cgroup, which are ours
// whatever their session or parent: the monitor made the cgroup and put
// the process into it at spawn. A record naming a cgroup the supervisor
// would not have made is not followed.
func cgroupMembers(rec *state.ProcessRecord) ([]proc.Info, error) {
	if rec.Cgroup == "" {
		return nil, nil
	}
	if rec.Monitor == nil || filepath.Base(rec.Cgroup) != state.CgroupPrefix+rec.Name+"-"+strconv.Itoa(rec.Monitor.PID) {
		return nil, fmt.Errorf("%w: %s names cgroup %s, which devkit sup did not make", ErrCorrupt, rec.Name, rec.Cgroup)
	}
	return proc.CgroupMembers(rec.Cgroup)
}

// survivorsOf lists members as SurvivorInfo.
func survivorsOf(members []proc.Info) []SurvivorInfo {
	out := make([]SurvivorInfo, 0, len(members))
	for _, m := range members {
		out = append(out, SurvivorInfo{PID: m.PID, Comm: m.Comm})
	}
	return out
}
