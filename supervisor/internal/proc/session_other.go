//go:build !linux && !darwin

package proc

// SessionMembers is only implemented on Linux and macOS; elsewhere the supervisor
// relies on the process group (Unix) or tree termination (Windows).
func SessionMembers(sid int) ([]Info, error) { return nil, nil }
