package supervisor

import "github.com/devkit-go/devkit/internal/yamlerr"

// ConfigError is a mistake in the YAML, located by file, line and field:
//
//	ops.yaml:12: processes.kv.stop_timeout: "ten" is not a duration
//
// Syntax errors carry the line of the mistake and the field it was in. It is
// the rate-limit policy's error too: one type, from the shared internal
// module's yamlerr, with File, Line (1-based, 0 when unknown), Field (dotted
// path such as processes.kv.stop_timeout) and Msg.
type ConfigError = yamlerr.Error
