// Package jsonschema is devkit's one rule for JSON output: it writes
// durations (Seconds) and checks names (Check).
package jsonschema

// One rule serves the JSON of every --json output and admin endpoint of
// devkit's modules and binary.
//
// The rule: names are snake_case; a duration is a number of seconds in a
// field whose name ends in _seconds, never an integer of nanoseconds,
// milliseconds or microseconds (_ns, _ms, _us) and never a Go duration
// string ("1m30s").

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	snakeCase = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)
	// goDuration is a whole value in Go's duration syntax.
	goDuration = regexp.MustCompile(`^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)
	// unitWords end a name that holds a duration in a unit other than seconds.
	unitWords = []string{"ns", "us", "ms", "nanos", "micros", "millis", "nanoseconds", "microseconds", "milliseconds"}
	// durationWords end a name that holds a duration ("reset_after", "ttl").
	durationWords = []string{"after", "for", "ttl", "duration", "latency", "timeout", "interval", "backoff",
		"elapsed", "uptime", "took", "delay", "age", "wait", "period", "window"}
	// aggregateWords end a name that holds durations when another word of it
	// says so ("latency_sum", "latency_bounds").
	aggregateWords = []string{"sum", "bounds", "max", "min", "avg", "mean", "median", "p50", "p90", "p99", "p999"}
)

// Check returns every place in the JSON document doc that breaks the rule,
// each as "path: what is wrong"; none when it keeps it. It fails only on a
// document that is not JSON (one value, or one value per line).
func Check(doc []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var problems []string
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("jsonschema: %w", err)
		}
		walk("$", v, &problems)
	}
	return problems, nil
}

func walk(path string, v any, problems *[]string) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if p := nameProblem(k); p != "" {
				*problems = append(*problems, path+"."+k+": "+p)
			}
			walk(path+"."+k, v[k], problems)
		}
	case []any:
		for i, e := range v {
			walk(fmt.Sprintf("%s[%d]", path, i), e, problems)
		}
	case string:
		if goDuration.MatchString(v) {
			*problems = append(*problems, fmt.Sprintf("%s: %q is a Go duration string; give seconds as a number in a _seconds field", path, v))
		}
	}
}

// nameProblem says what is wrong with a field name, "" when nothing.
func nameProblem(name string) string {
	if !snakeCase.MatchString(name) {
		return "not snake_case"
	}
	words := strings.Split(name, "_")
	last := words[len(words)-1]
	switch {
	case last == "seconds":
		return ""
	case slices.Contains(unitWords, last):
		return "a duration in a unit other than seconds; name it _seconds and give seconds"
	case slices.Contains(durationWords, last) && !(len(words) > 1 && words[len(words)-2] == "with"):
		// "keys_with_ttl" counts keys; "ttl" is a duration.
		return "a duration whose name does not end in _seconds"
	case slices.Contains(aggregateWords, last) && slices.ContainsFunc(words[:len(words)-1], func(w string) bool { return slices.Contains(durationWords, w) }):
		return "durations whose name does not end in _seconds"
	}
	return ""
}

// Seconds is a duration as the rule writes it: float seconds, and -1 for a
// negative duration, which a field uses to say "never" (a key without
// expiry, a cost that exceeds the capacity). Types with time.Duration
// fields convert them to Seconds in their MarshalJSON.
type Seconds time.Duration

// MarshalJSON implements json.Marshaler.
func (s Seconds) MarshalJSON() ([]byte, error) {
	if s < 0 {
		return []byte("-1"), nil
	}
	return strconv.AppendFloat(nil, time.Duration(s).Seconds(), 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler: any negative number is -1
// ("never"); a number of seconds too large for a time.Duration is an error.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	switch {
	case f < 0:
		*s = -1
	case f*1e9 >= math.MaxInt64:
		return fmt.Errorf("%s seconds is out of range for a duration", b)
	default:
		*s = Seconds(math.Round(f * 1e9))
	}
	return nil
}
