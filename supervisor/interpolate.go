package supervisor

import (
	"fmt"
	"strings"
)

// interpolate expands ${VAR} and ${VAR:-default} in s. "$${" stands for a
// literal "${"; any other "$" is left alone so shell snippets keep theirs.
// An undefined variable without a default is an error.
func interpolate(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' { // escaped: "$${" -> "${"
			b.WriteString(s[:i-1] + "${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		expr := s[i+2 : i+end]
		s = s[i+end+1:]
		name, def, hasDefault := strings.Cut(expr, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("invalid variable name %q", name)
		}
		if v, ok := lookup(name); ok && (v != "" || !hasDefault) {
			b.WriteString(v)
			continue
		}
		if !hasDefault {
			return "", fmt.Errorf("${%s} is not set (use ${%s:-default} for a default)", name, name)
		}
		b.WriteString(def)
	}
}

func validVarName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
