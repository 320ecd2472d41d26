package proc

// A Table is one pass over the kernel's process list. Callers take one per
// operation (a status of fifty processes scans the list once, not fifty
// times) and answer every "which processes are whose" question from it.

// Table maps each live (non-zombie) PID to what the kernel said about it.
type Table map[int]Info

// Children returns the live children of pid.
func (t Table) Children(pid int) []Info {
	var out []Info
	for _, p := range t {
		if p.PPID == pid && p.PID != pid {
			out = append(out, p)
		}
	}
	return out
}

// Descendants returns every live process below root in the parent tree
// (root itself excluded).
func (t Table) Descendants(root int) []Info {
	children := map[int][]Info{}
	for _, p := range t {
		if p.PID != p.PPID {
			children[p.PPID] = append(children[p.PPID], p)
		}
	}
	var out []Info
	seen := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !seen[c.PID] {
				seen[c.PID] = true
				out = append(out, c)
				queue = append(queue, c.PID)
			}
		}
	}
	return out
}

// Alive reports whether the table holds exactly the process id.
func (t Table) Alive(id Identity) bool {
	p, ok := t[id.PID]
	return ok && p.Identity.Same(id)
}
