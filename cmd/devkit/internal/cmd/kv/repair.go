package kv

import (
	"context"
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

// NewCmdRepair builds `devkit kv repair`; runF, when not nil, receives the options instead of repairRun.
func NewCmdRepair(f *cmdutil.Factory, runF func(context.Context, *RepairOptions) error) *cobra.Command {
	opts := &RepairOptions{IO: f.IOStreams, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "repair [DIR]",
		Short: "Repair what verify calls damaged, keeping a copy of every file it changes",
		Long: `Repair a data directory that no server holds: what "devkit kv verify" calls damaged
is repaired, or the command says exactly why not. A clean store is left as it is (a
torn tail is cut, as every open does). A damaged snapshot is moved aside
(renamed *.snap.damaged) and recovery uses the previous one and the log. A log damaged
mid-way is cut at its first bad record: every file the cut shortens or removes is
first copied to DIR.bak-<time>, every record from the damage on is dropped, and the
command says how many bytes and how many keys remain. When every snapshot is damaged
and the log no longer starts at the first record, nothing can rebuild the keys: the
command changes nothing, exits 1 and says to restore from a backup. DIR, or --data,
names the data directory.`,
		Example: `  devkit kv repair ./data
  devkit kv repair --data ./data --json`,
		Args: dataDirArg(&opts.DataDir),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return repairRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data", "./data", "data `DIR` to repair")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the outcome as JSON")
	return cmd
}

func repairRun(_ context.Context, opts *RepairOptions) error {
	if _, err := os.Stat(opts.DataDir); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	quiet := slog.New(slog.NewTextHandler(opts.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	backup := filepath.Clean(opts.DataDir) + ".bak-" + now().UTC().Format("20060102T150405Z")
	// The engine decides and acts (kvstore.Repair: what Verify calls damaged
	// it repairs, after copying each file it changes into backup); this
	// command only prints.
	res, err := kvstore.Repair(opts.DataDir, kvstore.RepairOptions{
		Engine: kvstore.Options{Logger: quiet}, BackupDir: backup})
	var ue *kvstore.UnrecoverableError
	switch {
	case errors.Is(err, kvstore.ErrLocked):
		return fmt.Errorf("repair: a server holds %s; stop it first: %w", opts.DataDir, err)
	case errors.As(err, &ue):
		return fmt.Errorf("repair: %s cannot be repaired, nothing was changed: %w", opts.DataDir, err)
	case err != nil:
		return fmt.Errorf("repair: %w", err)
	}
	// The engine sets Backup and Cuts only when it repaired something.
	return reportRepair(opts, res)
}

// reportRepair prints the engine's report; --json prints it as it is (the
// library owns its schema).
func reportRepair(opts *RepairOptions, rep kvstore.RepairReport) error {
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
	for _, m := range rep.MovedAside {
		fmt.Fprintf(w, "  moved    a damaged snapshot aside to %s\n", m)
	}
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
