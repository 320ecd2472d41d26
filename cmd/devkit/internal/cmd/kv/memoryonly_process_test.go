//go:build unix

package kv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore"
)

// filesUnder lists what dir holds, at any depth.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestServeProcess_MemoryOnlyWritesNoFileAndRefusesSave(t *testing.T) {
	wd, tmp := t.TempDir(), t.TempDir()
	p := startServeIn(t, wd, []string{"TMPDIR=" + tmp}, "--data", "")
	if !strings.Contains(p.logs(), "memory-only engine") {
		t.Fatalf("the server does not say it is memory-only:\n%s", p.logs())
	}
	c := redis.NewClient(&redis.Options{Addr: p.addrs["resp"], MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"SET", "s", "v"}, {"SET", "ttl", "x", "PX", 1}, {"HSET", "h", "f", "1"}, {"RPUSH", "l", "a", "b"},
		{"SADD", "set", "m"}, {"ZADD", "z", 1, "m"}, {"INCR", "n"},
		{"FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)"},
		{"EVAL", "return redis.call('SET', KEYS[1], 'lua')", 1, "fromlua"},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	httpPut(t, p.addrs["http"], "overhttp", "1")
	for _, cmd := range []string{"SAVE", "BGSAVE"} {
		err := c.Do(ctx, cmd).Err()
		if err == nil || !strings.Contains(err.Error(), cmd+" is not available: this server is memory-only") {
			t.Fatalf("%s: %v, want the memory-only error", cmd, err)
		}
	}
	info, err := c.Info(ctx, "persistence").Result()
	if err != nil || !strings.Contains(info, "memory_only:1") || !strings.Contains(info, "aof_enabled:0") {
		t.Fatalf("INFO persistence (%v):\n%s", err, info)
	}
	if cfg, err := c.ConfigGet(ctx, "appendonly").Result(); err != nil || cfg["appendonly"] != "no" {
		t.Fatalf("CONFIG GET appendonly = %v, %v", cfg, err)
	}
	env := map[string]string{AddrEnv: p.addrs["tcp"]}
	if out, e, code := run(t, env, "", "stats"); code != 0 || !strings.Contains(out, "memory-only") {
		t.Fatalf("stats: exit %d %q %q", code, out, e)
	}
	// A copy asked for still comes out, where the client says.
	out := filepath.Join(t.TempDir(), "backup")
	if _, e, code := run(t, env, "", "backup", "--out", out); code != 0 {
		t.Fatalf("backup: exit %d %q", code, e)
	}
	db, err := kvstore.Open(out, kvstore.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("s")); err != nil || string(v) != "v" {
		t.Fatalf("the backup holds s = %q, %v", v, err)
	}
	db.Close()

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0:\n%s", code, p.logs())
	}
	for _, dir := range []string{wd, tmp} {
		if found := filesUnder(t, dir); len(found) > 0 {
			t.Fatalf("the memory-only server wrote %v", found)
		}
	}
	// Nothing survives the process.
	p = startServeIn(t, wd, []string{"TMPDIR=" + tmp}, "--data", "")
	c2 := redis.NewClient(&redis.Options{Addr: p.addrs["resp"], MaxRetries: -1})
	defer c2.Close()
	if err := c2.Get(ctx, "s").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET s after a restart: %v, want nil", err)
	}
}

func TestServe_MemoryOnlyRefusesTheLogsFlags(t *testing.T) {
	for _, flag := range []string{"--sync=always", "--sync-interval=2s", "--segment-size=1048576", "--compaction-threshold=-1"} {
		_, errOut, code := run(t, nil, "", "serve", "--data", "", flag)
		if code != cmdutil.ExitUsage || !strings.Contains(errOut, "needs a data directory") {
			t.Errorf("serve --data \"\" %s: exit %d %q, want 2 and the reason", flag, code, errOut)
		}
	}
}
