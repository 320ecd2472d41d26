// Package cmdutil holds what every devkit command shares: the IO streams a
// command writes to and the exit-code contract scripts rely on.
package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit codes. Scripts rely on these; see `devkit help exit-codes`.
const (
	ExitOK       = 0 // success
	ExitFailure  = 1 // the command failed
	ExitUsage    = 2 // the command line was wrong
	ExitNegative = 3 // a negative answer: not running, denied, not found
)

// IOStreams are the streams a command reads and writes. Tests pass buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// System returns the process's own streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// ExitError carries the exit code a failed command should end with.
type ExitError struct {
	Code int
	Err  error
	// Silent means the command already told the user; main prints nothing more.
	Silent bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError marks err as a mistake on the command line (exit 2).
func UsageError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// UsageErrorf formats a usage error (exit 2).
func UsageErrorf(format string, a ...any) error { return UsageError(fmt.Errorf(format, a...)) }

// Negative marks err as a negative answer (exit 3), such as "not found".
func Negative(err error) error { return &ExitError{Code: ExitNegative, Err: err} }

// SilentExit ends the command with code after it has already reported why.
func SilentExit(code int) error { return &ExitError{Code: code, Silent: true} }

// ExitCode maps an error returned by a command to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailure
}
