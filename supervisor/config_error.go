package supervisor

import "github.com/devkit-go/devkit/supervisor/internal/yamlerr"

// ConfigError is a mistake in the YAML, located by file, line and field:
//
//	ops.yaml:12: processes.kv.stop_timeout: "ten" is not a duration
//
// Syntax errors carry the line of the mistake and the field it was in. It is
// the same type as the rate-limit policy's error (a deliberate copy, see
// internal/yamlerr): File, Line (1-based, 0 when unknown), Field (dotted path
// such as processes.kv.stop_timeout) and Msg.
type ConfigError = yamlerr.Error
