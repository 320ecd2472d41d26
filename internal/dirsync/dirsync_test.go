package dirsync

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestSync_ADirectorySyncsAndAMissingOneIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Sync(dir); err != nil {
		t.Fatalf("Sync(%s) = %v", dir, err)
	}
	if runtime.GOOS == "windows" {
		return // a no-op there: NTFS journals directory entries itself
	}
	if err := Sync(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Sync of a missing directory succeeded")
	}
}
