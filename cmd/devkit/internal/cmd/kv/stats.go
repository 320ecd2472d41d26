package kv

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore"
)

// StatsOptions are the inputs of `devkit kv stats`.
type StatsOptions struct {
	ClientOptions
	JSON bool
}

// NewCmdStats builds `devkit kv stats`; runF, when not nil, receives the options instead of statsRun.
func NewCmdStats(f *cmdutil.Factory, runF func(context.Context, *StatsOptions) error) *cobra.Command {
	opts := &StatsOptions{}
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Print the server's engine counters",
		Example: `  devkit kv stats
  devkit kv stats --json | jq .keys`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.bindClient(f, cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return statsRun(cmd.Context(), opts)
		},
	}
	addClientFlags(cmd, &opts.ClientOptions)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print machine-readable JSON (the engine's Stats)")
	return cmd
}

func statsRun(ctx context.Context, opts *StatsOptions) error {
	c, ctx, cancel, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	st, err := c.Stats(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, st)
	}
	return writeStats(opts.IO, st)
}

// writeStats prints the counters a person looks at, aligned.
func writeStats(ios *cmdutil.IOStreams, st kvstore.Stats) error {
	tw := tabwriter.NewWriter(ios.Out, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("keys", st.Keys)
	row("data bytes", st.DataBytes)
	if st.MemoryOnly {
		row("persistence", "none: memory-only, nothing survives the server")
	} else {
		row("persistence", "log and snapshots")
		row("sync policy", st.SyncPolicy)
	}
	row("sets", st.Sets)
	row("deletes", st.Deletes)
	row("gets (hits/misses)", fmt.Sprintf("%d (%d/%d)", st.Gets, st.Hits, st.Misses))
	if st.MemoryOnly {
		return tw.Flush()
	}
	row("log bytes", st.LogBytes)
	row("log segments", st.LogSegments)
	row("fsyncs", st.Fsyncs)
	row("records per fsync", fmt.Sprintf("%.2f", st.RecordsPerFsync))
	row("compactions", fmt.Sprintf("%d (%d failed)", st.Compactions, st.CompactionFailures))
	if !st.LastSnapshot.IsZero() {
		row("last snapshot", st.LastSnapshot.Format(time.RFC3339))
	}
	row("replayed at open", fmt.Sprintf("%d records in %v", st.ReplayedRecords, st.ReplayDuration.Round(time.Millisecond)))
	if st.ReadOnly {
		row("READ-ONLY", st.ReadOnlyReason)
	}
	return tw.Flush()
}
