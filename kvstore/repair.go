package kvstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/devkit-go/devkit/kvstore/internal/dirlock"
	"github.com/devkit-go/devkit/kvstore/internal/vfs"
	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// Repair.
//
// Invariant: Repair changes only what Verify calls damaged, and it saves a
// copy of every file it is about to shorten or remove first. Damaged
// snapshots are moved aside (renamed *.snap.damaged), never deleted; a log
// damaged mid-way is cut at its first bad record, exactly as Open with
// RecoverTruncate does, because Repair is that open. What no repair can
// rebuild (every snapshot damaged and the log no longer starting at the
// first record) is an *UnrecoverableError, and nothing is changed.

// RepairOptions configure Repair.
type RepairOptions struct {
	// Engine configures the engine Repair opens the directory with; its
	// Recovery mode is ignored.
	Engine Options
	// BackupDir receives a copy of every file Repair changes, before it
	// changes it; DIR.bak-<UTC time> when empty. It must not exist.
	BackupDir string
}

// RepairReport is what Repair found and did.
type RepairReport struct {
	Dir string `json:"dir"`
	// Repaired is false when Verify found nothing damaged (a torn tail is
	// not damage: it is cut, as every open does).
	Repaired bool `json:"repaired"`
	// Damage is what Verify found, "" when nothing.
	Damage string `json:"damage,omitempty"`
	// Backup holds the originals of the files Repair changed.
	Backup string `json:"backup,omitempty"`
	// BackedUp are the files copied there.
	BackedUp []string `json:"backed_up,omitempty"`
	// Cuts are the backed-up files the repair shortened or removed, from
	// their backed-up sizes to the repaired ones: exactly what was dropped.
	Cuts []FileCut `json:"cuts,omitempty"`
	// MovedAside are the damaged snapshots renamed to *.damaged.
	MovedAside    []string `json:"moved_aside,omitempty"`
	DroppedBytes  int64    `json:"dropped_bytes"`
	TornTailBytes int64    `json:"torn_tail_bytes"`
	Keys          int64    `json:"keys"`
	// Recovery is the report of the repairing open.
	Recovery RecoveryReport `json:"recovery"`
}

// FileCut is one file Repair shortened (ToBytes 0 and Removed: deleted).
type FileCut struct {
	File      string `json:"file"`
	FromBytes int64  `json:"from_bytes"`
	ToBytes   int64  `json:"to_bytes"`
	Removed   bool   `json:"removed,omitempty"`
}

// Repair brings a damaged data directory that no process holds back to a
// state Open and Verify accept: what Verify calls damaged is repaired, or
// the error says exactly why not. It fails with ErrLocked while a server
// holds the directory.
func Repair(dir string, opts RepairOptions) (RepairReport, error) {
	rep := RepairReport{Dir: dir}
	o, err := opts.Engine.withDefaults()
	if err != nil {
		return rep, err
	}
	if fi, err := os.Stat(dir); err != nil {
		return rep, fmt.Errorf("kvstore: repair: %w", err)
	} else if !fi.IsDir() {
		return rep, fmt.Errorf("kvstore: repair: %s is not a directory", dir)
	}
	lock, err := dirlock.Acquire(dir)
	if err != nil {
		return rep, fmt.Errorf("kvstore: repair %s: %w", dir, err)
	}
	release := func() error { return lock.Release() }

	o.Recovery = RecoverStrict
	rc := newRecovery(dir, o, readOnlyActions{})
	verr := rc.run()
	found := rc.report
	var ce *CorruptionError
	var ue *UnrecoverableError
	switch {
	case errors.As(verr, &ue):
		_ = release()
		return rep, verr // nothing to do: the error says why and what instead
	case errors.As(verr, &ce):
		rep.Damage = fmt.Sprintf("%s at offset %d: %v", ce.File, ce.Offset, ce.Err)
	case verr != nil:
		_ = release()
		return rep, fmt.Errorf("kvstore: repair: %w", verr)
	case len(found.DamagedSnapshots) > 0:
		rep.Damage = fmt.Sprintf("%d damaged snapshot(s): %s: %s", len(found.DamagedSnapshots),
			found.DamagedSnapshots[0].Path, found.DamagedSnapshots[0].Err)
	}

	var sizes []int64 // of rep.BackedUp, as copied
	if rep.Damage != "" {
		rep.Backup = opts.BackupDir
		if rep.Backup == "" {
			rep.Backup = filepath.Clean(dir) + ".bak-" + o.now().UTC().Format("20060102T150405Z")
		}
		files, err := filesRepairChanges(o, dir, ce)
		if err == nil {
			sizes, err = backUp(o.fs, files, rep.Backup)
		}
		if err != nil {
			_ = release()
			return rep, fmt.Errorf("kvstore: repair: back up to %s (nothing was changed): %w", rep.Backup, err)
		}
		rep.BackedUp = files
		o.Recovery = RecoverTruncate
	}
	o.CompactionThreshold = -1
	o.ExpirySweepInterval = -1
	db, err := openLocked(dir, o, lock, diskActions{fs: o.fs, dir: dir, logger: o.Logger, quarantine: rep.Damage != ""})
	if err != nil {
		return rep, fmt.Errorf("kvstore: repair: %w (originals of the changed files are in %s)", err, rep.Backup)
	}
	rep.Recovery = db.Recovery()
	rep.Repaired = rep.Damage != ""
	rep.DroppedBytes, rep.TornTailBytes, rep.Keys = rep.Recovery.DroppedBytes, rep.Recovery.TornTailBytes, rep.Recovery.Keys
	if rep.Repaired {
		for _, d := range rep.Recovery.DamagedSnapshots {
			rep.MovedAside = append(rep.MovedAside, d.Path+damagedSuffix)
		}
	}
	if err := db.Close(); err != nil {
		return rep, fmt.Errorf("kvstore: repair: %w", err)
	}
	if rep.Cuts, err = cutsSince(rep.BackedUp, sizes); err != nil {
		return rep, fmt.Errorf("kvstore: repair: compare with the backup: %w", err)
	}
	return rep, nil
}

// cutsSince lists the files that are now shorter than, or gone since, the
// sizes they had when backed up.
func cutsSince(files []string, sizes []int64) ([]FileCut, error) {
	var cuts []FileCut
	for i, path := range files {
		after, err := os.Stat(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			cuts = append(cuts, FileCut{File: path, FromBytes: sizes[i], Removed: true})
		case err != nil:
			return nil, err
		case after.Size() < sizes[i]:
			cuts = append(cuts, FileCut{File: path, FromBytes: sizes[i], ToBytes: after.Size()})
		}
	}
	return cuts, nil
}

// filesRepairChanges lists the files a RecoverTruncate open may shorten or
// remove: the damaged segment and every segment after it. Damaged
// snapshots are renamed, not changed, so they need no copy.
func filesRepairChanges(o Options, dir string, ce *CorruptionError) ([]string, error) {
	if ce == nil {
		return nil, nil
	}
	segs, err := wal.ListSegments(o.fs, dir)
	if err != nil {
		return nil, err
	}
	var out []string
	from := false
	for _, s := range segs {
		from = from || s.Path == ce.File
		if from {
			out = append(out, s.Path)
		}
	}
	return out, nil
}

// backUp copies files into dir (created; it must not exist), durably, and
// returns the size each had.
func backUp(fs vfs.FS, files []string, dir string) ([]int64, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	sizes := make([]int64, len(files))
	for i, f := range files {
		n, err := copyFileSynced(f, filepath.Join(dir, filepath.Base(f)))
		if err != nil {
			return nil, err
		}
		sizes[i] = n
	}
	return sizes, fs.SyncDir(dir)
}

func copyFileSynced(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err != nil {
		out.Close()
		return 0, fmt.Errorf("copy %s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return 0, err
	}
	return n, out.Close()
}
