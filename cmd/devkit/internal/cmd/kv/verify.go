package kv

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore"
)

// VerifyOptions are the inputs of `devkit kv verify`.
type VerifyOptions struct {
	IO      *cmdutil.IOStreams
	DataDir string
	JSON    bool
	// Progress forces the progress bar on or off; nil: only on a terminal.
	Progress *bool
}

func newVerifyCmd(ios *cmdutil.IOStreams) *cobra.Command {
	opts := &VerifyOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check a data directory for corruption (exit 3 when it finds some)",
		Long: `Check every snapshot and log record of a data directory against its checksum,
without changing the directory: the check runs on a copy. Exit 0 when the store
is clean, 3 when it finds corruption (naming the file and offset), 1 when it could
not check. A torn tail (the trace of a crash mid-write, cut at the next open) is
reported but is not corruption. A progress bar shows on a terminal.`,
		Example: `  devkit kv verify --data ./data
  devkit kv verify --data ./data --json | jq .clean`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runVerify(opts) },
	}
	cmd.Flags().StringVar(&opts.DataDir, "data", "./data", "data `DIR` to check")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

// VerifyReport is what verify found; --json prints it.
type VerifyReport struct {
	Dir              string `json:"dir"`
	Clean            bool   `json:"clean"`
	Keys             int64  `json:"keys"`
	Records          uint64 `json:"records_replayed"`
	TornTailBytes    int64  `json:"torn_tail_bytes"`
	SnapshotsSkipped int    `json:"damaged_snapshots"`
	CorruptFile      string `json:"corrupt_file,omitempty"`
	CorruptOffset    int64  `json:"corrupt_offset,omitempty"`
	Problem          string `json:"problem,omitempty"`
}

func runVerify(opts *VerifyOptions) error {
	if _, err := os.Stat(opts.DataDir); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	tmp, err := os.MkdirTemp("", "devkit-kv-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	copyTo := filepath.Join(tmp, "data")

	var bar *progressBar
	show := isTerminal(opts.IO.ErrOut)
	if opts.Progress != nil {
		show = *opts.Progress
	}
	if show {
		size, err := dirSize(opts.DataDir)
		if err != nil {
			return err
		}
		bar = &progressBar{w: opts.IO.ErrOut, label: "reading", total: size}
	}
	err = copyDir(opts.DataDir, copyTo, bar.update)
	bar.clear()
	if err != nil {
		return fmt.Errorf("verify: copy the data directory: %w", err)
	}

	rep := VerifyReport{Dir: opts.DataDir}
	db, err := kvstore.Open(copyTo, kvstore.Options{Sync: kvstore.SyncNone, CompactionThreshold: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var ce *kvstore.CorruptionError
	switch {
	case errors.As(err, &ce):
		rep.CorruptFile = filepath.Join(opts.DataDir, relTo(copyTo, ce.File))
		rep.CorruptOffset = ce.Offset
		rep.Problem = fmt.Sprintf("corrupt data in %s at offset %d: %v", rep.CorruptFile, ce.Offset, ce.Err)
	case errors.Is(err, kvstore.ErrCorrupt):
		rep.Problem = err.Error()
	case err != nil:
		return fmt.Errorf("verify: %w", err)
	default:
		st := db.Stats()
		db.Close()
		rep.Keys, rep.Records, rep.TornTailBytes, rep.SnapshotsSkipped = st.Keys, st.ReplayedRecords, st.TornTailBytes, st.SnapshotsSkipped
		if st.SnapshotsSkipped > 0 {
			rep.Problem = fmt.Sprintf("%d damaged snapshot(s) skipped; the log still held what they covered", st.SnapshotsSkipped)
		}
	}
	rep.Clean = rep.Problem == ""
	if opts.JSON {
		if err := cmdutil.WriteJSON(opts.IO.Out, rep); err != nil {
			return err
		}
	} else {
		writeVerifyReport(opts.IO.Out, rep)
	}
	if !rep.Clean {
		if opts.JSON {
			return cmdutil.SilentExit(cmdutil.ExitNegative)
		}
		return cmdutil.Negative(errors.New(rep.Problem))
	}
	return nil
}

func writeVerifyReport(w io.Writer, rep VerifyReport) {
	if !rep.Clean {
		fmt.Fprintf(w, "%s: CORRUPT\n", rep.Dir)
		if rep.CorruptFile != "" {
			fmt.Fprintf(w, "  file    %s\n  offset  %d\n", rep.CorruptFile, rep.CorruptOffset)
		}
		fmt.Fprintln(w, "  repair with: devkit kv repair --data "+rep.Dir)
		return
	}
	fmt.Fprintf(w, "%s: clean, %d keys, %d log records replayed\n", rep.Dir, rep.Keys, rep.Records)
	if rep.TornTailBytes > 0 {
		fmt.Fprintf(w, "  note: a torn tail of %d bytes (an unfinished write from a crash) will be cut at the next open\n", rep.TornTailBytes)
	}
}

// relTo is path relative to base, or path's base name if it is not under base.
func relTo(base, path string) string {
	if rel, err := filepath.Rel(base, path); err == nil && !filepath.IsAbs(rel) && rel != ".." && !startsWithDotDot(rel) {
		return rel
	}
	return filepath.Base(path)
}

func startsWithDotDot(rel string) bool {
	return len(rel) >= 3 && rel[:2] == ".." && os.IsPathSeparator(rel[2])
}
