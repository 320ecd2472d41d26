package supervisor

import (
	"path/filepath"
	"testing"
)

func TestDefaultHome_OpsHomeThenDevkitHome(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OPS_HOME", "")
	t.Setenv("DEVKIT_HOME", dir)
	if h, _ := DefaultHome(); h != filepath.Join(dir, "sup") {
		t.Fatalf("with DEVKIT_HOME: %q", h)
	}
	t.Setenv("OPS_HOME", filepath.Join(dir, "ops"))
	if h, _ := DefaultHome(); h != filepath.Join(dir, "ops") {
		t.Fatalf("with OPS_HOME: %q", h)
	}
}
