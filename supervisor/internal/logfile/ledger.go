package logfile

// Invariant: rotation renames or removes only files this supervisor
// created. The ledger remembers each log file it created by identity
// (device and inode where the OS has them), which a rename keeps: app.log
// rotated to app.log.1 is still ours, a database someone pointed log_file
// at never was. The ledger never forgets a file that still exists under
// the log's name or a backup's: it drops only entries whose file is gone,
// so rotation can go on for ever (and a reused inode is not granted).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/devkit-go/devkit/supervisor/internal/atomicfile"
)

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

// add records the file now at path as ours; live is the log path whose
// family (live and live.N) the ledger covers. Entries of files no longer
// in that family are dropped, so the ledger stays as small as the family.
func (l Ledger) add(live, path string) error {
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
	key := fileKey(path, fi)
	es = slices.DeleteFunc(pruned(live, es), func(e ledgerEntry) bool { return e.Key == key })
	es = append(es, ledgerEntry{Key: key, Path: path})
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

// pruned keeps the entries whose file still exists as live or one of its
// numbered backups (live.1, live.2, ...). Listing the directory fails only
// when something else is wrong; then every entry is kept.
func pruned(live string, es []ledgerEntry) []ledgerEntry {
	dir, base := filepath.Split(live)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return es
	}
	present := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if name != base && !isBackupOf(name, base) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Lstat(p); err == nil {
			present[fileKey(p, fi)] = true
		}
	}
	return slices.DeleteFunc(es, func(e ledgerEntry) bool { return !present[e.Key] })
}

// isBackupOf reports whether name is base followed by "." and a number.
func isBackupOf(name, base string) bool {
	suffix, ok := strings.CutPrefix(name, base+".")
	if !ok || suffix == "" {
		return false
	}
	for _, c := range suffix {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
