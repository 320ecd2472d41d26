package supervisor

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// parseEnvFile reads KEY=VALUE lines: blank lines and # comments are
// skipped, an optional "export " prefix is dropped, and a value in double
// quotes is unquoted Go-style, in single quotes taken literally.
func parseEnvFile(data []byte) (map[string]string, error) {
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || !validVarName(key) {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", n)
		}
		val = strings.TrimSpace(val)
		switch {
		case len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"':
			u, err := strconv.Unquote(val)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: bad quoting", n, key)
			}
			val = u
		case len(val) >= 2 && val[0] == '\'' && val[len(val)-1] == '\'':
			val = val[1 : len(val)-1]
		}
		env[key] = val
	}
	return env, sc.Err()
}
