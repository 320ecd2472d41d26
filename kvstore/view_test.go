package kvstore

import (
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/vfs"
)

// syncGateFS holds the first fsync of a log segment once armed, until
// released: a write in flight, stuck on the disk.
type syncGateFS struct {
	vfs.OS
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *syncGateFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := g.OS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".wal") {
		return f, err
	}
	return &syncGatedFile{File: f, g: g}, nil
}

type syncGatedFile struct {
	vfs.File
	g *syncGateFS
}

func (f *syncGatedFile) Sync() error {
	if f.g.armed.Load() {
		f.g.once.Do(func() {
			close(f.g.entered)
			<-f.g.release
		})
	}
	return f.File.Sync()
}

func TestView_ACollectionReadIsNotHeldBehindAnFsyncAndSeesOnlyAcknowledgedWrites(t *testing.T) {
	g := &syncGateFS{entered: make(chan struct{}), release: make(chan struct{})}
	db := openT(t, t.TempDir(), Options{Sync: SyncAlways, fs: g})
	defer db.Close()
	if _, err := db.HSet(b("h"), b("f"), b("v1")); err != nil {
		t.Fatal(err)
	}
	g.armed.Store(true)
	written := make(chan error, 1)
	go func() {
		_, err := db.HSet(b("h"), b("f"), b("v2"))
		written <- err
	}()
	<-g.entered // HSET h f v2 is logged, its fsync stuck

	read := make(chan error, 1)
	go func() {
		v, err := db.HGet(b("h"), b("f"))
		if err == nil && string(v) != "v1" {
			err = errors.New("HGET answered " + string(v) + ", want the acknowledged v1")
		}
		if err == nil {
			_, err = db.LRange(b("h"), 0, -1)
			if !errors.Is(err, ErrWrongType) {
				err = errors.New("LRANGE of a hash: want WRONGTYPE, got " + errString(err))
			} else {
				err = nil
			}
		}
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		close(g.release)
		t.Fatal("HGET waited for another client's fsync")
	}
	if err := db.View(func(tx *Tx) error { _, err := tx.HSet(b("h"), b("f"), b("v3")); return err }); !errors.Is(err, ErrReadOnlyView) {
		t.Fatalf("a write in View: %v; want ErrReadOnlyView", err)
	}
	close(g.release)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if v, err := db.HGet(b("h"), b("f")); err != nil || string(v) != "v2" {
		t.Fatalf("after the write is acknowledged: %q, %v; want v2", v, err)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
