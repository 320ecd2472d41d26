package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/ratelimit/policy"
)

// A policy's YAML-level mistakes (syntax, wrong types, unknown keys) are
// one *policy.Error naming the line of the mistake and its field, as the
// policy's own checks are.
func TestParse_YAMLLevelErrorsNameTheLineAndFieldOfTheMistake(t *testing.T) {
	const head = "version: 1\nidentity:\n  trusted_proxies: [10.0.0.1]\ndefaults:\n  fail: open\nrules:\n  - name: a\n    paths: [/a]\n    limits:\n      - limit: 5\n        window: 1m\n"
	cases := []struct {
		name, yaml string
		line       int
		field, msg string
	}{
		{"unclosed flow sequence", head + "  - name: b\n    paths: [/b, /c\n    skip: true\n", 13, "rules[1].paths", "did not find expected"},
		{"bad indentation", head + "  - name: b\n    skip: true\n   shadow: true\n", 14, "rules[1].shadow", "did not find expected"},
		{"broken new item", head + "  - name: b\n    skip: true\n  - name: [c\n", 14, "rules[2].name", "did not find expected"},
		{"unclosed quote", head + "  - name: b\n    skip: true\n    fail: \"open\n", 14, "rules[1].fail", "found unexpected end of stream"},
		{"string for an integer", head + "  - name: b\n    paths: [/b]\n    limits:\n      - limit: ten\n        window: 1m\n", 15, "rules[1].limits[0].limit", `"ten" is not an integer`},
		{"mapping for a string", head + "  - name: b\n    paths: [/b]\n    scope: {a: b}\n", 14, "rules[1].scope", "must be a single value"},
		{"scalar for a list", "rules:\n  - name: a\n    paths: /a\n    skip: true\n", 3, "rules[0].paths", "must be a list"},
		{"bool that is not", head + "  - name: b\n    paths: [/b]\n    skip: maybe\n", 14, "rules[1].skip", `"maybe" is not true or false`},
		{"bad duration deep in plans", "defaults: {plan: free}\nrules:\n  - name: a\n    paths: [/a]\n    plans:\n      free:\n        GET:\n          - limit: 1\n            window: soon\n", 9, "rules[0].plans.free.GET[0].window", `"soon" is not a duration`},
		{"unknown key", head + "  - name: b\n    paths: [/b]\n    sikp: true\n", 14, "rules[1].sikp", "unknown field (want name, paths,"},
		{"unknown key in identity", "identity:\n  trusted_proxy: [10.0.0.1]\nrules:\n  - {name: a, paths: [/], skip: true}\n", 2, "identity.trusted_proxy", "unknown field (want trusted_proxies,"},
		{"unknown top-level key", "rule:\n  - {name: a, paths: [/], skip: true}\n", 1, "rule", "unknown field (want version, identity, defaults, rules)"},
		{"duplicate key", "rules:\n  - name: a\n    paths: [/]\n    skip: true\n    skip: false\n", 5, "rules[0].skip", "duplicate key"},
		{"unknown escaped_slashes action", "defaults:\n  escaped_slashes: decode\nrules:\n  - {name: a, paths: [/], skip: true}\n", 2, "defaults.escaped_slashes", `"decode" is not reject, unescape or keep`},
		{"second document", "rules:\n  - {name: a, paths: [/], skip: true}\n---\nrules: []\n", 3, "", "a second YAML document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := policy.Parse("dir/p.yaml", []byte(c.yaml))
			want := fmt.Sprintf("p.yaml:%d: %s: ", c.line, c.field)
			if c.field == "" {
				want = fmt.Sprintf("p.yaml:%d: ", c.line)
			}
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v\nwant %s...%s", err, want, c.msg)
			}
		})
	}
}

// Every mistake of the file is reported, YAML-level and policy-level alike,
// each on its own line.
func TestParse_ReportsEveryTypeErrorOfTheFile(t *testing.T) {
	_, err := policy.Parse("p.yaml", []byte("rules:\n  - name: a\n    paths: [/a]\n    max_cost: lots\n    limits:\n      - {limit: x, window: 1m}\n"))
	want := "p.yaml:4: rules[0].max_cost: \"lots\" is not an integer (in range)\np.yaml:6: rules[0].limits[0].limit: \"x\" is not an integer (in range)"
	if err == nil || err.Error() != want {
		t.Fatalf("err =\n%v\nwant\n%s", err, want)
	}
}

// A value that does not decode does not hide the policy-level mistakes of
// the other rules and limits: one run names them all, in file order, less
// what follows from a mistake inside the same limit or rule (a misspelt
// "paths" is not also reported as a rule without paths).
func TestParse_DecodingMistakesDoNotHideTheRuleMistakes(t *testing.T) {
	yaml := `rules:
  - name: a
    paths: [/a]
    limits:
      - {limit: five, window: 1m}
  - name: b
    paths: [/b]
    key: [nosuch]
    limits:
      - {algorithm: leaky, limit: 5, window: ten}
  - name: c
    pathz: [/c]
  - name: d
    paths: [/d]
    limits:
      - {limit: -1, window: 1m}
`
	_, err := policy.Parse("p.yaml", []byte(yaml))
	want := []string{
		`p.yaml:5: rules[0].limits[0].limit: "five" is not an integer (in range)`,
		`p.yaml:8: rules[1].key[0]: unknown key part "nosuch"`,
		`p.yaml:10: rules[1].limits[0].window: "ten" is not a duration`,
		`p.yaml:12: rules[2].pathz: unknown field`,
		`p.yaml:16: rules[3].limits[0].limit: limit must be a positive number of requests, got -1`,
	}
	if err == nil {
		t.Fatal("parsed")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d mistakes reported, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("mistake %d = %q, want %q...", i, lines[i], w)
		}
	}
}

// YAML anchors, aliases and merge keys still work: the walk follows them.
func TestParse_AliasesAndMergeKeys(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("rules:\n  - name: a\n    paths: [/a]\n    limits: [&std {limit: 5, window: 1m}]\n  - name: b\n    paths: [/b]\n    limits:\n      - <<: *std\n        limit: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l := p.Rules[1].Limits[0]; l.Rate != 7 || l.Period.Minutes() != 1 {
		t.Fatalf("merged limit = %+v, want 7 per 1m", l)
	}
	if l := p.Rules[0].Limits[0]; l.Rate != 5 {
		t.Fatalf("aliased limit = %+v, want 5 per 1m", l)
	}
}

// Aliases cannot make a small file cost a huge walk ("billion laughs"):
// yaml.v3's decoder refused that, and so does the walk that replaced it.
func TestParse_AliasExpansionIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("x: &l [")
	for i := range 100 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{limit: 1, window: 1s}")
	}
	b.WriteString("]\n")
	// Not valid as a policy (x is unknown), but the anchors are what matter.
	b.WriteString("defaults: {plan: p0}\nrules:\n  - &r\n    name: a\n    paths: [/]\n    plans:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "      p%d: {GET: *l, POST: *l, \"*\": *l}\n", i)
	}
	for range 100 {
		b.WriteString("  - *r\n")
	}
	_, err := policy.Parse("p.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "through aliases") {
		t.Fatalf("err = %.300v, want the alias expansion refused", err)
	}
}

// BenchmarkParse_SyntaxErrorMidFile measures placing a syntax error in the
// middle of a 5000-line policy (bisection over prefixes; one parse per line
// took 16 s on this machine).
func BenchmarkParse_SyntaxErrorMidFile(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("rules:\n")
	for i := range 1240 {
		if i == 620 {
			sb.WriteString("  - name: [x\n")
		}
		sb.WriteString("  - name: r\n    paths: [/a]\n    limits:\n      - {limit: 5, window: 1m}\n")
	}
	data := []byte(sb.String())
	for b.Loop() {
		if _, err := policy.Parse("p.yaml", data); err == nil {
			b.Fatal("parsed")
		}
	}
}
