package kv

import (
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil/cmdtest"
)

// TestProgressLine_DrawsWhenForcedAndClearsAtStop: the bar shows only where
// asked (a buffer is no terminal), redraws in place and is cleared at stop.
func TestProgressLine_DrawsWhenForcedAndClearsAtStop(t *testing.T) {
	var off cmdtest.LockedBuffer
	startProgressLine(&off, nil, func(time.Duration) string { return "x" })()
	if off.String() != "" {
		t.Fatalf("drew on a non-terminal: %q", off.String())
	}
	var on cmdtest.LockedBuffer
	force := true
	stop := startProgressLine(&on, &force, func(time.Duration) string { return renderBar(0.5) + " half" })
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(on.String(), "half") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	stop() // idempotent
	out := on.String()
	want := "\r[" + strings.Repeat("=", 15) + strings.Repeat(" ", 15) + "] half\033[K"
	if !strings.Contains(out, want) || !strings.HasSuffix(out, "\r\033[K") {
		t.Fatalf("progress output %q, want %q redrawn in place and cleared at the end", out, want)
	}
}
