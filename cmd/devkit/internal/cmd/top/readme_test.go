package top

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadme_ShowsTheTopCapture keeps the README's picture of devkit top
// the one its tmux test made (UPDATE_SCREENSHOTS=1 writes docs/top.txt).
func TestReadme_ShowsTheTopCapture(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..", "..")
	capture, err := os.ReadFile(filepath.Join(root, "docs", "top.txt"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```\n"+string(capture)+"```\n") {
		t.Fatal("README.md does not show docs/top.txt in a code block: paste it after a test run with UPDATE_SCREENSHOTS=1")
	}
}
