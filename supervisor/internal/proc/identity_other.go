//go:build !linux && !darwin && !windows

package proc

import (
	"errors"
	"fmt"
	"runtime"
)

// Lookup is not implemented on this system; records can never be verified,
// so nothing is ever signalled.
func Lookup(pid int) (Info, error) {
	return Info{}, fmt.Errorf("proc: process identity on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// BootID is not implemented on this system.
func BootID() (string, error) { return "", nil }
