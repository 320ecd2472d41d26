// Package atomicfile writes files so that a reader sees either the old
// content or the new, never a torn mix: write a temporary file in the same
// directory, sync it, rename it over the target, then sync the directory so
// that the new name survives a crash too.
package atomicfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/devkit-go/devkit/internal/dirsync"
)

// Write replaces path with data atomically.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op after a successful rename; a stray temp file is harmless
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close() // the write error is the one to report
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close() // the write error is the one to report
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	if err := dirsync.Sync(dir); err != nil {
		return fmt.Errorf("sync the directory of %s: %w", path, err)
	}
	return nil
}

// WriteJSON replaces path with the JSON encoding of v atomically.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return Write(path, append(data, '\n'), 0o600)
}

// ReadJSON decodes the JSON file at path into v. A missing file is reported
// with an error satisfying errors.Is(err, fs.ErrNotExist).
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}
