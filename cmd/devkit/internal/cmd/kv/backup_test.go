package kv

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

func TestBackup_OnlineCopyOpensAndVerifies(t *testing.T) {
	addr, db := startServer(t)
	for i := range 2000 {
		db.Set(fmt.Appendf(nil, "before:%d", i), []byte("v"))
	}
	// Writers keep going during the backup.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var during atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := tcpjson.Dial(ctx, addr)
			if err != nil {
				return
			}
			defer c.Close()
			for i := 0; ctx.Err() == nil; i++ {
				if c.Set(ctx, fmt.Appendf(nil, "during:%d:%d", w, i), []byte("v")) == nil {
					during.Add(1)
				}
			}
		}()
	}
	out := filepath.Join(t.TempDir(), "backup")
	stdout, errOut, code := run(t, nil, "", "backup", "--addr", addr, "--out", out, "--json")
	atBackup := during.Load()
	stop()
	wg.Wait()
	if code != 0 {
		t.Fatalf("backup: %d %q", code, errOut)
	}
	var res BackupResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Files) == 0 || res.Bytes == 0 {
		t.Fatalf("backup --json = %q, %v", stdout, err)
	}
	if during.Load() <= atBackup && atBackup == 0 {
		t.Fatal("the writers made no progress: the test proves nothing about writers going on")
	}
	rep, err := kvstore.Verify(out, kvstore.Options{Logger: quietLogger()})
	if err != nil || rep.SnapshotsSkipped != 0 || rep.TornTailBytes != 0 || rep.Keys < 2000 {
		t.Fatalf("verify of the backup: %+v, %v", rep, err)
	}
	copyDB, err := kvstore.Open(out, kvstore.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer copyDB.Close()
	for i := range 2000 {
		if _, err := copyDB.Get(fmt.Appendf(nil, "before:%d", i)); err != nil {
			t.Fatalf("before:%d missing from the backup: %v", i, err)
		}
	}
	t.Logf("backup: %d keys, %d bytes; %d writes during the run", copyDB.Len(), res.Bytes, during.Load())
	// A second backup into the same directory is refused.
	if _, errOut, code := run(t, nil, "", "backup", "--addr", addr, "--out", out); code != 1 || errOut == "" {
		t.Fatalf("backup into a non-empty directory: %d %q", code, errOut)
	}
	if _, _, code := run(t, nil, "", "backup", "--addr", addr); code != 2 {
		t.Fatalf("backup without --out: exit %d, want 2", code)
	}
}
