//go:build !linux && !darwin && !windows

package proc

import (
	"errors"
	"fmt"
	"runtime"
)

// Snapshot is not implemented on this system.
func Snapshot() (Table, error) {
	return nil, fmt.Errorf("proc: process table on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// HasEnv is not implemented on this system.
func HasEnv(pid int, kv string) bool { return false }

// DescendantsOf is not implemented on this system.
func DescendantsOf(root int) ([]Info, error) { return nil, errors.ErrUnsupported }
