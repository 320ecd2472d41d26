package kvstore

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if dir := replayDirMade.Load(); dir != nil {
		_ = os.RemoveAll(*dir) // a temp dir the benchmarks share; leaving it is harmless
	}
	os.Exit(code)
}
