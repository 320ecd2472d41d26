package policy

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	dur "github.com/devkit-go/devkit/internal/duration"
)

// The YAML shape of a policy file, filled by yamlerr.Decode: unknown keys
// are errors that name the field.
type fileDoc struct {
	Version  int          `yaml:"version"`
	Identity fileIdentity `yaml:"identity"`
	Defaults fileDefaults `yaml:"defaults"`
	Rules    []fileRule   `yaml:"rules"`
}

type fileIdentity struct {
	TrustedProxies         []string `yaml:"trusted_proxies"`
	IPv6Prefix             *int     `yaml:"ipv6_prefix"`
	UserHeader             string   `yaml:"user_header"`
	TenantHeader           string   `yaml:"tenant_header"`
	PlanHeader             string   `yaml:"plan_header"`
	HeadersFromTrustedOnly *bool    `yaml:"headers_from_trusted_only"`
	ClientHeader           string   `yaml:"client_header"`
}

type fileDefaults struct {
	Plan       string   `yaml:"plan"`
	Fail       string   `yaml:"fail"`
	CostHeader string   `yaml:"cost_header"`
	MaxCost    int64    `yaml:"max_cost"`
	Budget     duration `yaml:"budget"`
	// CaseSensitive makes path matching case-sensitive (default: not, as
	// Express and NestJS route).
	CaseSensitive bool `yaml:"case_sensitive"`
	// EscapedSlashes is what a path with %2F or %5C does: reject, unescape
	// or keep (default reject).
	EscapedSlashes string `yaml:"escaped_slashes"`
}

type fileRule struct {
	Name        string                            `yaml:"name"`
	Paths       []string                          `yaml:"paths"`
	Methods     []string                          `yaml:"methods"`
	SkipMethods []string                          `yaml:"skip_methods"`
	Scope       string                            `yaml:"scope"`
	Key         []string                          `yaml:"key"`
	Skip        bool                              `yaml:"skip"`
	Shadow      bool                              `yaml:"shadow"`
	Fail        string                            `yaml:"fail"`
	CostHeader  string                            `yaml:"cost_header"`
	MaxCost     int64                             `yaml:"max_cost"`
	Limits      []fileLimit                       `yaml:"limits"`
	Plans       map[string]map[string][]fileLimit `yaml:"plans"`
}

type fileLimit struct {
	Name      string   `yaml:"name"`
	Algorithm string   `yaml:"algorithm"`
	Limit     int64    `yaml:"limit"`
	Window    duration `yaml:"window"`
	Burst     int64    `yaml:"burst"`
	Block     duration `yaml:"block"`
}

// duration reads devkit's one duration grammar (duration.Parse of the shared internal module): Go
// syntax ("90s", "15m", "1h") or a plain number of seconds (900, 1.5).
type duration time.Duration

func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a duration (%s)", dur.Hint)
	}
	v, err := dur.Parse(n.Value)
	if err != nil {
		return fmt.Errorf("%q is not a duration (%s)", n.Value, dur.Hint)
	}
	*d = duration(v)
	return nil
}

// lineOf finds the line of the node at path (map keys and sequence indexes)
// in the document, or of the deepest node that exists.
func lineOf(root *yaml.Node, path ...any) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, step := range path {
		var next *yaml.Node
		switch s := step.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == s {
						next = n.Content[i+1]
						line = n.Content[i].Line
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && s < len(n.Content) {
				next = n.Content[s]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// pathString renders a path as rules[2].limits[0].window.
func pathString(path ...any) string {
	var b strings.Builder
	for _, step := range path {
		switch s := step.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}
