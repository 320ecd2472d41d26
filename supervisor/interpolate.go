package supervisor

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsetVariable reports a ${VAR} without a default whose variable is not
// set.
var ErrUnsetVariable = errors.New("is not set")

// interpolate expands ${VAR} and ${VAR:-default} in s; a default may
// itself hold ${...} (${A:-${B:-x}}), expanded only when used. "$${"
// stands for a literal "${"; any other "$" is left alone so shell snippets
// keep theirs. An undefined variable without a default is an error
// wrapping ErrUnsetVariable.
func interpolate(s string, lookup func(string) (string, bool)) (string, error) {
	return expand(s, lookup, func(_, value string) string { return value })
}

// expand is interpolate with emit deciding what text stands for a
// variable name whose value is value.
func expand(s string, lookup func(string) (string, bool), emit func(name, value string) string) (string, error) {
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
		end := closingBrace(s[i+2:])
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		expr := s[i+2 : i+2+end]
		s = s[i+2+end+1:]
		name, def, hasDefault := strings.Cut(expr, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("invalid variable name %q", name)
		}
		v, ok := lookup(name)
		switch {
		case ok && (v != "" || !hasDefault):
		case !hasDefault:
			return "", fmt.Errorf("${%s} %w (use ${%s:-default} for a default)", name, ErrUnsetVariable, name)
		default:
			d, err := interpolate(def, lookup)
			if err != nil {
				return "", err
			}
			v = d
		}
		b.WriteString(emit(name, v))
	}
}

// closingBrace returns the index in s of the "}" that closes a "${" just
// before s, counting nested "${...}" pairs; -1 when there is none.
func closingBrace(s string) int {
	depth := 0
	for j := 0; j < len(s); j++ {
		switch {
		case strings.HasPrefix(s[j:], "${"):
			depth++
			j++
		case s[j] == '}':
			if depth == 0 {
				return j
			}
			depth--
		}
	}
	return -1
}

// shellVarPrefix starts the environment variables that carry interpolated
// values into shell snippets.
const shellVarPrefix = "DEVKIT_SUP_VAR_"

// interpolateShell expands s, a shell snippet (an exec probe, or the
// script of sh -c), so that interpolated values stay data: each ${VAR}
// becomes a reference to the shell parameter DEVKIT_SUP_VAR_VAR, whose
// value is added to vars. The shell expands a parameter's value but never
// parses it again, so "$(touch PWNED)" in a value is text, not a command.
func interpolateShell(s string, lookup func(string) (string, bool), vars map[string]string) (string, error) {
	return expand(s, lookup, func(name, value string) string {
		vars[shellVarPrefix+name] = value
		return "${" + shellVarPrefix + name + "}"
	})
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
