package resp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// CheckFunctionsFile accepts what FUNCTION LOAD persisted and a missing
// file, and names what is wrong with a damaged one.
func TestCheckFunctionsFile_AcceptsPersistedLibrariesAndNamesADamagedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, resp.FunctionsFileName)
	if err := resp.CheckFunctionsFile(path); err != nil {
		t.Fatalf("a missing file: %v, want nil", err)
	}
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{FunctionsFile: path}))
	if err := c.FunctionLoad(t.Context(), "#!lua name=l\nredis.register_function('f', function() return 1 end)").Err(); err != nil {
		t.Fatal(err)
	}
	if err := resp.CheckFunctionsFile(path); err != nil {
		t.Fatalf("the persisted libraries: %v, want nil", err)
	}
	if err := os.WriteFile(path, []byte(`{"libraries": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := resp.CheckFunctionsFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a cut file: %v, want an error naming %s", err, path)
	}
}
