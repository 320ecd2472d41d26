package policy_test

import (
	"slices"
	"testing"

	"github.com/devkit-go/devkit/ratelimit/policy"
)

// Removed names the rules gone and the limits gone from the rules kept;
// a limit whose values changed under its name is not gone.
func TestRemoved_RulesAndLimitsGoneNotChanged(t *testing.T) {
	parse := func(src string) *policy.Policy {
		t.Helper()
		p, err := policy.Parse("p.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := parse(`defaults: {plan: free}
rules:
  - {name: login, paths: [/login], limits: [{name: burst, limit: 5, window: 1m}, {name: hourly, limit: 50, window: 1h}]}
  - name: api
    paths: [/api]
    plans:
      free: {GET: [{name: g, limit: 10, window: 1m}], "*": [{name: any, limit: 5, window: 1m}]}
  - {name: old, paths: [/old], skip: true}
`)
	p := parse(`defaults: {plan: free}
rules:
  - {name: login, paths: [/login], limits: [{name: burst, limit: 9, window: 1m}]}
  - name: api
    paths: [/api]
    plans:
      free: {GET: [{name: g, limit: 20, window: 1m}]}
`)
	want := []string{"limit hourly of rule login", "rule old", "limit any, plan free, method * of rule api"}
	got := policy.Removed(old, p)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Removed = %q\nwant %q", got, want)
	}
	if got := policy.Removed(p, p); len(got) != 0 {
		t.Errorf("Removed(p, p) = %q", got)
	}
}
