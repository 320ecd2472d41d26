package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit/policy"
)

// TestParse_DurationsShareTheFlagGrammar: a policy duration reads as a CLI
// flag does: Go syntax or a plain number of seconds, 1.5 included.
func TestParse_DurationsShareTheFlagGrammar(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`
rules:
  - {name: api, paths: [/api/], limits: [{limit: 3, window: 1.5, block: 90}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	l := p.Rules[0].Limits[0]
	if l.Period != 1500*time.Millisecond || l.Block != 90*time.Second {
		t.Fatalf("window 1.5 / block 90 = %v / %v", l.Period, l.Block)
	}
	_, err = policy.Parse("p.yaml", []byte(`
rules:
  - {name: api, paths: [/api/], limits: [{limit: 3, window: -5}]}
`))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:3") {
		t.Fatalf("window -5: err = %v, want an error naming p.yaml:3", err)
	}
}
