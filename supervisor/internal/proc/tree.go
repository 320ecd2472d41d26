package proc

// A Table is one pass over the kernel's process list. Callers take one per
// operation (a status of fifty processes scans the list once, not fifty
// times) and answer every "which processes are whose" question from it.

// Table maps each live (non-zombie) PID to what the kernel said about it.
type Table map[int]Info

// ByParent indexes t by parent PID (a process that is its own parent is
// left out). Build it once and walk it with Below for many roots.
func (t Table) ByParent() map[int][]Info {
	children := map[int][]Info{}
	for _, p := range t {
		if p.PID != p.PPID {
			children[p.PPID] = append(children[p.PPID], p)
		}
	}
	return children
}

// Descendants returns every live process below root in the parent tree
// (root itself excluded).
func (t Table) Descendants(root int) []Info { return Below(t.ByParent(), root) }

// Below returns every process below root in a ByParent index (root itself
// excluded), breadth first; a cycle in the index is walked once.
func Below(byParent map[int][]Info, root int) []Info {
	var out []Info
	seen := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range byParent[pid] {
			if !seen[c.PID] {
				seen[c.PID] = true
				out = append(out, c)
				queue = append(queue, c.PID)
			}
		}
	}
	return out
}
