// Package servertest holds what the server tests share: a real engine on a
// temporary directory and a fault-injecting wrapper around it.
package servertest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/internal/connserver"
)

// OpenDB opens an engine on a fresh temporary directory with SyncNone (the
// tests that are about durability use OpenDBWith) and closes it at cleanup.
func OpenDB(t testing.TB) *kvstore.DB {
	t.Helper()
	return OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncNone})
}

// OpenDBWith opens an engine with o (its Logger defaulting to Logger(t))
// on a fresh temporary directory and closes it at cleanup — after a
// server the test started later has stopped.
func OpenDBWith(t testing.TB, o kvstore.Options) *kvstore.DB {
	t.Helper()
	if o.Logger == nil {
		o.Logger = Logger(t)
	}
	db, err := kvstore.Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Logger discards logs unless the test runs with -v.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// Listen listens on a free 127.0.0.1 port.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// ConnServer is what the connection servers (resp, tcpjson) share.
type ConnServer interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
}

// Serve serves srv on a fresh port and shuts it down at cleanup; Serve
// ending with anything but the closed error fails the test.
func Serve(t testing.TB, srv ConnServer) string {
	t.Helper()
	ln := Listen(t)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // a drain that runs out of time shows in Serve's result below
		if err := <-done; !errors.Is(err, connserver.ErrServerClosed) {
			t.Errorf("Serve returned %v, want the closed error", err)
		}
	})
	return ln.Addr().String()
}

// CheckAcknowledged closes db, reopens dir and fails the test unless every
// key in acked holds itself as its value (what the durability tests write).
func CheckAcknowledged(t testing.TB, db *kvstore.DB, dir string, acked []string) {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := kvstore.Open(dir, kvstore.Options{Logger: Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, key := range acked {
		if v, err := db.Get([]byte(key)); err != nil || string(v) != key {
			t.Fatalf("acknowledged %q missing after restart: %q, %v", key, v, err)
		}
	}
}

// PanicKey is the key on which a PanickyStore panics.
const PanicKey = "panic!"

// PanickyStore is a real store that panics on any operation on PanicKey,
// to prove that no panic reaches a client.
type PanickyStore struct{ backend.Store }

func (p PanickyStore) check(key []byte) {
	if string(key) == PanicKey {
		panic("injected fault on " + PanicKey)
	}
}

func (p PanickyStore) Get(key []byte) ([]byte, error) { p.check(key); return p.Store.Get(key) }
func (p PanickyStore) Has(key []byte) (bool, error)   { p.check(key); return p.Store.Has(key) }
func (p PanickyStore) GetAppend(dst, key []byte) ([]byte, error) {
	p.check(key)
	return p.Store.GetAppend(dst, key)
}
func (p PanickyStore) Set(key, value []byte) error { p.check(key); return p.Store.Set(key, value) }
func (p PanickyStore) Delete(key []byte) error     { p.check(key); return p.Store.Delete(key) }
