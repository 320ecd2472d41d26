// Package duration holds devkit's one grammar for durations: the same
// grammar serves every YAML field (supervisor configs, rate-limit policies)
// and every duration flag of the binary, so `stop_timeout: 1.5` and
// `--timeout 1.5` mean the same.
package duration

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Hint is what an error about a duration tells the user to write.
const Hint = "use a Go duration such as 500ms, 10s or 1h30m, or a number of seconds such as 5 or 1.5"

// Parse reads a duration in devkit's one grammar: a Go duration
// ("500ms", "10s", "1h30m") or a plain non-negative number of seconds ("90",
// "1.5"). Negative, NaN, infinite and out-of-range values are refused.
func Parse(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if secs, err := strconv.ParseFloat(s, 64); err == nil && isPlainNumber(s) {
		if secs < 0 || math.IsNaN(secs) || secs*float64(time.Second) > math.MaxInt64 {
			return 0, fmt.Errorf("%q is not a duration: %s", s, Hint)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration: %s", s, Hint)
	}
	return d, nil
}

// isPlainNumber reports whether s is written with digits and at most one
// decimal point, so that ParseFloat's other spellings (inf, nan, 1e3, 0x10)
// are not taken for seconds.
func isPlainNumber(s string) bool {
	digits, dots := 0, 0
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '.':
			dots++
		case r == '+' && i == 0:
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}
