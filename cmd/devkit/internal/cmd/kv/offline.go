package kv

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// The offline tools (verify, repair) work on a data directory no server
// holds. verify never changes it (kvstore.Verify reads in place); repair
// (kvstore.Repair) copies each file it changes into a backup first.

// dataDirArg accepts the data directory as an argument as well as with
// --data (`devkit kv verify ./data`, as fsck takes its device), storing it
// in dir; both at once must agree.
func dataDirArg(dir *string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) > 1:
			return cmdutil.ArgsError(cmd, fmt.Errorf("takes one data directory, got %d arguments", len(args)))
		case len(args) == 0:
			return nil
		case cmd.Flags().Changed("data") && *dir != args[0]:
			return cmdutil.ArgsError(cmd, fmt.Errorf("two data directories: %q and --data %q", args[0], *dir))
		}
		*dir = args[0]
		return nil
	}
}

// lockFile is the engine's lock file.
const lockFile = "LOCK"

// progressBar draws "label [====    ] 42%" on w, at most every 100ms.
type progressBar struct {
	w     io.Writer
	label string
	total int64
	last  time.Time
}

func (b *progressBar) update(done int64) {
	if b == nil || b.total <= 0 || (time.Since(b.last) < 100*time.Millisecond && done < b.total) {
		return
	}
	b.last = time.Now()
	frac := min(float64(done)/float64(b.total), 1)
	fmt.Fprintf(b.w, "\r%s %s %3.0f%%\033[K", b.label, renderBar(frac), frac*100)
}

func (b *progressBar) clear() {
	if b != nil {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
