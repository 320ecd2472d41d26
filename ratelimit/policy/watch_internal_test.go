package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// Where no file events can be had, new content is applied only once two
// polls in a row find it unchanged: a file caught half-written by one poll
// is not applied by it.
func TestWatchPoll_AppliesContentStableOverTwoPolls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const full = "rules:\n  - {name: a, paths: [/a], skip: true}\n  - {name: b, paths: [/b], skip: true}\n"
	write(full)
	cur, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var applied []*Policy
	w := &watcher{path: path, current: cur, last: cur.Digest, opts: WatchOptions{
		OnChange: func(_, p *Policy) { applied = append(applied, p) }, OnError: func(error) {}}}
	w.poll()                                                  // unchanged
	write("rules:\n  - {name: a, paths: [/a], skip: true}\n") // half-written: parses, lacks b
	w.poll()
	write(full + "  - {name: c, paths: [/c], skip: true}\n") // the writer goes on
	w.poll()
	if len(applied) != 0 {
		t.Fatalf("applied %d policies from content seen by one poll only", len(applied))
	}
	w.poll() // the same content again: applied
	if len(applied) != 1 || len(applied[0].Rules) != 3 {
		t.Fatalf("applied %v: want the whole file once", applied)
	}
	w.poll()
	if len(applied) != 1 {
		t.Fatalf("applied again without a change")
	}
}
