package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// VerifyOptions are the inputs of `devkit kv verify`.
type VerifyOptions struct {
	IO      *cmdutil.IOStreams
	DataDir string
	JSON    bool
	// Progress forces the progress bar on or off; nil: only on a terminal.
	Progress *bool
}

// NewCmdVerify builds `devkit kv verify`; runF, when not nil, receives the options instead of verifyRun.
func NewCmdVerify(f *cmdutil.Factory, runF func(context.Context, *VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "verify [DIR]",
		Short: "Check a data directory for corruption (exit 3 when it finds some)",
		Long: `Check every snapshot and log record of a data directory against its checksum,
without changing the directory (no lock, no cut, nothing removed: safe on a
store in use, where a torn tail may be a write in flight). Exit 0 when the store
is clean, 3 when it finds corruption (naming the file and offset), 1 when it could
not check. A torn tail (the trace of a crash mid-write, cut at the next open) is
reported but is not corruption. A progress bar shows on a terminal. DIR, or
--data, names the data directory.`,
		Example: `  devkit kv verify ./data
  devkit kv verify --data ./data --json | jq .clean`,
		Args: dataDirArg(&opts.DataDir),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return verifyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data", "./data", "data `DIR` to check")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

// VerifyReport is what verify found: the engine's report (kvstore.VerifyReport,
// in the engine's schema) and the verdict on it. --json prints both as one
// object.
type VerifyReport struct {
	kvstore.VerifyReport
	VerifyVerdict
}

// VerifyVerdict is what verify concludes from the engine's report.
type VerifyVerdict struct {
	Clean         bool   `json:"clean"`
	CorruptFile   string `json:"corrupt_file,omitempty"`
	CorruptOffset int64  `json:"corrupt_offset,omitempty"`
	Problem       string `json:"problem,omitempty"`
	// Unrepairable: repair cannot rebuild the store (restore a backup).
	Unrepairable bool `json:"unrepairable,omitempty"`
}

// MarshalJSON implements json.Marshaler: the report's members, then the verdict's.
func (r VerifyReport) MarshalJSON() ([]byte, error) {
	return cmdutil.JSONObject(r.VerifyReport, r.VerifyVerdict)
}

// UnmarshalJSON implements json.Unmarshaler, for scripts and tests in Go.
func (r *VerifyReport) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &r.VerifyReport); err != nil {
		return err
	}
	return json.Unmarshal(b, &r.VerifyVerdict)
}

func verifyRun(_ context.Context, opts *VerifyOptions) error {
	var bar *progressBar
	eo := kvstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if showProgress(opts.IO.ErrOut, opts.Progress) {
		bar = &progressBar{w: opts.IO.ErrOut, label: "reading"}
		eo.Progress = func(read, total int64) {
			bar.total = total
			bar.update(read)
		}
	}
	// kvstore.Verify reads the directory without changing it: no lock, no
	// cut, nothing removed, so it is safe on a store that is in use.
	found, err := kvstore.Verify(opts.DataDir, eo)
	bar.clear()
	rep := VerifyReport{VerifyReport: found}
	rep.Dir = opts.DataDir
	var ce *kvstore.CorruptionError
	var ue *kvstore.UnrecoverableError
	switch {
	case errors.As(err, &ce):
		rep.CorruptFile, rep.CorruptOffset = ce.File, ce.Offset
		rep.Problem = fmt.Sprintf("corrupt data in %s at offset %d: %v", ce.File, ce.Offset, ce.Err)
	case errors.As(err, &ue):
		rep.Problem, rep.Unrepairable = err.Error(), true
	case errors.Is(err, kvstore.ErrCorrupt):
		rep.Problem = err.Error()
	case err != nil:
		return fmt.Errorf("verify: %w", err)
	case found.SnapshotsSkipped > 0:
		d := found.DamagedSnapshots[0]
		rep.CorruptFile = d.Path
		rep.Problem = fmt.Sprintf("%d damaged snapshot(s), first %s: %s; the log still holds what they covered",
			found.SnapshotsSkipped, d.Path, d.Err)
	}
	if rep.Problem == "" {
		// The FUNCTION libraries beside the engine's files (a backup
		// carries them) must load as devkit kv serve loads them.
		fpath := filepath.Join(opts.DataDir, resp.FunctionsFileName)
		if ferr := resp.CheckFunctionsFile(fpath); ferr != nil {
			rep.CorruptFile, rep.Unrepairable = fpath, true
			rep.Problem = fmt.Sprintf("the function libraries do not load (%v): devkit kv serve would refuse FUNCTION changes; fix or remove the file", ferr)
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
		if rep.Unrepairable {
			fmt.Fprintln(w, "  "+rep.Problem)
			return
		}
		fmt.Fprintln(w, "  problem "+rep.Problem)
		fmt.Fprintln(w, "  repair with: "+kvstore.RepairCommand(rep.Dir))
		return
	}
	fmt.Fprintf(w, "%s: clean, %d keys, %d log records replayed\n", rep.Dir, rep.Keys, rep.Records)
	if rep.TornTailBytes > 0 {
		fmt.Fprintf(w, "  note: a torn tail of %d bytes (an unfinished write from a crash) will be cut at the next open\n", rep.TornTailBytes)
	}
}
