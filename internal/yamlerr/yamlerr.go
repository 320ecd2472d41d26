// Package yamlerr holds devkit's one rule for reading YAML files and
// reporting their mistakes.
package yamlerr

// One rule serves every YAML file of devkit (supervisor configs, rate-limit
// policies): its mistakes are one error type, file:line: field.path: message.
//
// Invariants: a file is parsed once (Parse); every error this file returns is
// an *Error (or Errors of them) carrying the file, the 1-based line of the
// mistake (0 only when no line can be told) and the dotted field path
// (processes.kv.stop_timeout, rules[2].limits[0].window; empty only when the
// mistake is about the whole document).

import (
	"strconv"
	"strings"
)

// Error is a mistake in a YAML file, located by file, line and field:
//
//	ops.yaml:12: processes.kv.stop_timeout: "ten" is not a duration
type Error struct {
	File  string
	Line  int    // 1-based; 0 when unknown
	Field string // dotted path such as processes.kv.stop_timeout or rules[0].limits[1].window
	Msg   string
	// Err, when set, is the cause Msg describes, for errors.Is.
	Err error
}

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Error renders file:line: field: message (line and field left out when unknown).
func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = e.File + ":" + strconv.Itoa(e.Line)
	}
	if e.Field == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Field + ": " + e.Msg
}

// Errors is every mistake found in one file, in the order found.
type Errors []*Error

// Error renders one mistake per line.
func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.As find the first *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Join appends a field or key to a dotted path.
func Join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// Index appends a sequence index to a path: field[i].
func Index(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }
