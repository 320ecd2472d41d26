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
	"github.com/devkit-go/devkit/supervisor/internal/proc"
	"github.com/devkit-go/devkit/supervisor/internal/state"
)

// scan is one pass over the process table, shared by everything one
// operation asks (status of fifty processes reads /proc once).
type scan struct {
	table proc.Table
	boot  string
	err   error
	done  bool
}

func (sc *scan) get() (proc.Table, error) {
	if !sc.done {
		sc.done = true
		sc.table, sc.err = proc.Snapshot()
		if sc.err == nil {
			sc.boot, sc.err = proc.BootID()
		}
	}
	return sc.table, sc.err
}

// ownedTree is what of a record is alive now.
type ownedTree struct {
	leaderAlive  bool        // the recorded leader, verified
	monitorAlive bool        // the recorded monitor, verified
	otherBoot    bool        // the record is from another boot: nothing is ours
	members      []proc.Info // every other live process provably ours
}

// treeOf finds what of rec is alive, from one snapshot.
func (sc *scan) treeOf(rec *state.ProcessRecord) (ownedTree, error) {
	t, err := sc.get()
	if err != nil {
		return ownedTree{}, err
	}
	if rec.Process.BootID != "" && rec.Process.BootID != sc.boot {
		return ownedTree{otherBoot: true}, nil
	}
	var tr ownedTree
	tr.leaderAlive = t.Alive(rec.Process)
	tr.monitorAlive = rec.Monitor != nil && rec.Monitor.PID > 0 && t.Alive(*rec.Monitor)
	leader := rec.Process.PID
	monitor := 0
	if rec.Monitor != nil {
		monitor = rec.Monitor.PID
	}
	ours := map[int]bool{leader: true, monitor: true}
	add := func(p proc.Info) {
		if !ours[p.PID] {
			ours[p.PID] = true
			tr.members = append(tr.members, p)
		}
	}
	if tr.monitorAlive {
		for _, p := range t.Descendants(monitor) {
			add(p)
		}
	}
	if tr.leaderAlive {
		for _, p := range t.Descendants(leader) {
			add(p)
		}
	}
	token := ""
	if rec.Token != "" {
		token = state.TokenEnv + "=" + rec.Token
	}
	for _, p := range t {
		if ours[p.PID] || !proc.StartedNotBefore(p.Identity, rec.Process) {
			continue
		}
		inSession := p.Session == leader || p.PGID == leader
		switch {
		case inSession && tr.leaderAlive:
			add(p)
		case (inSession || !tr.monitorAlive) && token != "" && proc.HasEnv(p.PID, token):
			add(p)
		}
	}
	return tr, nil
}

// survivorsOf lists members as SurvivorInfo.
func survivorsOf(members []proc.Info) []SurvivorInfo {
	out := make([]SurvivorInfo, 0, len(members))
	for _, m := range members {
		out = append(out, SurvivorInfo{PID: m.PID, Comm: m.Comm})
	}
	return out
}
