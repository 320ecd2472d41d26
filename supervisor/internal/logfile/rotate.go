// Package logfile keeps process logs bounded and readable: rotation by size
// (path -> path.1 -> ... -> path.N), tailing from the end without reading
// the whole file, and following across truncation and rotation.
package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// RotateIfOver rotates path when it is larger than maxSize bytes, keeping
// at most backups old files (path.1 is the newest). maxSize <= 0 disables
// rotation; backups == 0 truncates instead of keeping a copy. Every file
// it would rename, truncate or remove must be in the ledger; otherwise it
// fails with ErrNotOurs and touches nothing.
func RotateIfOver(path string, maxSize int64, backups int, ledger Ledger) (rotated bool, err error) {
	if maxSize <= 0 {
		return false, nil
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("rotate %s: %w", path, err)
	}
	if fi.Size() <= maxSize {
		return false, nil
	}
	if err := mustOwnAll(path, backups, ledger); err != nil {
		return false, err
	}
	if backups == 0 {
		return true, os.Truncate(path, 0)
	}
	if err := shift(path, backups); err != nil {
		return false, err
	}
	if err := os.Rename(path, path+".1"); err != nil {
		return false, fmt.Errorf("rotate %s: %w", path, err)
	}
	return true, nil
}
