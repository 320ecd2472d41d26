package kv

import (
	"fmt"
	"io"
	"time"
)

// The offline tools (verify, repair) work on a data directory no server
// holds. verify never changes it (kvstore.Verify reads in place); repair
// (kvstore.Repair) copies each file it changes into a backup first.

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
