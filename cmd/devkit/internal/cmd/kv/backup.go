package kv

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// BackupOptions are the inputs of `devkit kv backup`.
type BackupOptions struct {
	ClientOptions
	Out  string
	JSON bool
}

// BackupResult is what `devkit kv backup --json` prints.
type BackupResult struct {
	Dir            string               `json:"dir"`
	Files          []tcpjson.BackupFile `json:"files"`
	Bytes          int64                `json:"bytes"`
	DurationSecond float64              `json:"duration_seconds"`
}

// NewCmdBackup builds `devkit kv backup`; runF, when not nil, receives the options instead of backupRun.
func NewCmdBackup(f *cmdutil.Factory, runF func(context.Context, *BackupOptions) error) *cobra.Command {
	opts := &BackupOptions{}
	cmd := &cobra.Command{
		Use:   "backup --out DIR",
		Short: "Copy a running server's store into a new data directory, online",
		Long: `Ask the server for a checkpoint — a consistent copy of every write acknowledged
before the request, taken while writers keep going — and stream it into DIR
(created; it must be empty). It is kept only after its checksum passed. DIR is a
data directory: devkit kv serve --data DIR opens it and devkit kv verify --data DIR
passes. To restore, stop the server and serve the backup directory (or copy it
where the data lives).`,
		Example: `  devkit kv backup --out /backups/kv-$(date +%F)
  devkit kv serve --data /backups/kv-2026-12-01 --http 127.0.0.1:4001 --tcp 127.0.0.1:5001`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.bindClient(f, cmd)
			if opts.Out == "" {
				return cmdutil.UsageErrorf("--out DIR is required")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return backupRun(cmd.Context(), opts)
		},
	}
	addClientFlags(cmd, &opts.ClientOptions)
	cmd.Flags().Lookup("timeout").DefValue = "0s"
	opts.Timeout = 0 // a backup takes as long as the store is large
	cmd.Flags().StringVar(&opts.Out, "out", "", "the new data `DIR` (created; must be empty)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	return cmd
}

func backupRun(ctx context.Context, opts *BackupOptions) error {
	start := time.Now()
	c, ctx, cancel, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	files, err := c.Backup(ctx, opts.Out)
	if err != nil {
		return fmt.Errorf("backup into %s: %w", opts.Out, err)
	}
	res := BackupResult{Dir: opts.Out, Files: files, DurationSecond: time.Since(start).Seconds()}
	for _, f := range files {
		res.Bytes += f.Size
	}
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, res)
	}
	_, err = fmt.Fprintf(opts.IO.Out, "backed up %d bytes in %d file(s) to %s in %.1fs\n", res.Bytes, len(files), opts.Out, res.DurationSecond)
	return err
}
