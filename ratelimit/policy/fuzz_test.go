package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/devkit-go/devkit/ratelimit/policy"
)

// FuzzParse: whatever the bytes, Parse returns a policy or errors that each
// name the file (never a panic, never an error of another type). The rule
// checks run on partly decoded documents too, so they must hold up on
// whatever zero values a bad file leaves.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "..", "examples", "policies", "*.yaml"))
	for _, path := range seeds {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("rules:\n  - name: a\n    paths: [/a]\n    skip: maybe\n    limits: [{limit: five, window: soon, algorithm: leaky}]\n"))
	f.Add([]byte("defaults: {plan: free, budget: x}\nrules:\n  - name: a\n    pathz: [/a]\n    plans: {free: {GET: [{limit: 1, window: 1m}]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Parse("p.yaml", data)
		if err == nil {
			if p == nil {
				t.Fatal("nil policy and nil error")
			}
			_ = p.Describe()
			return
		}
		var errs policy.Errors
		if !errors.As(err, &errs) {
			var one *policy.Error
			if !errors.As(err, &one) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			errs = policy.Errors{one}
		}
		for _, e := range errs {
			if e.File != "p.yaml" {
				t.Fatalf("error without the file: %+v", e)
			}
		}
	})
}
