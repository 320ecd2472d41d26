package yamlerr

import (
	"errors"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type seconds time.Duration

func (s *seconds) UnmarshalYAML(n *yaml.Node) error {
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		return errors.New(`"` + n.Value + `" is not a duration`)
	}
	*s = seconds(d)
	return nil
}

type doc struct {
	Processes map[string]struct {
		Command     string  `yaml:"command"`
		StopTimeout seconds `yaml:"stop_timeout"`
		Replicas    int     `yaml:"replicas"`
	} `yaml:"processes"`
	Rules []struct {
		Name  string   `yaml:"name"`
		Paths []string `yaml:"paths"`
	} `yaml:"rules"`
}

// Every mistake of a file is one *Error naming the file, the line and the
// dotted field, whoever found it: yaml.v3's parser, the field walk, or a
// field's own UnmarshalYAML.
func TestParseAndDecode_EveryMistakeNamesFileLineAndField(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"syntax in a flow list", "rules:\n  - name: a\n    paths: [/a\n", []string{"ops.yaml:3: rules[0].paths: "}},
		{"unknown key", "processes:\n  kv:\n    comand: x\n", []string{"ops.yaml:3: processes.kv.comand: "}},
		{"wrong type", "processes:\n  kv:\n    replicas: many\n", []string{"ops.yaml:3: processes.kv.replicas: "}},
		{"unmarshaler's error", "processes:\n  kv:\n    stop_timeout: ten\n", []string{`ops.yaml:3: processes.kv.stop_timeout: "ten" is not a duration`}},
		{"every mistake, not only the first", "processes:\n  kv:\n    replicas: x\n    stop_timeout: y\nrules:\n  - nam: a\n",
			[]string{"ops.yaml:3: processes.kv.replicas", "ops.yaml:4: processes.kv.stop_timeout", "ops.yaml:6: rules[0].nam"}},
		{"second document", "rules: []\n---\nrules: []\n", []string{"ops.yaml:2: a second YAML document"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got error
			root, err := Parse("ops.yaml", []byte(c.yaml))
			if err != nil {
				got = err
			} else if errs := Decode("ops.yaml", root, &doc{}); errs != nil {
				got = errs
			}
			if got == nil {
				t.Fatal("no error")
			}
			var e *Error
			if !errors.As(got, &e) || e.File != "ops.yaml" || e.Line == 0 {
				t.Fatalf("%v (%T): want an *Error with the file and a line", got, got)
			}
			lines := strings.Split(got.Error(), "\n")
			if len(lines) != len(c.want) {
				t.Fatalf("%d mistakes reported, want %d:\n%v", len(lines), len(c.want), got)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("mistake %d = %q, want it to start with %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestParse_AnEmptyFileHasNoDocument(t *testing.T) {
	root, err := Parse("empty.yaml", nil)
	if root != nil || err != nil {
		t.Fatalf("Parse(empty) = %v, %v; want nil, nil", root, err)
	}
}

func TestJoinAndIndex_BuildDottedPaths(t *testing.T) {
	if got := Index(Join("", "rules"), 2); got != "rules[2]" {
		t.Fatalf("Index(Join) = %q", got)
	}
	if got := Join(Index("rules", 2), "limits"); got != "rules[2].limits" {
		t.Fatalf("Join(Index) = %q", got)
	}
}
