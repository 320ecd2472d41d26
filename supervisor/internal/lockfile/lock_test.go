package lockfile

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestLock_ExcludesUntilReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := Acquire(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := TryAcquire(path); ok || err != nil {
		t.Fatalf("TryAcquire while held: ok=%v err=%v", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while held: %v", err)
	}
	l.Release()
	l2, ok, err := TryAcquire(path)
	if !ok || err != nil {
		t.Fatalf("TryAcquire after release: ok=%v err=%v", ok, err)
	}
	l2.Release()
}
