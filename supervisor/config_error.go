package supervisor

import "fmt"

// ConfigError is a mistake in the YAML, located by file, line and field:
//
//	ops.yaml:12: processes.kv.stop_timeout: "ten" is not a duration
type ConfigError struct {
	File  string
	Line  int    // 1-based; 0 when unknown
	Field string // dotted path such as processes.kv.stop_timeout
	Msg   string
}

func (e *ConfigError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Field == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Field + ": " + e.Msg
}
