//go:build darwin || windows

package proc

// Where the kernel offers no per-process children lists, the tree below a
// process is read from one snapshot of the whole table.

// DescendantsOf walks the tree below root from one snapshot.
func DescendantsOf(root int) ([]Info, error) {
	t, err := Snapshot()
	if err != nil {
		return nil, err
	}
	return t.Descendants(root), nil
}
