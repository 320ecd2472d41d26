package cmdutil

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDurationFlag_DefaultAndSet(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var d time.Duration
	DurationVar(fs, &d, "timeout", 5*time.Second, "")
	if d != 5*time.Second {
		t.Fatalf("default %v", d)
	}
	if err := fs.Parse([]string{"--timeout", "1.5"}); err != nil || d != 1500*time.Millisecond {
		t.Fatalf("--timeout 1.5: %v, %v", d, err)
	}
	if err := fs.Parse([]string{"--timeout", "soon"}); err == nil {
		t.Fatal("--timeout soon accepted")
	}
}
