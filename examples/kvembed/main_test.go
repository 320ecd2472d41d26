package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKVEmbed_KilledChildLosesNoAcknowledgedWrite builds the program and runs
// it for real: the child is SIGKILLed and the parent verifies its writes.
func TestKVEmbed_KilledChildLosesNoAcknowledgedWrite(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kvembed")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	out, err := exec.Command(bin, "-dir", dir, "-kill-after", (150 * time.Millisecond).String()).CombinedOutput()
	if err != nil {
		t.Fatalf("kvembed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "nothing acknowledged was lost") || strings.Contains(string(out), "LOST") {
		t.Fatalf("unexpected output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatalf("the engine did not use %s: %v", dir, err)
	}
}
