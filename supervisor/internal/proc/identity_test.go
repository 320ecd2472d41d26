package proc

import (
	"errors"
	"slices"
	"testing"
)

// The tests here check the pure parts of process identity and the tree
// walk: no process is started, so they run on every platform.

func TestIdentitySame_EveryFieldCounts(t *testing.T) {
	id := Identity{PID: 42, StartTime: "1234", BootID: "boot-a"}
	if !id.Same(id) {
		t.Fatal("an identity is not the same as itself")
	}
	for name, other := range map[string]Identity{
		"another start time (the PID was reused)": {PID: 42, StartTime: "1235", BootID: "boot-a"},
		"another boot (start times restart at 0)": {PID: 42, StartTime: "1234", BootID: "boot-b"},
		"another PID": {PID: 43, StartTime: "1234", BootID: "boot-a"},
	} {
		if id.Same(other) || other.Same(id) {
			t.Errorf("%s: %+v counts as the same process as %+v", name, other, id)
		}
	}
}

func TestStartedNotBefore_ComparesStartTimesAsNumbers(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"100", "99", true},      // as strings "100" < "99"
		{"99", "100", false},     // as strings "99" > "100"
		{"100", "100", true},     // the same tick: not provably earlier
		{"12.5", "12.40", false}, // macOS: micros unpadded, 5 < 40
		{"12.40", "12.5", true},
		{"13.0", "12.999999", true},
		{"", "1", false},  // unreadable: descent not provable
		{"1", "x", false}, // unreadable
		{"1.x", "1", false},
	}
	for _, c := range cases {
		got := StartedNotBefore(Identity{StartTime: c.a}, Identity{StartTime: c.b})
		if got != c.want {
			t.Errorf("StartedNotBefore(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestVerify_NoPIDIsNotFound(t *testing.T) {
	for _, pid := range []int{0, -1} {
		if _, err := Verify(Identity{PID: pid, StartTime: "1"}); !errors.Is(err, ErrNotFound) {
			t.Errorf("Verify(pid %d) = %v, want ErrNotFound (never a lookup of pid %d)", pid, err, pid)
		}
	}
}

func pids(infos []Info) []int {
	out := make([]int, 0, len(infos))
	for _, i := range infos {
		out = append(out, i.PID)
	}
	return out
}

func TestTableDescendants_WalksTheWholeTreeOnly(t *testing.T) {
	tab := Table{}
	add := func(pid, ppid int) { tab[pid] = Info{Identity: Identity{PID: pid}, PPID: ppid} }
	add(1, 0)
	add(10, 1) // root of the walk
	add(11, 10)
	add(12, 10)
	add(13, 11) // a grandchild
	add(14, 13) // a great-grandchild
	add(20, 1)  // a sibling of root: not below it
	add(21, 20)
	got := pids(tab.Descendants(10))
	if want := []int{11, 12, 13, 14}; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Fatalf("descendants of 10 = %v, want %v", got, want)
	}
	// Breadth first: the children come before the grandchildren.
	if len(got) == 4 && (got[2] != 13 || got[3] != 14) {
		t.Errorf("descendants of 10 in order %v, want children first, then 13, then 14", got)
	}
	if got := tab.Descendants(14); len(got) != 0 {
		t.Errorf("a leaf has descendants %v", pids(got))
	}
	if got := tab.Descendants(99); len(got) != 0 {
		t.Errorf("a PID not in the table has descendants %v", pids(got))
	}
}

func TestBelow_ACycleIsWalkedOnceAndTheRootLeftOut(t *testing.T) {
	// A PID reused while the table was read can make the parent links loop.
	byParent := map[int][]Info{
		1: {{Identity: Identity{PID: 2}, PPID: 1}},
		2: {{Identity: Identity{PID: 3}, PPID: 2}},
		3: {{Identity: Identity{PID: 1}, PPID: 3}, {Identity: Identity{PID: 2}, PPID: 3}},
	}
	got := pids(Below(byParent, 1))
	if want := []int{2, 3}; !slices.Equal(got, want) {
		t.Fatalf("Below(1) = %v, want %v (once each, root excluded)", got, want)
	}
}

func TestByParent_LeavesOutAProcessThatIsItsOwnParent(t *testing.T) {
	tab := Table{
		0: {Identity: Identity{PID: 0}, PPID: 0}, // the kernel's idle task as some tables list it
		5: {Identity: Identity{PID: 5}, PPID: 0},
	}
	idx := tab.ByParent()
	if got := pids(idx[0]); !slices.Equal(got, []int{5}) {
		t.Fatalf("children of 0 = %v, want [5]", got)
	}
}
