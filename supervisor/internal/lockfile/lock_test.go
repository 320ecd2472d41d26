package lockfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLock_ExcludesUntilReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := Acquire(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := TryAcquire(path); ok || err != nil {
		t.Fatalf("TryAcquire while held: ok=%v err=%v", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var holders []int
	if _, err := Acquire(ctx, path, func(pid int) { holders = append(holders, pid) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while held: %v", err)
	}
	if len(holders) != 1 || holders[0] != os.Getpid() {
		t.Fatalf("onWait saw holders %v, want exactly [%d]", holders, os.Getpid())
	}
	l.Release()
	l2, ok, err := TryAcquire(path)
	if !ok || err != nil {
		t.Fatalf("TryAcquire after release: ok=%v err=%v", ok, err)
	}
	l2.Release()
}
