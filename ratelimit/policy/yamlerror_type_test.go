package policy_test

import (
	"errors"
	"testing"

	"github.com/devkit-go/devkit/ratelimit/policy"
)

// errors.As finds one typed error, whatever found the mistake: yaml.v3's
// parser, the field walk or the policy's own checks.
func TestParse_EveryErrorIsAPolicyErrorWithFileLineAndField(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		line       int
		field      string
	}{
		{"syntax", "rules:\n  - name: a\n    paths: [/a\n", 3, "rules[0].paths"},
		{"type", "rules:\n  - name: a\n    paths: [/a]\n    max_cost: lots\n", 4, "rules[0].max_cost"},
		{"unknown key", "rules:\n  - name: a\n    pathz: [/a]\n", 3, "rules[0].pathz"},
		{"policy check", "rules:\n  - name: a\n    paths: [a]\n    skip: true\n", 3, "rules[0].paths[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := policy.Parse("dir/p.yaml", []byte(c.yaml))
			var pe *policy.Error
			if !errors.As(err, &pe) || pe.File != "p.yaml" || pe.Line != c.line || pe.Field != c.field || pe.Msg == "" {
				t.Fatalf("err = %v (%T), want a *policy.Error at p.yaml:%d field %s", err, err, c.line, c.field)
			}
		})
	}
}
