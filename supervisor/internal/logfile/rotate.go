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
	if over, err := overSize(path, maxSize); !over || err != nil {
		return false, err
	}
	if truncated, err := makeRoom(path, backups, ledger); truncated || err != nil {
		return truncated, err
	}
	if err := os.Rename(path, path+".1"); err != nil {
		return false, fmt.Errorf("rotate %s: %w", path, err)
	}
	return true, nil
}

// overSize reports whether path exists and is larger than maxSize bytes
// (never when maxSize <= 0).
func overSize(path string, maxSize int64) (bool, error) {
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
	return fi.Size() > maxSize, nil
}

// makeRoom is what every rotation does before moving path's content: it
// checks that path and its backups are in the ledger, then shifts the
// backups up to free path.1 — or, with no backups, truncates path and
// reports that the rotation is already done.
func makeRoom(path string, backups int, ledger Ledger) (truncated bool, err error) {
	if err := mustOwnAll(path, backups, ledger); err != nil {
		return false, err
	}
	if backups == 0 {
		return true, os.Truncate(path, 0)
	}
	return false, shift(path, backups)
}

// mustOwnAll checks path and its backups against the ledger.
func mustOwnAll(path string, backups int, ledger Ledger) error {
	for i := 0; i <= backups; i++ {
		p := path
		if i > 0 {
			p = fmt.Sprintf("%s.%d", path, i)
		}
		if err := ledger.mustOwn(p); err != nil {
			return fmt.Errorf("rotate: %w", err)
		}
	}
	return nil
}

// shift drops path.backups and renames path.i to path.i+1.
func shift(path string, backups int) error {
	if err := os.Remove(fmt.Sprintf("%s.%d", path, backups)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate %s: %w", path, err)
	}
	for i := backups - 1; i >= 1; i-- {
		err := os.Rename(fmt.Sprintf("%s.%d", path, i), fmt.Sprintf("%s.%d", path, i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate %s: %w", path, err)
		}
	}
	return nil
}
