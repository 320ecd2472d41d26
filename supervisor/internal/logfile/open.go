package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// OpenAppend opens the log at path for appending, creating it and its
// directory as needed; a file it creates is entered in the ledger.
func OpenAppend(path string, ledger Ledger) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		if err := ledger.add(path, path); err != nil {
			_ = f.Close() // the ledger error is the one to report
			return nil, fmt.Errorf("log ledger: %w", err)
		}
		return f, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("open log: %w", err)
	}
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// Adopt enters the file at path in the ledger: for a log that is ours by
// construction (under the supervisor's home) or empty.
func Adopt(path string, ledger Ledger) error { return ledger.add(path, path) }
