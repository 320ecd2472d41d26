//go:build unix

// Unix only: it runs devkit kv serve as a real process (serve_process_test.go).

package kv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A backup carries the FUNCTION libraries with the keys: a server started
// on the backup directory answers FCALL of a library loaded before the
// backup, reading the keys the backup copied.
func TestBackup_CarriesTheFunctionLibraries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	live := startServe(t, "--data", filepath.Join(t.TempDir(), "live"))
	c := redis.NewClient(&redis.Options{Addr: live.addrs["resp"], MaxRetries: -1})
	defer c.Close()
	const lib = "#!lua name=counters\nredis.register_function('bump', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)"
	if err := c.FunctionLoad(ctx, lib).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.FCall(ctx, "bump", []string{"hits"}, 41).Int64(); err != nil || n != 41 {
		t.Fatalf("FCALL bump = %d, %v", n, err)
	}
	out := filepath.Join(t.TempDir(), "backup")
	if _, errOut, code := run(t, nil, "", "backup", "--addr", live.addrs["tcp"], "--out", out); code != 0 {
		t.Fatalf("backup: %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(out, "functions.json")); err != nil {
		t.Fatalf("the backup has no functions.json: %v", err)
	}
	if _, errOut, code := run(t, nil, "", "verify", "--data", out); code != 0 {
		t.Fatalf("verify of the backup: %d %s", code, errOut)
	}
	// verify checks the libraries too: a damaged copy is named.
	damaged := filepath.Join(t.TempDir(), "damaged")
	if _, errOut, code := run(t, nil, "", "backup", "--addr", live.addrs["tcp"], "--out", damaged); code != 0 {
		t.Fatalf("backup: %d %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(damaged, "functions.json"), []byte(`{"libraries": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, _, code := run(t, nil, "", "verify", "--data", damaged); code != 3 || !strings.Contains(stdout, "functions.json") {
		t.Fatalf("verify of a backup with a cut functions.json: exit %d, %q; want 3 naming the file", code, stdout)
	}
	restored := startServe(t, "--data", out)
	rc := redis.NewClient(&redis.Options{Addr: restored.addrs["resp"], MaxRetries: -1})
	defer rc.Close()
	if n, err := rc.FCall(ctx, "bump", []string{"hits"}, 1).Int64(); err != nil || n != 42 {
		t.Fatalf("FCALL bump on the server of the backup = %d, %v; want 42", n, err)
	}
}
