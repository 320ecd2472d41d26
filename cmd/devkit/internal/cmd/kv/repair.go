package kv

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore"
)

// RepairOptions are the inputs of `devkit kv repair`.
type RepairOptions struct {
	IO      *cmdutil.IOStreams
	DataDir string
	JSON    bool
	// Now stamps the backup's name; time.Now when nil.
	Now func() time.Time
}

func newRepairCmd(ios *cmdutil.IOStreams) *cobra.Command {
	opts := &RepairOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "repair",
		Short: "Cut a damaged log at its first bad record, keeping a backup",
		Long: `Repair a data directory that no server holds. A clean store is left as it is.
A damaged one is first copied to DIR.bak-<time>, then the log is cut at the first bad
record: every record from there on is dropped, and the command says how many and
how many keys remain.`,
		Example: `  devkit kv repair --data ./data`,
		Args:    cmdutil.NoArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return runRepair(opts) },
	}
	cmd.Flags().StringVar(&opts.DataDir, "data", "./data", "data `DIR` to repair")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the outcome as JSON")
	return cmd
}

// RepairReport is what repair did; --json prints it.
type RepairReport struct {
	Dir      string `json:"dir"`
	Repaired bool   `json:"repaired"`
	Damage   string `json:"damage,omitempty"`
	Backup   string `json:"backup,omitempty"`
	// DroppedBytes is how much log the engine cut from the damage on.
	DroppedBytes int64 `json:"dropped_bytes"`
	// Cuts are the files the repair shortened or removed, from the backup's
	// sizes to the repaired ones: exactly what was dropped.
	Cuts          []FileCut `json:"cuts,omitempty"`
	TornTailBytes int64     `json:"torn_tail_bytes"`
	Keys          int64     `json:"keys"`
}

// FileCut is one file the repair shortened (ToBytes 0 and Removed: deleted).
type FileCut struct {
	File      string `json:"file"`
	FromBytes int64  `json:"from_bytes"`
	ToBytes   int64  `json:"to_bytes"`
	Removed   bool   `json:"removed,omitempty"`
}

// diffSizes lists the files of backup that are shorter or gone in dir.
func diffSizes(backup, dir string) ([]FileCut, error) {
	entries, err := os.ReadDir(backup)
	if err != nil {
		return nil, err
	}
	var cuts []FileCut
	for _, e := range entries {
		before, err := e.Info()
		if err != nil || !before.Mode().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		after, err := os.Stat(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			cuts = append(cuts, FileCut{File: path, FromBytes: before.Size(), Removed: true})
		case err != nil:
			return nil, err
		case after.Size() < before.Size():
			cuts = append(cuts, FileCut{File: path, FromBytes: before.Size(), ToBytes: after.Size()})
		}
	}
	return cuts, nil
}

func runRepair(opts *RepairOptions) error {
	if _, err := os.Stat(opts.DataDir); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	quiet := slog.New(slog.NewTextHandler(opts.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rep := RepairReport{Dir: opts.DataDir}

	// A store that opens strictly needs nothing beyond the torn-tail cut
	// every open makes.
	db, err := kvstore.Open(opts.DataDir, kvstore.Options{Sync: kvstore.SyncAlways, CompactionThreshold: -1, Logger: quiet})
	switch {
	case err == nil:
		st := db.Stats()
		rep.Keys, rep.TornTailBytes = st.Keys, st.TornTailBytes
		if err := db.Close(); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
		return reportRepair(opts, rep)
	case errors.Is(err, kvstore.ErrLocked):
		return fmt.Errorf("repair: a server holds %s; stop it first: %w", opts.DataDir, err)
	case !errors.Is(err, kvstore.ErrCorrupt):
		return fmt.Errorf("repair: %w", err)
	}
	rep.Damage = err.Error()
	var ce *kvstore.CorruptionError
	if errors.As(err, &ce) {
		rep.Damage = fmt.Sprintf("%s at offset %d: %v", ce.File, ce.Offset, ce.Err)
	}

	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	rep.Backup = filepath.Clean(opts.DataDir) + ".bak-" + now().UTC().Format("20060102T150405Z")
	if err := copyDir(opts.DataDir, rep.Backup, nil); err != nil {
		return fmt.Errorf("repair: back up to %s (nothing was changed): %w", rep.Backup, err)
	}
	db, err = kvstore.Open(opts.DataDir, kvstore.Options{Sync: kvstore.SyncAlways, CompactionThreshold: -1,
		Recovery: kvstore.RecoverTruncate, Logger: quiet})
	if err != nil {
		return fmt.Errorf("repair: %w (the backup is in %s)", err, rep.Backup)
	}
	st := db.Stats()
	rep.Repaired, rep.DroppedBytes, rep.TornTailBytes, rep.Keys = true, st.DroppedBytes, st.TornTailBytes, st.Keys
	if err := db.Close(); err != nil {
		return fmt.Errorf("repair: %w (the backup is in %s)", err, rep.Backup)
	}
	if rep.Cuts, err = diffSizes(rep.Backup, opts.DataDir); err != nil {
		return fmt.Errorf("repair: compare with the backup: %w", err)
	}
	return reportRepair(opts, rep)
}

func reportRepair(opts *RepairOptions, rep RepairReport) error {
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, rep)
	}
	w := opts.IO.Out
	if !rep.Repaired {
		fmt.Fprintf(w, "%s: clean, %d keys; nothing to repair\n", rep.Dir, rep.Keys)
		if rep.TornTailBytes > 0 {
			fmt.Fprintf(w, "  cut a torn tail of %d bytes (an unfinished write from a crash)\n", rep.TornTailBytes)
		}
		return nil
	}
	fmt.Fprintf(w, "%s: repaired\n", rep.Dir)
	fmt.Fprintf(w, "  damage   %s\n", rep.Damage)
	fmt.Fprintf(w, "  backup   %s\n", rep.Backup)
	for _, c := range rep.Cuts {
		if c.Removed {
			fmt.Fprintf(w, "  removed  %s (%d bytes)\n", c.File, c.FromBytes)
		} else {
			fmt.Fprintf(w, "  cut      %s from %d to %d bytes (%d bytes dropped)\n", c.File, c.FromBytes, c.ToBytes, c.FromBytes-c.ToBytes)
		}
	}
	fmt.Fprintf(w, "  dropped  %d bytes of log from the damage on\n", rep.DroppedBytes)
	fmt.Fprintf(w, "  kept     %d keys\n", rep.Keys)
	return nil
}
