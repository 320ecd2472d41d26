package kv

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// startProgressLine redraws line(elapsed) on w every 200 ms while the work
// runs, only on a terminal (or when force says so), and returns the function
// that stops and clears it; calling that function more than once is fine.
func startProgressLine(w io.Writer, force *bool, line func(elapsed time.Duration) string) func() {
	if !showProgress(w, force) {
		return func() {}
	}
	stop := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
			}
			fmt.Fprintf(w, "\r%s\033[K", line(time.Since(start)))
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stop); <-finished }) }
}

// showProgress reports whether progress is drawn on w: as force says when
// it is set (--progress), else only on a terminal.
func showProgress(w io.Writer, force *bool) bool {
	if force != nil {
		return *force
	}
	return isTerminal(w)
}

// renderBar renders frac (0 to 1) as a bar 30 characters wide.
func renderBar(frac float64) string {
	const width = 30
	k := int(min(max(frac, 0), 1) * width)
	return "[" + strings.Repeat("=", k) + strings.Repeat(" ", width-k) + "]"
}
