package logfile

// Invariant: rotation renames or removes only files this supervisor
// created. The ledger remembers each log file it created by identity
// (device and inode where the OS has them), which a rename keeps: app.log
// rotated to app.log.1 is still ours, a database someone pointed log_file
// at never was.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/devkit-go/devkit/supervisor/internal/atomicfile"
)

// ledgerCap bounds the entries kept: far more than any backups setting.
const ledgerCap = 64

// ErrNotOurs reports a file the supervisor did not create and so never
// renames, truncates or removes.
var ErrNotOurs = errors.New("not created by devkit sup")

// Ledger is the list of files created for one log, stored at Path.
type Ledger struct{ Path string }

type ledgerEntry struct {
	Key  string `json:"key"`  // device:inode, or the path where the OS has no inodes
	Path string `json:"path"` // where it was created (informational)
}

func (l Ledger) read() ([]ledgerEntry, error) {
	if l.Path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(l.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var es []ledgerEntry
	if err := json.Unmarshal(data, &es); err != nil {
		return nil, fmt.Errorf("log ledger %s: %w", l.Path, err)
	}
	return es, nil
}

// Owns reports whether the file now at path was created by us.
func (l Ledger) Owns(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	es, err := l.read()
	if err != nil {
		return false, err
	}
	key := fileKey(path, fi)
	return slices.ContainsFunc(es, func(e ledgerEntry) bool { return e.Key == key }), nil
}

// add records the file now at path as ours.
func (l Ledger) add(path string) error {
	if l.Path == "" {
		return nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	es, err := l.read()
	if err != nil {
		es = nil // an unreadable ledger is replaced: it can only forget, never grant
	}
	es = append(es, ledgerEntry{Key: fileKey(path, fi), Path: path})
	if len(es) > ledgerCap {
		es = es[len(es)-ledgerCap:]
	}
	data, _ := json.Marshal(es) // strings only: cannot fail
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o700); err != nil {
		return err
	}
	// Replaced atomically and durably: a torn ledger would forget files we own.
	return atomicfile.Write(l.Path, data, 0o600)
}

// mustOwn fails with ErrNotOurs unless the file at path is ours; a missing
// file is fine (nothing to touch).
func (l Ledger) mustOwn(path string) error {
	ok, err := l.Owns(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w; it is left alone", path, ErrNotOurs)
	}
	return nil
}
